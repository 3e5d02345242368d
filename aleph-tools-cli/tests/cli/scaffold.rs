//! `aleph-tools plugins new`: mistakes refused with their exit code and a message saying what
//! to fix, and each kind of plugin taken at its word: the Node.js one with the SDK packed by
//! `npm pack` and installed from that tarball (no registry), the WebAssembly one built for
//! `wasm32-unknown-unknown`; each then loaded by the command and its tool called.

#![allow(missing_docs)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use aleph_tools_tests::{example_plugins, plugin_sdk};
use serde_json::Value;

use crate::output::{succeeded, text};

/// The command, run in `dir` with a home of its own and no configuration.
fn aleph_tools(dir: &Path, home: &Path, args: &[&str]) -> Output {
    std::fs::create_dir_all(home).unwrap();
    Command::new(env!("CARGO_BIN_EXE_aleph-tools"))
        .args(args)
        .current_dir(dir)
        .env("HOME", home)
        .env_remove("ALEPH_TOOLS_CONFIG")
        .env_remove("RUST_LOG")
        .output()
        .unwrap()
}

/// The standard error of a run that failed with `code`, printing nothing on standard output
/// and one `error: ` line on standard error.
#[track_caller]
fn failed(output: &Output, code: i32) -> String {
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(code), "{stderr}");
    assert_eq!(text(&output.stdout), "", "{stderr}");
    let errors = stderr
        .lines()
        .filter(|line| line.starts_with("error: "))
        .count();
    assert_eq!(errors, 1, "{stderr}");
    stderr
}

/// Runs `program` with `args` in `dir`, and panics with its output when it fails.
#[track_caller]
fn run(program: &str, args: &[&str], dir: &Path) -> String {
    let output = Command::new(program)
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|error| panic!("cannot run {program}: {error}"));
    succeeded(&output)
}

/// The entries of `dir`, sorted, as names.
fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Writes a plugin with `plugins new` into `root/plugins/<id>`, and checks the report.
fn scaffold(root: &Path, id: &str, kind: &str, files: &[&str]) -> PathBuf {
    let plugins = root.join("plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    let report = succeeded(&aleph_tools(
        &plugins,
        &root.join("home"),
        &["plugins", "new", id, "--kind", kind, "--json"],
    ));
    let report: Value = serde_json::from_str(&report).unwrap();
    let dir = plugins.join(id).canonicalize().unwrap();
    assert_eq!(report["id"], id);
    assert_eq!(report["kind"], kind);
    assert_eq!(report["dir"], dir.to_str().unwrap());
    assert_eq!(report["files"], serde_json::json!(files));
    assert_eq!(report["next"][0], format!("cd {id}"));
    for file in files {
        assert!(dir.join(file).is_file(), "{file}");
    }
    dir
}

/// Checks the plugin in `dir` and calls its tool, as the report's last steps say: from the
/// plugin's directory, `plugins check .`, then `--plugins .. tools call greet …`.
fn load_and_call(dir: &Path, home: &Path, kind: &str) {
    let id = dir.file_name().unwrap().to_str().unwrap();
    let checked = succeeded(&aleph_tools(dir, home, &["plugins", "check", "."]));
    assert!(
        checked.contains(&format!("ok: `{id}` 0.1.0 ({kind}): 1 tool: greet")),
        "{checked}"
    );
    let call = |args: &str| {
        aleph_tools(
            dir,
            home,
            &["--plugins", "..", "tools", "call", "greet", args],
        )
    };
    let greeting = succeeded(&call(r#"{"name": "Ada", "shout": true}"#));
    let greeting: Value = serde_json::from_str(&greeting).unwrap();
    assert_eq!(greeting, serde_json::json!({ "greeting": "HELLO, ADA!" }));
    let empty = failed(&call(r#"{"name": " "}"#), 1);
    assert!(
        empty.contains("error: `name` is empty; give the name of someone to greet"),
        "{empty}"
    );
    // Said once, without the runtime's own log of it.
    assert!(!empty.contains("backtrace"), "{empty}");
    let wrong = failed(&call(r#"{"who": "Ada"}"#), 1);
    assert!(
        wrong.contains("error: invalid arguments for `greet`: `/name`"),
        "{wrong}"
    );
}

#[test]
fn mistakes_are_refused_with_what_to_fix() {
    let root = tempfile::tempdir().unwrap();
    let work = root.path().join("work");
    let home = root.path().join("home");
    std::fs::create_dir_all(work.join("taken")).unwrap();
    std::fs::write(work.join("taken/notes.txt"), "mine").unwrap();
    std::fs::write(work.join("a-file"), "").unwrap();

    let taken = failed(
        &aleph_tools(
            &work,
            &home,
            &["plugins", "new", "taken", "--kind", "nodejs"],
        ),
        1,
    );
    assert!(
        taken.contains("error: `taken` exists and is not empty; give a new directory with --dir"),
        "{taken}"
    );
    assert_eq!(entries(&work.join("taken")), ["notes.txt"]);
    let file = failed(
        &aleph_tools(
            &work,
            &home,
            &["plugins", "new", "x", "--kind", "wasm", "--dir", "a-file"],
        ),
        1,
    );
    assert!(file.contains("error: `a-file` is a file"), "{file}");

    // Usage mistakes, as clap reports them: exit 2.
    let name = failed(
        &aleph_tools(
            &work,
            &home,
            &["plugins", "new", "My Plugin", "--kind", "wasm"],
        ),
        2,
    );
    assert!(
        name.contains("invalid value 'My Plugin' for '<NAME>'")
            && name.contains(
                "a plugin id is a lowercase letter followed by up to 63 of `a-z 0-9 - _ .`"
            ),
        "{name}"
    );
    let slash = failed(
        &aleph_tools(&work, &home, &["plugins", "new", "a/b", "--kind", "wasm"]),
        2,
    );
    assert!(slash.contains("it has `/`"), "{slash}");
    let kind = failed(
        &aleph_tools(
            &work,
            &home,
            &["plugins", "new", "fine", "--kind", "python"],
        ),
        2,
    );
    assert!(
        kind.contains("invalid value 'python' for '--kind <KIND>'")
            && kind.contains("[possible values: nodejs, wasm]"),
        "{kind}"
    );
    let missing = failed(&aleph_tools(&work, &home, &["plugins", "new", "fine"]), 2);
    assert!(missing.contains("--kind <KIND>"), "{missing}");
    assert_eq!(entries(&work), ["a-file", "taken"]);

    // An empty directory is fine, and the human report says what to do next.
    std::fs::create_dir_all(work.join("empty")).unwrap();
    let written = succeeded(&aleph_tools(
        &work,
        &home,
        &["plugins", "new", "fine", "--kind", "wasm", "--dir", "empty"],
    ));
    assert!(
        written.starts_with("wrote the wasm plugin `fine` in `empty`:\n  aleph_plugin.toml\n"),
        "{written}"
    );
    assert!(
        written.contains(
            "next:\n  cd empty\n  rustup target add wasm32-unknown-unknown\n  cargo build --release --target wasm32-unknown-unknown\n  cp target/wasm32-unknown-unknown/release/plugin.wasm .\n"
        ),
        "{written}"
    );
    assert_eq!(
        entries(&work.join("empty")),
        [
            ".gitignore",
            "Cargo.toml",
            "README.md",
            "aleph_plugin.toml",
            "src"
        ]
    );
}

#[test]
fn a_nodejs_plugin_runs_with_the_sdk_installed_from_its_packed_tarball() {
    let root = tempfile::tempdir().unwrap();
    let dir = scaffold(
        root.path(),
        "greeter",
        "nodejs",
        &[
            "aleph_plugin.toml",
            "package.json",
            "index.js",
            "README.md",
            ".gitignore",
        ],
    );
    let package: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("package.json")).unwrap()).unwrap();
    let sdk = plugin_sdk();
    let sdk_package: Value =
        serde_json::from_str(&std::fs::read_to_string(sdk.join("package.json")).unwrap()).unwrap();
    assert_eq!(
        package["dependencies"]["@aleph/plugin-sdk"],
        format!("^{}", sdk_package["version"].as_str().unwrap())
    );

    // The SDK as it would be published: built by plugin_sdk() (build.sh, which holds a lock
    // other tests wait on), so packed without running `prepack`'s build again.
    let tarballs = root.path().join("tarballs");
    std::fs::create_dir_all(&tarballs).unwrap();
    let packed = run(
        "npm",
        &[
            "pack",
            "--ignore-scripts",
            "--json",
            "--pack-destination",
            tarballs.to_str().unwrap(),
        ],
        &sdk,
    );
    let packed: Value = serde_json::from_str(&packed).unwrap();
    let tarball = tarballs.join(packed[0]["filename"].as_str().unwrap());

    // Installed from the tarball, which satisfies the scaffold's `^version` as a published
    // package would; nothing is asked of a registry.
    run(
        "npm",
        &[
            "install",
            "--offline",
            "--no-save",
            "--no-audit",
            "--no-fund",
            tarball.to_str().unwrap(),
        ],
        &dir,
    );
    let installed = dir.join("node_modules/@aleph/plugin-sdk");
    for file in [
        "dist/esm/index.js",
        "dist/esm/index.d.ts",
        "dist/cjs/index.js",
        "README.md",
    ] {
        assert!(installed.join(file).is_file(), "{file}");
    }
    assert!(
        !installed.symlink_metadata().unwrap().is_symlink(),
        "the SDK is a copy"
    );
    let unchanged: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("package.json")).unwrap()).unwrap();
    assert_eq!(unchanged, package);

    load_and_call(&dir, &root.path().join("home"), "nodejs");
}

#[test]
fn a_wasm_plugin_builds_for_wasm32_and_runs() {
    let root = tempfile::tempdir().unwrap();
    let dir = scaffold(
        root.path(),
        "greeter-wasm",
        "wasm",
        &[
            "aleph_plugin.toml",
            "Cargo.toml",
            "src/lib.rs",
            "README.md",
            ".gitignore",
        ],
    );
    // The examples' lock file pins the versions they are built with, so this build reuses
    // what theirs fetched; example_plugins() also installs the wasm32 target when missing.
    std::fs::copy(example_plugins().join("Cargo.lock"), dir.join("Cargo.lock")).unwrap();
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let target = workspace.join("target/tests/scaffold-wasm");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let build = Command::new(&cargo)
        .args([
            "build",
            "--quiet",
            "--release",
            "--target",
            "wasm32-unknown-unknown",
        ])
        .current_dir(&dir)
        .env("CARGO_TARGET_DIR", &target)
        .output()
        .unwrap();
    succeeded(&build);
    std::fs::copy(
        target.join("wasm32-unknown-unknown/release/plugin.wasm"),
        dir.join("plugin.wasm"),
    )
    .unwrap();

    load_and_call(&dir, &root.path().join("home"), "wasm");
}
