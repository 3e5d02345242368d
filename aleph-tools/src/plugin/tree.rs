//! What a plugin's directory may hold: every symbolic link in it leads inside it, and the
//! tree is small and shallow enough to check. The walk never follows a link.
//!
//! A sandbox that allows a directory allows what is written under it; the operating system
//! then follows links, so a link shipped in a plugin (`data/rootlink -> /`) would hand it
//! everything the link reaches. Such a plugin is refused at load, at every reload and at
//! install.

use std::path::{Component, Path, PathBuf};

/// The most files, directories and links a plugin's tree may hold (an archive's entries
/// too): a plugin with its packages is thousands, not millions.
pub(super) const MAX_ENTRIES: usize = 50_000;

/// The deepest a plugin's tree may nest.
pub(super) const MAX_DEPTH: usize = 64;

/// Why a plugin's tree is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum TreeError {
    /// A link leads out of the directory.
    Escape {
        /// The link, relative to the plugin's directory.
        link: PathBuf,
        /// Where it leads.
        target: PathBuf,
    },
    /// A block or character device: a way into the host's hardware, not a plugin's file.
    Device(PathBuf),
    /// More entries than [`MAX_ENTRIES`].
    TooMany,
    /// Nested deeper than [`MAX_DEPTH`], at this directory.
    TooDeep(PathBuf),
    /// A directory could not be read.
    Unreadable(PathBuf, String),
}

impl std::fmt::Display for TreeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Escape { link, target } => {
                write!(
                    f,
                    "its link `{}` leads to `{}`, outside the plugin's directory, where the plugin's sandbox would follow it; ",
                    link.display(),
                    target.display()
                )?;
                if link
                    .components()
                    .any(|part| part.as_os_str() == "node_modules")
                {
                    f.write_str("install its packages as copies (`npm install --install-links`) or vendor them into the plugin")
                } else {
                    f.write_str("copy what it points to into the plugin's directory, or grant that directory by its real path in the manifest's `[permissions]`")
                }
            }
            Self::Device(path) => write!(
                f,
                "`{}` is a device file; remove it from the plugin's directory",
                path.display()
            ),
            Self::TooMany => write!(
                f,
                "it holds more than {MAX_ENTRIES} files, directories and links, more than a plugin may (a cache or a build directory inside it? a `node_modules` that large: bundle the plugin into a few files, with esbuild say)"
            ),
            Self::TooDeep(path) => write!(
                f,
                "`{}` nests more than {MAX_DEPTH} directories deep, deeper than a plugin may",
                path.display()
            ),
            Self::Unreadable(path, why) => write!(f, "cannot read `{}`: {why}", path.display()),
        }
    }
}

/// Checks the tree under `dir`: every link in it leads inside `dir` (dangling links by where
/// they would lead once their target exists), no device files, at most [`MAX_ENTRIES`]
/// entries, at most [`MAX_DEPTH`] levels. Links are read, never followed; the walk stops at
/// the first problem.
pub(super) fn check(dir: &Path) -> Result<(), TreeError> {
    let root = std::fs::canonicalize(dir)
        .map_err(|e| TreeError::Unreadable(dir.to_path_buf(), e.to_string()))?;
    let mut seen = 0usize;
    let mut pending = vec![(root.clone(), 0usize)];
    while let Some((current, depth)) = pending.pop() {
        let relative = |path: &Path| path.strip_prefix(&root).unwrap_or(path).to_path_buf();
        if depth > MAX_DEPTH {
            return Err(TreeError::TooDeep(relative(&current)));
        }
        let unreadable =
            |e: std::io::Error| TreeError::Unreadable(relative(&current), e.to_string());
        for entry in std::fs::read_dir(&current).map_err(unreadable)? {
            let entry = entry.map_err(unreadable)?;
            seen += 1;
            if seen > MAX_ENTRIES {
                return Err(TreeError::TooMany);
            }
            let path = entry.path();
            // The entry's own type: a link is not followed.
            let kind = entry.file_type().map_err(unreadable)?;
            if kind.is_symlink() {
                let target = leads_to(&path);
                if !target.starts_with(&root) {
                    return Err(TreeError::Escape {
                        link: relative(&path),
                        target,
                    });
                }
            } else if kind.is_dir() {
                pending.push((path, depth + 1));
            } else if is_device(kind) {
                return Err(TreeError::Device(relative(&path)));
            }
        }
    }
    Ok(())
}

#[cfg(unix)]
fn is_device(kind: std::fs::FileType) -> bool {
    use std::os::unix::fs::FileTypeExt;
    kind.is_block_device() || kind.is_char_device()
}

#[cfg(not(unix))]
fn is_device(_: std::fs::FileType) -> bool {
    false
}

/// Where the link `link` (in a directory reached without links) leads, as the operating
/// system resolves it: every link along the way followed. A dangling link leads where a file
/// written through it would be made: its target's directory resolved, the last name kept.
pub(super) fn leads_to(link: &Path) -> PathBuf {
    if let Ok(real) = std::fs::canonicalize(link) {
        return real;
    }
    let parent = link.parent().unwrap_or(link);
    let Ok(written) = std::fs::read_link(link) else {
        return link.to_path_buf();
    };
    let target = parent.join(written);
    if let (Some(dir), Some(name)) = (target.parent(), target.file_name())
        && let Ok(dir) = std::fs::canonicalize(dir)
    {
        return dir.join(name);
    }
    // Its directory does not exist either: nothing can be made through it until it does;
    // judge it by the path as written.
    lexical(&target)
}

/// `path` with `.` and `..` taken out by name.
pub(super) fn lexical(path: &Path) -> PathBuf {
    let mut clean = PathBuf::new();
    for part in path.components() {
        match part {
            Component::ParentDir => {
                clean.pop();
            }
            Component::CurDir => {}
            other => clean.push(other),
        }
    }
    clean
}

#[cfg(all(test, unix))]
mod tests {
    use std::os::unix::fs::symlink;

    use super::*;

    /// A directory of its own under the system's temporary directory, removed when dropped.
    struct Scratch(PathBuf);

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn tree() -> (Scratch, PathBuf) {
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("aleph-tree-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let dir = Scratch(dir.canonicalize().unwrap());
        let root = dir.0.join("plugin");
        std::fs::create_dir_all(root.join("data/deep")).unwrap();
        std::fs::create_dir_all(root.join("node_modules/pkg")).unwrap();
        std::fs::write(root.join("data/file"), "x").unwrap();
        (dir, root)
    }

    fn escape(root: &Path) -> (PathBuf, PathBuf) {
        match check(root) {
            Err(TreeError::Escape { link, target }) => (link, target),
            other => panic!("not refused as an escape: {other:?}"),
        }
    }

    #[test]
    fn links_inside_are_fine() {
        let (_dir, root) = tree();
        symlink("../data", root.join("node_modules/pkg/data")).unwrap();
        symlink("file", root.join("data/alias")).unwrap();
        symlink(root.join("data/deep"), root.join("absolute-inside")).unwrap();
        symlink("not-yet", root.join("data/dangling")).unwrap();
        symlink("loop-b", root.join("loop-a")).unwrap();
        symlink("loop-a", root.join("loop-b")).unwrap();
        assert_eq!(check(&root), Ok(()));
    }

    #[test]
    fn links_out_are_named_with_where_they_lead() {
        let (_dir, root) = tree();
        symlink("/", root.join("data/rootlink")).unwrap();
        let (link, target) = escape(&root);
        assert_eq!(link, Path::new("data/rootlink"));
        assert_eq!(target, Path::new("/"));
        let message = TreeError::Escape { link, target }.to_string();
        assert!(
            message.contains("`data/rootlink` leads to `/`"),
            "{message}"
        );

        let (_dir, root) = tree();
        symlink("../../../..", root.join("data/deep/up")).unwrap();
        assert_eq!(escape(&root).0, Path::new("data/deep/up"));

        let (_dir, root) = tree();
        symlink("/usr/lib/node_modules/x", root.join("node_modules/x")).unwrap();
        let (link, target) = escape(&root);
        let message = TreeError::Escape { link, target }.to_string();
        assert!(message.contains("--install-links"), "{message}");
    }

    #[test]
    fn dangling_links_are_judged_where_a_write_would_land() {
        // Written through, a dangling link makes its target: outside here.
        let (_dir, root) = tree();
        symlink("../../nowhere-yet", root.join("data/out")).unwrap();
        assert_eq!(escape(&root).1, root.parent().unwrap().join("nowhere-yet"));
        // `up` leads inside (to the plugin's directory), so by name `up/../x` is inside;
        // the system follows `up` first, and lands beside the plugin.
        let (_dir, root) = tree();
        symlink("..", root.join("data/up")).unwrap();
        symlink("up/../escaped", root.join("data/x")).unwrap();
        assert_eq!(escape(&root).1, root.parent().unwrap().join("escaped"));
    }

    #[test]
    fn large_and_deep_trees_are_refused_without_walking_them_all() {
        let (_dir, root) = tree();
        let mut deep = root.join("data");
        for _ in 0..=MAX_DEPTH {
            deep.push("d");
        }
        std::fs::create_dir_all(&deep).unwrap();
        assert!(matches!(check(&root), Err(TreeError::TooDeep(_))));

        let (_dir, root) = tree();
        for i in 0..=MAX_ENTRIES {
            std::fs::File::create(root.join(format!("data/{i}"))).unwrap();
        }
        assert_eq!(check(&root), Err(TreeError::TooMany));
    }
}
