//! The getting-started page, taken at its word: its snippets build and run in a new crate
//! whose dependencies are exactly the block the page shows. Only `aleph-tools` is pointed at
//! this repository, since the page names the published version.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The fenced blocks of `page` whose info string starts with `lang`, in order.
fn blocks<'a>(page: &'a str, lang: &str) -> Vec<&'a str> {
    let mut found = Vec::new();
    let mut rest = page;
    while let Some(start) = rest.find("```") {
        let after = &rest[start + 3..];
        let info_end = after.find('\n').unwrap_or(after.len());
        let info = &after[..info_end];
        let body_start = info_end + 1;
        let Some(body_len) = after[body_start..].find("```") else {
            break;
        };
        let body = &after[body_start..body_start + body_len];
        if info == lang || info.starts_with(&format!("{lang},")) {
            found.push(body);
        }
        rest = &after[body_start + body_len + 3..];
    }
    found
}

/// A Rust snippet as rustdoc compiles it: lines hidden with `# ` shown.
fn as_compiled(snippet: &str) -> String {
    snippet
        .lines()
        .map(|line| match line.trim_start().strip_prefix('#') {
            Some(rest) if rest.is_empty() || rest.starts_with(' ') => {
                rest.strip_prefix(' ').unwrap_or(rest).to_owned()
            }
            _ => line.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

#[test]
fn getting_started_builds_with_exactly_its_dependency_block() {
    let page = include_str!("../../../book/src/getting-started.md");
    let [dependencies] = blocks(page, "toml")[..] else {
        panic!("the page shows one TOML block");
    };
    assert!(
        dependencies.starts_with("[dependencies]\n"),
        "{dependencies}"
    );
    let published = "aleph-tools = \"0.1\"";
    assert!(dependencies.contains(published), "{dependencies}");
    let local = format!(
        "aleph-tools = {{ path = {:?} }}",
        workspace().join("aleph-tools")
    );
    let snippets = blocks(page, "rust");
    assert!(snippets.len() >= 3, "{} snippets", snippets.len());

    let dir = tempfile::tempdir().unwrap();
    let manifest = format!(
        "[package]\nname = \"getting-started\"\nversion = \"0.0.0\"\nedition = \"2024\"\npublish = false\n\n[workspace]\n\n{}",
        dependencies.replace(published, &local)
    );
    std::fs::write(dir.path().join("Cargo.toml"), manifest).unwrap();
    // The repository's lock file, so the new crate builds with the versions tested here.
    std::fs::copy(
        workspace().join("Cargo.lock"),
        dir.path().join("Cargo.lock"),
    )
    .unwrap();
    let bins = dir.path().join("src/bin");
    std::fs::create_dir_all(&bins).unwrap();
    for (i, snippet) in snippets.iter().enumerate() {
        std::fs::write(bins.join(format!("snippet_{i}.rs")), as_compiled(snippet)).unwrap();
    }

    let target = workspace().join("target/tests/getting-started");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let build = Command::new(&cargo)
        .args(["build", "--quiet", "--bins"])
        .current_dir(dir.path())
        .env("CARGO_TARGET_DIR", &target)
        .output()
        .unwrap();
    assert!(
        build.status.success(),
        "the getting-started snippets do not build with the page's dependencies:\n{}",
        String::from_utf8_lossy(&build.stderr)
    );
    for i in 0..snippets.len() {
        let run = Command::new(target.join(format!("debug/snippet_{i}")))
            .output()
            .unwrap();
        assert!(
            run.status.success(),
            "snippet {i} failed:\n{}",
            String::from_utf8_lossy(&run.stderr)
        );
    }
}
