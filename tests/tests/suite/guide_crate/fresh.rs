//! New crates outside the workspace, as a reader makes them, built by cargo with this
//! repository's lock file. They share one target directory, `target/tests/guide`, so each
//! dependency is built once per set of features however many crates use it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The repository's root.
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the tests crate is in the workspace")
        .to_path_buf()
}

/// The target directory every new crate of these tests builds in.
pub fn target_dir() -> PathBuf {
    workspace().join("target/tests/guide")
}

/// The version requirement the pages give `aleph-tools`: the published one.
pub const PUBLISHED: &str = "\"0.1\"";

/// A dependency block with `aleph-tools` pointed at this repository. The block must name
/// it with the published version, as `aleph-tools = "0.1"` or `aleph-tools = { version =
/// "0.1", … }`; the version stays beside the path, so cargo checks it matches.
///
/// # Panics
///
/// When the block names `aleph-tools` otherwise, or not at all.
pub fn local(dependencies: &str) -> String {
    let path = format!("path = {}", toml_string(&workspace().join("aleph-tools")));
    let mut found = false;
    let lines: Vec<String> = dependencies
        .lines()
        .map(|line| {
            let Some(value) = line.strip_prefix("aleph-tools = ") else {
                return line.to_owned();
            };
            found = true;
            if value == PUBLISHED {
                format!("aleph-tools = {{ version = {PUBLISHED}, {path} }}")
            } else if let Some(rest) = value.strip_prefix(&format!("{{ version = {PUBLISHED}")) {
                format!("aleph-tools = {{ version = {PUBLISHED}, {path}{rest}")
            } else {
                panic!("`aleph-tools` should be given version {PUBLISHED}: {line}")
            }
        })
        .collect();
    assert!(
        found,
        "the block does not name aleph-tools:\n{dependencies}"
    );
    lines.join("\n") + "\n"
}

/// `path` as a TOML string.
fn toml_string(path: &Path) -> String {
    let text = path.display().to_string();
    format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""))
}

/// A new crate in a temporary directory.
pub struct FreshCrate {
    dir: tempfile::TempDir,
}

impl FreshCrate {
    /// A package named `name` with no targets yet, whose dependencies are `dependencies`
    /// (a `[dependencies]` block) with `aleph-tools` pointed at this repository, and a copy
    /// of the repository's lock file, so it builds with the versions tested here.
    pub fn new(name: &str, dependencies: &str) -> Self {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let manifest = format!(
            "[package]\nname = {name:?}\nversion = \"0.0.0\"\nedition = \"2024\"\npublish = false\n\n[workspace]\n\n{}",
            local(dependencies)
        );
        std::fs::write(dir.path().join("Cargo.toml"), manifest).expect("write the manifest");
        copy_lock_file(dir.path());
        Self { dir }
    }

    /// The crate's directory.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Writes `source` as the binary `src/bin/{name}.rs`.
    pub fn add_bin(&self, name: &str, source: &str) {
        let bins = self.path().join("src/bin");
        std::fs::create_dir_all(&bins).expect("create src/bin");
        std::fs::write(bins.join(format!("{name}.rs")), source).expect("write a binary");
    }
}

/// Copies the repository's lock file into `dir`, unless it holds one.
pub fn copy_lock_file(dir: &Path) {
    let lock = dir.join("Cargo.lock");
    if !lock.exists() {
        std::fs::copy(workspace().join("Cargo.lock"), lock).expect("copy Cargo.lock");
    }
}

/// `cargo ARGS` in `dir`, building in [`target_dir`] without debug info (which only costs
/// disk here).
pub fn cargo(dir: &Path, args: &[&str]) -> Output {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    Command::new(cargo)
        .args(args)
        .current_dir(dir)
        .env("CARGO_TARGET_DIR", target_dir())
        .env("CARGO_PROFILE_DEV_DEBUG", "0")
        .output()
        .expect("run cargo")
}

/// Asserts a command succeeded, with its standard error when it did not.
pub fn assert_success(output: &Output, what: &str) {
    assert!(
        output.status.success(),
        "{what} failed ({}):\n{}{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn aleph_tools_is_pointed_at_this_repository() {
    let path = format!("path = {}", toml_string(&workspace().join("aleph-tools")));
    assert_eq!(
        local("[dependencies]\naleph-tools = \"0.1\"\nserde_json = \"1\"\n"),
        format!(
            "[dependencies]\naleph-tools = {{ version = \"0.1\", {path} }}\nserde_json = \"1\"\n"
        )
    );
    assert_eq!(
        local("aleph-tools = { version = \"0.1\", features = [\"mcp\"] }"),
        format!("aleph-tools = {{ version = \"0.1\", {path}, features = [\"mcp\"] }}\n")
    );
}
