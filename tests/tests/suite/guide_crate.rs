//! The guide taken at its word. Each chapter starts with the `[dependencies]` block its
//! examples need, and a reader copies that block into a crate of their own: these tests
//! compile every chapter's Rust snippets in a new crate whose dependencies are exactly that
//! block (only `aleph-tools` is pointed at this repository, since the pages name the
//! published version), and build and run the getting-started page's. The README's quick
//! start is followed to the letter in [`readme`]. Code a page copies from the examples is
//! compared with its file.
//!
//! Cost: the chapters are only checked (`cargo check`), and every new crate builds in one
//! target directory (`target/tests/guide`), so each dependency is checked once per set of
//! features.

use std::time::Instant;

use fresh::{FreshCrate, assert_success, cargo, target_dir, workspace};
use page::{Block, Treatment, blocks, program, rust_treatment};

mod fresh;
mod page;
mod readme;

/// A page of the guide.
struct Chapter {
    file: &'static str,
    text: &'static str,
}

macro_rules! chapters {
    ($($file:literal),* $(,)?) => {
        &[$(Chapter { file: $file, text: include_str!(concat!("../../../book/src/", $file)) }),*]
    };
}

/// The chapters of `book/src/SUMMARY.md`, in its order (a test keeps the two lists equal).
const CHAPTERS: &[Chapter] = chapters![
    "introduction.md",
    "getting-started.md",
    "writing-tools.md",
    "server.md",
    "repair.md",
    "arguments.md",
    "filters.md",
    "context.md",
    "middleware.md",
    "providers.md",
    "agent.md",
    "builtin.md",
    "code-mode.md",
    "tool-search.md",
    "browser.md",
    "plugins.md",
    "mcp.md",
    "clients.md",
    "production.md",
    "command.md",
    "sandbox.md",
    "threat-model.md",
];

/// Hidden lines that reach into this repository's tests crate, and what a new crate compiles
/// in their place. The doctests need the helper, which builds the example plugins before a
/// snippet loads them; a reader's program needs only a path, and every line the reader sees
/// is compiled all the same.
const TEST_HELPERS: &[(&str, &str)] = &[(
    "aleph_tools_tests::example_plugins()",
    "std::path::PathBuf::from(\"examples/plugins\")",
)];

/// A Rust snippet of a page, as the program rustdoc compiles from it.
struct Snippet {
    /// The line of its opening fence.
    line: usize,
    program: String,
    /// Whether rustdoc runs it (it is not `no_run`).
    run: bool,
}

impl Chapter {
    fn name(&self) -> &'static str {
        self.file.trim_end_matches(".md")
    }

    /// The snippets rustdoc compiles: not `ignore` (plugin code built for WebAssembly) nor
    /// `compile_fail` (which shows a mistake, and fails whatever the dependencies).
    fn snippets(&self) -> Vec<Snippet> {
        blocks(self.text)
            .into_iter()
            .filter_map(|block| {
                let treatment = rust_treatment(block.info)?;
                treatment.compiled().then_some((block, treatment))
            })
            .map(|(block, treatment)| {
                let mut program = program(&block.body);
                for (helper, stand_in) in TEST_HELPERS {
                    program = program.replace(helper, stand_in);
                }
                assert!(
                    !program.contains("aleph_tools_tests"),
                    "{}:{}: a snippet uses the tests crate in a way no stand-in covers",
                    self.file,
                    block.line
                );
                Snippet {
                    line: block.line,
                    program,
                    run: treatment == Treatment::Run,
                }
            })
            .collect()
    }

    /// The page's `[dependencies]` block.
    fn dependencies(&self) -> String {
        let found: Vec<Block<'_>> = blocks(self.text)
            .into_iter()
            .filter(|block| block.info == "toml" && block.body.starts_with("[dependencies]\n"))
            .collect();
        let [block] = &found[..] else {
            panic!(
                "{} should show one `[dependencies]` block, not {}",
                self.file,
                found.len()
            );
        };
        block.body.clone()
    }

    /// A new crate with the page's dependency block and each snippet as a binary named for
    /// the line it starts on (`line_93`), as compiler errors name it.
    fn fresh_crate(&self) -> (FreshCrate, Vec<Snippet>) {
        let snippets = self.snippets();
        let krate = FreshCrate::new(&format!("guide-{}", self.name()), &self.dependencies());
        for snippet in &snippets {
            krate.add_bin(&format!("line_{}", snippet.line), &snippet.program);
        }
        (krate, snippets)
    }
}

#[test]
fn the_chapters_are_those_of_the_summary() {
    let summary = include_str!("../../../book/src/SUMMARY.md");
    let linked: Vec<&str> = summary
        .split("](")
        .skip(1)
        .filter_map(|rest| rest.split(')').next())
        .collect();
    let listed: Vec<&str> = CHAPTERS.iter().map(|chapter| chapter.file).collect();
    assert_eq!(linked, listed);
}

#[test]
fn getting_started_builds_and_runs_with_exactly_its_dependency_block() {
    let chapter = CHAPTERS
        .iter()
        .find(|chapter| chapter.file == "getting-started.md")
        .expect("the getting-started page");
    let toml: Vec<Block<'_>> = blocks(chapter.text)
        .into_iter()
        .filter(|block| block.info == "toml")
        .collect();
    assert_eq!(toml.len(), 1, "the page shows one TOML block");
    let (krate, snippets) = chapter.fresh_crate();
    assert!(snippets.len() >= 3, "{} snippets", snippets.len());

    let started = Instant::now();
    let build = cargo(krate.path(), &["build", "--quiet", "--bins"]);
    assert_success(
        &build,
        "building the getting-started snippets with the page's block",
    );
    eprintln!("getting-started: built in {:.1?}", started.elapsed());
    for snippet in snippets.iter().filter(|snippet| snippet.run) {
        let run =
            std::process::Command::new(target_dir().join(format!("debug/line_{}", snippet.line)))
                .output()
                .expect("run a snippet");
        assert_success(&run, &format!("the snippet at line {}", snippet.line));
    }
}

#[test]
fn every_chapter_compiles_with_its_own_dependency_block() {
    let mut failures = Vec::new();
    let all = Instant::now();
    for chapter in CHAPTERS {
        // Built and run by the test above.
        if chapter.file == "getting-started.md" {
            continue;
        }
        if chapter.snippets().is_empty() {
            assert!(
                !blocks(chapter.text)
                    .iter()
                    .any(|block| rust_treatment(block.info).is_some()),
                "{} has Rust blocks, all left out",
                chapter.file
            );
            continue;
        }
        let (krate, snippets) = chapter.fresh_crate();
        let started = Instant::now();
        let check = cargo(krate.path(), &["check", "--quiet", "--bins"]);
        eprintln!(
            "{}: {} snippets checked in {:.1?}",
            chapter.file,
            snippets.len(),
            started.elapsed()
        );
        if !check.status.success() {
            failures.push(format!(
                "{} (binaries named for the line each snippet starts on):\n{}",
                chapter.file,
                String::from_utf8_lossy(&check.stderr)
            ));
        }
    }
    eprintln!("every chapter checked in {:.1?}", all.elapsed());
    assert!(
        failures.is_empty(),
        "chapters whose snippets do not compile with their own dependency block:\n\n{}",
        failures.join("\n\n")
    );
}

#[test]
fn getting_started_shows_every_feature_with_its_cargo_add_line() {
    let manifest = include_str!("../../../aleph-tools/Cargo.toml");
    let page = CHAPTERS
        .iter()
        .find(|chapter| chapter.file == "getting-started.md")
        .expect("the getting-started page")
        .text;
    let features = manifest
        .split("\n[features]\n")
        .nth(1)
        .expect("a [features] table")
        .split("\n[")
        .next()
        .unwrap_or_default();
    let names: Vec<&str> = features
        .lines()
        .filter(|line| !line.starts_with('#') && line.contains(" = "))
        .filter_map(|line| line.split(" = ").next())
        .filter(|name| *name != "default")
        .collect();
    assert!(names.contains(&"full"), "{names:?}");
    for name in names {
        assert!(
            page.contains(&format!("| `{name}` |")),
            "`{name}` is not in the table"
        );
        assert!(
            page.contains(&format!("`cargo add aleph-tools --features {name}`")),
            "`{name}` has no cargo add line"
        );
    }
}

/// Every block a page copies from a file says so in the comment before it, `<!-- inlined
/// from PATH -->` (the whole file), `PATH:N:` (from line N) or `PATH:ANCHOR+ANCHOR` (the
/// lines between mdBook's `ANCHOR: name` and `ANCHOR_END: name`, pieces joined by a blank
/// line); the block must be that text.
#[test]
fn code_copied_from_the_examples_is_the_same_as_its_file() {
    let readme = Chapter {
        file: "../../README.md",
        text: include_str!("../../../README.md"),
    };
    let mut copies = 0;
    for chapter in CHAPTERS.iter().chain([&readme]) {
        let found = blocks(chapter.text);
        for (index, line) in chapter.text.lines().enumerate() {
            let Some(source) = line
                .strip_prefix("<!-- inlined from ")
                .and_then(|rest| rest.split([';', ' ']).next())
            else {
                continue;
            };
            let block = found
                .iter()
                .find(|block| block.line == index + 2)
                .unwrap_or_else(|| {
                    panic!("{}:{}: no block after the comment", chapter.file, index + 1)
                });
            assert_eq!(
                block.body.trim_end(),
                copied(source),
                "{}:{} differs from {source}",
                chapter.file,
                block.line
            );
            copies += 1;
        }
        assert!(
            !chapter.text.contains("{{#include"),
            "{}: an include shows as its own text where the page is read on GitHub; copy the code in",
            chapter.file
        );
    }
    assert!(copies >= 11, "{copies} copies found");
}

/// The text `source` (`PATH`, `PATH:N:` or `PATH:ANCHOR+ANCHOR`) names, without its last
/// newline.
fn copied(source: &str) -> String {
    let (path, selection) = source.split_once(':').unwrap_or((source, ""));
    let text = std::fs::read_to_string(workspace().join(path))
        .unwrap_or_else(|e| panic!("cannot read {path}: {e}"));
    let lines: Vec<&str> = text.lines().collect();
    if selection.is_empty() {
        return text.trim_end().to_owned();
    }
    if let Some(first) = selection.strip_suffix(':') {
        let first: usize = first.parse().expect("a line number");
        return lines[first - 1..].join("\n").trim_end().to_owned();
    }
    let pieces: Vec<String> = selection
        .split('+')
        .map(|anchor| {
            let start = format!("ANCHOR: {anchor}");
            let end = format!("ANCHOR_END: {anchor}");
            let from = lines
                .iter()
                .position(|line| line.trim_end().ends_with(&start))
                .unwrap_or_else(|| panic!("{path} has no anchor `{anchor}`"));
            let to = lines
                .iter()
                .position(|line| line.trim_end().ends_with(&end))
                .unwrap_or_else(|| panic!("{path} has no end of anchor `{anchor}`"));
            lines[from + 1..to]
                .iter()
                .filter(|line| !line.contains("ANCHOR:") && !line.contains("ANCHOR_END:"))
                .copied()
                .collect::<Vec<_>>()
                .join("\n")
        })
        .collect();
    pieces.join("\n\n")
}
