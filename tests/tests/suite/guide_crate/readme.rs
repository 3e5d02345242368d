//! The README's quick start followed by a newcomer: its shell lines run as written (`cargo
//! new`, `cargo add`), with `aleph-tools` taken from this repository by `cargo add --path`
//! and the repository's lock file copied in; its first Rust snippet as `src/main.rs`; then
//! the binary, served over stdio, is used by the official Python MCP client.

use std::path::{Path, PathBuf};

use aleph_tools_tests::{assert_client_passed, interop_peers};

use super::fresh::{assert_success, cargo, copy_lock_file, target_dir, workspace};
use super::page::{blocks, rust_treatment, unhidden};

const README: &str = include_str!("../../../../README.md");

/// The number of `ok:` lines `readme_client.py` prints when every check passes.
const CHECKS: usize = 3;

/// The shell block right before the README's first Rust snippet, and that snippet.
fn quick_start() -> (String, String) {
    let found = blocks(README);
    let first_rust = found
        .iter()
        .position(|block| rust_treatment(block.info).is_some())
        .expect("the README has a Rust snippet");
    assert!(
        first_rust > 0,
        "the README's first snippet has no commands before it"
    );
    let commands = &found[first_rust - 1];
    assert_eq!(
        commands.info, "sh",
        "the block before the first snippet gives the commands"
    );
    let snippet = &found[first_rust].body;
    assert_eq!(
        &unhidden(snippet),
        snippet,
        "the quick start hides no lines: a newcomer copies what is shown"
    );
    (commands.body.clone(), snippet.clone())
}

/// `cargo add` arguments (after `add`) with `aleph-tools` taken from this repository: it is
/// added with `--path` and its features, the other crates by the command as written.
fn localized(arguments: &[&str]) -> Vec<Vec<String>> {
    let mut crates = Vec::new();
    let mut features = Vec::new();
    let mut flags = Vec::new();
    let mut words = arguments.iter();
    while let Some(&word) = words.next() {
        if word == "--features" || word == "-F" {
            features.extend(
                words
                    .next()
                    .map(|list| list.split(','))
                    .into_iter()
                    .flatten(),
            );
        } else if let Some(list) = word.strip_prefix("--features=") {
            features.extend(list.split(','));
        } else if word.starts_with('-') {
            flags.push(word.to_owned());
        } else {
            crates.push(word);
        }
    }
    let owned = |words: &[&str]| words.iter().map(|&w| w.to_owned()).collect::<Vec<_>>();
    if !crates.contains(&"aleph-tools") {
        return vec![[vec!["add".to_owned()], owned(arguments)].concat()];
    }
    let others: Vec<&str> = crates
        .iter()
        .copied()
        .filter(|c| *c != "aleph-tools")
        .collect();
    let (ours, theirs): (Vec<&str>, Vec<&str>) = if others.is_empty() {
        (features, Vec::new())
    } else {
        let (ours, theirs): (Vec<&str>, Vec<&str>) = features
            .into_iter()
            .partition(|feature| feature.starts_with("aleph-tools/"));
        let ours = ours
            .into_iter()
            .map(|feature| feature.trim_start_matches("aleph-tools/"))
            .collect();
        (ours, theirs)
    };
    let path = workspace().join("aleph-tools").display().to_string();
    let mut commands = vec![[owned(&["add", "--path", &path]), flags.clone()].concat()];
    if !ours.is_empty() {
        commands[0].extend(["--features".to_owned(), ours.join(",")]);
    }
    if !others.is_empty() {
        let mut command = [owned(&["add"]), owned(&others), flags].concat();
        if !theirs.is_empty() {
            command.extend(["--features".to_owned(), theirs.join(",")]);
        }
        commands.push(command);
    }
    commands
}

/// Runs the README's shell lines in `root` as a newcomer would, and returns the directory
/// they end in.
fn run_commands(root: &Path, commands: &str) -> PathBuf {
    let mut dir = root.to_path_buf();
    for line in commands.lines().filter(|line| !line.trim().is_empty()) {
        for command in line.split("&&") {
            let words: Vec<&str> = command.split_whitespace().collect();
            match words[..] {
                ["cd", to] => dir = dir.join(to),
                ["cargo", "add", ref arguments @ ..] => {
                    for command in localized(arguments) {
                        let words: Vec<&str> = command.iter().map(String::as_str).collect();
                        assert_success(
                            &cargo(&dir, &words),
                            &format!("`cargo {}`", command.join(" ")),
                        );
                    }
                }
                ["cargo", ref arguments @ ..] => {
                    assert_success(&cargo(&dir, arguments), &format!("`{}`", command.trim()));
                }
                _ => panic!(
                    "the quick start runs `{}`, which this test cannot follow",
                    command.trim()
                ),
            }
            // Once there is a crate, the versions tested here go with it.
            if dir.join("Cargo.toml").exists() {
                copy_lock_file(&dir);
            }
        }
    }
    dir
}

#[test]
fn cargo_add_takes_aleph_tools_from_this_repository() {
    let path = workspace().join("aleph-tools").display().to_string();
    assert_eq!(
        localized(&["aleph-tools", "--features", "mcp"]),
        [["add", "--path", &path, "--features", "mcp"]]
    );
    assert_eq!(
        localized(&[
            "aleph-tools",
            "serde_json",
            "tokio",
            "--features",
            "tokio/macros,aleph-tools/mcp"
        ]),
        [
            vec!["add", "--path", &path, "--features", "mcp"],
            vec!["add", "serde_json", "tokio", "--features", "tokio/macros"],
        ]
    );
    assert_eq!(
        localized(&["tokio", "-F", "macros"]),
        [["add", "tokio", "-F", "macros"]]
    );
}

#[test]
fn the_readme_quick_start_serves_a_tool_to_the_python_mcp_client() {
    let (commands, snippet) = quick_start();
    let root = tempfile::tempdir().expect("a temporary directory");
    let started = std::time::Instant::now();
    let dir = run_commands(root.path(), &commands);
    std::fs::write(dir.join("src/main.rs"), &snippet).expect("write src/main.rs");
    assert_success(
        &cargo(&dir, &["build", "--quiet"]),
        "building the quick start",
    );
    eprintln!(
        "the README's quick start: made and built in {:.1?}",
        started.elapsed()
    );

    let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).expect("read Cargo.toml");
    let name = manifest
        .lines()
        .find_map(|line| line.strip_prefix("name = "))
        .expect("the package's name")
        .trim_matches('"');
    let binary = target_dir().join("debug").join(name);
    let peers = interop_peers();
    let output = std::process::Command::new(peers.join(".venv/bin/python"))
        .arg(peers.join("readme_client.py"))
        .arg("--")
        .arg(&binary)
        .output()
        .expect("run the Python client");
    assert_client_passed(&output, "Python", CHECKS);
}
