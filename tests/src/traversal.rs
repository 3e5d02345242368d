//! The path-traversal tree and corpus shared by the `resolve_path` tests and the built-in
//! file tools' tests: every path in the corpus must be refused.

use std::path::{Path, PathBuf};

/// A temporary tree: `root/` is the allowed directory, `outside/` holds `secret.txt`.
/// Inside: `docs/readme.md` (three lines), `docs/deep/`, a file with a Unicode name, a link
/// that stays inside (`link_in` → `docs`) and links that lead out (`link_out`,
/// `docs/secret_link`, `docs/relative_out`).
pub struct Tree {
    _dir: tempfile::TempDir,
    /// The allowed directory, canonical.
    pub root: PathBuf,
    /// The directory beside it that must stay untouched, canonical.
    pub outside: PathBuf,
}

impl Tree {
    /// Makes the tree in a new temporary directory, removed when the value is dropped.
    ///
    /// # Panics
    ///
    /// When the temporary directory cannot be written.
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let root = base.join("root");
        let outside = base.join("outside");
        std::fs::create_dir_all(root.join("docs/deep")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(
            root.join("docs/readme.md"),
            "line one\nline two\nline three\n",
        )
        .unwrap();
        std::fs::write(root.join("docs/日本語 ファイル.txt"), "unicode").unwrap();
        std::fs::write(outside.join("secret.txt"), "secret").unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::symlink;
            symlink(&outside, root.join("link_out")).unwrap();
            symlink(outside.join("secret.txt"), root.join("docs/secret_link")).unwrap();
            symlink(root.join("docs"), root.join("link_in")).unwrap();
            symlink("../../outside", root.join("docs/relative_out")).unwrap();
        }
        Self {
            _dir: dir,
            root,
            outside,
        }
    }

    /// Paths that lead outside `root` (by `..`, absolute paths, links) or are malformed (NUL
    /// bytes, over-long, empty).
    pub fn corpus(&self) -> Vec<String> {
        traversal_corpus(&self.root, &self.outside)
    }
}

impl Default for Tree {
    fn default() -> Self {
        Self::new()
    }
}

fn traversal_corpus(root: &Path, outside: &Path) -> Vec<String> {
    let outside = outside.display();
    let mut corpus: Vec<String> = vec![
        "..".into(),
        "../outside/secret.txt".into(),
        "../../../../../../etc/passwd".into(),
        "docs/../../outside".into(),
        "docs/deep/../../../outside/secret.txt".into(),
        "/etc/passwd".into(),
        "/".into(),
        format!("{outside}/secret.txt"),
        format!("{}/../outside", root.display()),
        "missing/../../outside/new.txt".into(),
        "missing/../../../etc".into(),
        "docs/missing/../../../outside".into(),
        "\0".into(),
        "docs/\0/readme.md".into(),
        "a".repeat(5000),
        format!("{}/x", "d/".repeat(3000)),
        String::new(),
    ];
    #[cfg(unix)]
    corpus.extend([
        "link_out".into(),
        "link_out/secret.txt".into(),
        "link_out/new_file.txt".into(),
        "link_out/new_dir/new_file.txt".into(),
        "docs/secret_link".into(),
        "docs/relative_out/secret.txt".into(),
        "link_in/../link_out/secret.txt".into(),
        "missing/../link_out/secret.txt".into(),
    ]);
    corpus
}
