//! A Markdown page read as rustdoc reads it: its fenced blocks, and each Rust block turned
//! into the program rustdoc compiles from it.

/// A fenced block of a page.
pub struct Block<'a> {
    /// The info string after the opening fence (`rust,no_run`, `toml`).
    pub info: &'a str,
    /// The lines between the fences, each ending in a newline.
    pub body: String,
    /// The line of the opening fence, from 1.
    pub line: usize,
}

/// The fenced blocks of `page`, in order. A fence is a line whose first non-blank characters
/// are three backticks.
pub fn blocks(page: &str) -> Vec<Block<'_>> {
    let mut found = Vec::new();
    let mut open: Option<Block<'_>> = None;
    for (index, line) in page.lines().enumerate() {
        let trimmed = line.trim_start();
        match open.as_mut() {
            None => {
                if let Some(info) = trimmed.strip_prefix("```") {
                    open = Some(Block {
                        info: info.trim(),
                        body: String::new(),
                        line: index + 1,
                    });
                }
            }
            Some(block) => {
                if trimmed.starts_with("```") && trimmed.trim_start_matches('`').trim().is_empty() {
                    found.extend(open.take());
                } else {
                    block.body.push_str(line);
                    block.body.push('\n');
                }
            }
        }
    }
    found
}

/// What rustdoc does with a Rust block, from its info string.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Treatment {
    /// Compiled and run.
    Run,
    /// `no_run`: compiled only.
    CompileOnly,
    /// `ignore`: neither.
    Ignore,
    /// `compile_fail`: must fail to compile, for a reason the block shows.
    CompileFail,
}

impl Treatment {
    /// Whether the block is compiled as a program that must build.
    pub fn compiled(self) -> bool {
        matches!(self, Self::Run | Self::CompileOnly)
    }
}

/// What rustdoc does with a block, or `None` when it is not Rust. As in rustdoc, an info
/// string with no language, or with `rust`, is Rust; `standalone_crate` and the other
/// attributes change nothing here, where every snippet is a crate of its own.
pub fn rust_treatment(info: &str) -> Option<Treatment> {
    let mut treatment = Treatment::Run;
    let mut rust = false;
    let mut other = false;
    for token in info
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|token| !token.is_empty())
    {
        match token {
            "rust" => rust = true,
            "ignore" => treatment = Treatment::Ignore,
            "compile_fail" => treatment = Treatment::CompileFail,
            "no_run" if treatment == Treatment::Run => treatment = Treatment::CompileOnly,
            "no_run" | "should_panic" | "test_harness" | "standalone_crate" => {}
            token if token.starts_with("edition") || token.starts_with("ignore-") => {}
            _ => other = true,
        }
    }
    (rust || !other).then_some(treatment)
}

/// A Rust snippet as rustdoc shows it to the compiler: lines hidden with `# ` (or a lone `#`)
/// included without their mark, `##` read as `#`.
pub fn unhidden(snippet: &str) -> String {
    let mut code = String::new();
    for line in snippet.lines() {
        let trimmed = line.trim();
        let shown = if let Some(rest) = trimmed.strip_prefix("##") {
            format!("#{rest}")
        } else if let Some(rest) = trimmed.strip_prefix("# ") {
            rest.to_owned()
        } else if trimmed == "#" {
            String::new()
        } else {
            line.to_owned()
        };
        code.push_str(&shown);
        code.push('\n');
    }
    code
}

/// The program rustdoc compiles for a snippet: `#![allow(unused)]` and the snippet's own
/// crate attributes first; then the code, wrapped in `fn main` when it has none (in a
/// function returning `Result` when it ends in `(())`, as a snippet that uses `?` does).
pub fn program(snippet: &str) -> String {
    let code = unhidden(snippet);
    let mut attributes = String::from("#![allow(unused)]\n");
    let mut rest = String::new();
    for line in code.lines() {
        if line.trim_start().starts_with("#![") {
            attributes.push_str(line);
            attributes.push('\n');
        } else {
            rest.push_str(line);
            rest.push('\n');
        }
    }
    if has_main(&rest) {
        format!("{attributes}{rest}")
    } else if rest.trim_end().ends_with("(())") {
        format!(
            "{attributes}fn main() {{ fn _inner() -> Result<(), impl core::fmt::Debug> {{\n{rest}\n}} _inner().unwrap() }}\n"
        )
    } else {
        format!("{attributes}fn main() {{\n{rest}\n}}\n")
    }
}

fn has_main(code: &str) -> bool {
    code.lines().any(|line| {
        let line = line.trim_start();
        ["fn main(", "async fn main(", "pub fn main("]
            .iter()
            .any(|start| line.starts_with(start))
    })
}

#[test]
fn rust_blocks_are_told_apart_as_rustdoc_does() {
    assert_eq!(rust_treatment(""), Some(Treatment::Run));
    assert_eq!(rust_treatment("rust"), Some(Treatment::Run));
    assert_eq!(rust_treatment("no_run"), Some(Treatment::CompileOnly));
    assert_eq!(
        rust_treatment("rust,standalone_crate"),
        Some(Treatment::Run)
    );
    assert_eq!(rust_treatment("rust,ignore"), Some(Treatment::Ignore));
    assert_eq!(
        rust_treatment("rust,compile_fail"),
        Some(Treatment::CompileFail)
    );
    assert_eq!(rust_treatment("toml"), None);
    assert_eq!(rust_treatment("sh"), None);
    assert_eq!(rust_treatment("text"), None);
}

#[test]
fn snippets_are_wrapped_as_rustdoc_wraps_them() {
    assert_eq!(
        program("let x = 1;\n# let y = 2;\n"),
        "#![allow(unused)]\nfn main() {\nlet x = 1;\nlet y = 2;\n\n}\n"
    );
    assert!(program("let x: u8 = \"1\".parse()?;\n# Ok::<(), std::num::ParseIntError>(())\n")
        .starts_with("#![allow(unused)]\nfn main() { fn _inner() -> Result<(), impl core::fmt::Debug> {\n"));
    assert_eq!(
        program("# fn main() {}\n"),
        "#![allow(unused)]\nfn main() {}\n"
    );
    assert_eq!(
        unhidden("## Title\n#[derive(Debug)]\n#\n"),
        "# Title\n#[derive(Debug)]\n\n"
    );
    let page = "text\n```rust,no_run\nfn main() {}\n```\n\n  ```toml\n  [x]\n  ```\n";
    let found = blocks(page);
    assert_eq!(found.len(), 2);
    assert_eq!((found[0].info, found[0].line), ("rust,no_run", 2));
    assert_eq!(found[1].body, "  [x]\n");
}
