//! Walking a directory the way a developer sees it: `.gitignore` honoured, `.git` left out,
//! symbolic links listed but never followed. Every directory, entry and ignore file is
//! reached through the allowed directory's handle, so nothing outside it is ever read; an
//! ignore file is read only when it is a regular file (never through a link, as git does),
//! and only its first [`MAX_IGNORE_BYTES`].

use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use cap_std::fs::Metadata;
use ignore::Match;
use ignore::gitignore::{Gitignore, GitignoreBuilder};

use super::job::Stop;
use super::open::{Follow, open_regular, read_at_most};
use crate::builtin::workspace::{Place, shown};
use crate::context::ToolContext;

/// The name of the ignore files honoured.
const IGNORE_FILE: &str = ".gitignore";

/// The largest ignore file read; a larger one is left out, as if it were not there.
const MAX_IGNORE_BYTES: u64 = 1024 * 1024;

/// The most patterns taken from one ignore file; the rest are left out (each pattern costs
/// memory and time to compile, and real ones hold a few hundred at most).
const MAX_IGNORE_PATTERNS: usize = 10_000;

/// An entry found by a [`Walk`].
pub(super) struct Found {
    /// The path below the allowed directory.
    pub rel: PathBuf,
    /// The path as the model should write it.
    pub shown: String,
    /// The entry's own metadata (a symbolic link is not followed).
    pub meta: Metadata,
}

/// The entries below a place, in file-name order within each directory, each directory
/// before what it holds.
pub(super) struct Walk<'a> {
    place: &'a Place,
    ctx: &'a ToolContext,
    stop: &'a Stop,
    max_depth: usize,
    /// The directories being read, the deepest last.
    levels: Vec<Level>,
}

/// A directory being read.
struct Level {
    /// Its path below the allowed directory.
    rel: PathBuf,
    /// How far below the walk's place it is (0 for the place itself).
    depth: usize,
    /// The names in it not yet yielded, in order.
    names: std::vec::IntoIter<OsString>,
    /// The ignore rules that apply in it, the nearest last.
    rules: Vec<Arc<Gitignore>>,
}

impl<'a> Walk<'a> {
    /// A walk of `place`, which must be a directory, going down `depth` levels (all when
    /// `None`); stops early once `stop` is requested.
    pub fn new(
        ctx: &'a ToolContext,
        place: &'a Place,
        depth: Option<usize>,
        stop: &'a Stop,
    ) -> io::Result<Self> {
        // The `.gitignore` files between the allowed directory and the place apply too;
        // none above the allowed directory is read.
        let mut rules = Vec::new();
        let mut above = PathBuf::from(".");
        if !place.is_root() {
            for part in place.rel.components() {
                rules.extend(ignore_rules(place, &above));
                above = child(&above, part.as_os_str());
            }
        }
        let names = names_in(place, &place.rel)?;
        rules.extend(ignore_rules(place, &place.rel));
        let mut walk = Self {
            place,
            ctx,
            stop,
            max_depth: depth.unwrap_or(usize::MAX),
            levels: Vec::new(),
        };
        walk.levels.push(Level {
            rel: place.rel.clone(),
            depth: 0,
            names: names.into_iter(),
            rules,
        });
        Ok(walk)
    }
}

impl Iterator for Walk<'_> {
    type Item = Found;

    fn next(&mut self) -> Option<Found> {
        loop {
            if self.stop.requested() {
                return None;
            }
            let level = self.levels.last_mut()?;
            let Some(name) = level.names.next() else {
                self.levels.pop();
                continue;
            };
            if name == ".git" {
                continue;
            }
            let rel = child(&level.rel, &name);
            let depth = level.depth + 1;
            let Ok(meta) = self.place.root.symlink_metadata(&rel) else {
                continue;
            };
            let full = self.place.full_path(&rel);
            let is_dir = meta.is_dir();
            if ignored(&level.rules, &full, is_dir) {
                continue;
            }
            if is_dir
                && depth < self.max_depth
                && let Ok(names) = names_in(self.place, &rel)
            {
                let mut rules = level.rules.clone();
                rules.extend(ignore_rules(self.place, &rel));
                self.levels.push(Level {
                    rel: rel.clone(),
                    depth,
                    names: names.into_iter(),
                    rules,
                });
            }
            return Some(Found {
                shown: shown(self.ctx, &full),
                rel,
                meta,
            });
        }
    }
}

/// The names in the directory `rel`, sorted; the directory is closed again at once.
fn names_in(place: &Place, rel: &Path) -> io::Result<Vec<OsString>> {
    let mut names = place
        .root
        .read_dir(rel)?
        .filter_map(|entry| entry.ok().map(|entry| entry.file_name()))
        .collect::<Vec<_>>();
    names.sort_unstable();
    Ok(names)
}

/// The rules of the `.gitignore` in the directory `rel`, when it has one that is a regular
/// file of at most [`MAX_IGNORE_BYTES`]. Anything else (a link, a FIFO, a device, a file too
/// large) is left out, and said so in the log.
fn ignore_rules(place: &Place, rel: &Path) -> Option<Arc<Gitignore>> {
    let path = rel.join(IGNORE_FILE);
    let text = match open_regular(&place.root, &path, Follow::No) {
        Ok((file, _)) => match read_at_most(file, MAX_IGNORE_BYTES) {
            Ok(Ok(bytes)) => bytes,
            Ok(Err(_)) => {
                tracing::warn!(
                    file = %place.full_path(&path).display(),
                    "an ignore file over {MAX_IGNORE_BYTES} bytes is left out"
                );
                return None;
            }
            Err(_) => return None,
        },
        Err(super::open::OpenError::Io(_)) => return None,
        Err(super::open::OpenError::Special(special)) => {
            tracing::warn!(
                file = %place.full_path(&path).display(),
                "an ignore file that is {} is left out",
                special.describe()
            );
            return None;
        }
    };
    let dir = place.full_path(rel);
    let mut builder = GitignoreBuilder::new(&dir);
    let text = String::from_utf8_lossy(&text);
    let mut patterns = text
        .lines()
        .filter(|line| !line.trim().is_empty() && !line.starts_with('#'));
    for line in patterns.by_ref().take(MAX_IGNORE_PATTERNS) {
        // A line git would not take is left out, as git does.
        let _ = builder.add_line(None, line);
    }
    if patterns.next().is_some() {
        tracing::warn!(
            file = %place.full_path(&path).display(),
            "only the first {MAX_IGNORE_PATTERNS} patterns of an ignore file are used"
        );
    }
    builder.build().ok().map(Arc::new)
}

/// Whether the rules, the nearest first, leave out the entry at `full`.
fn ignored(rules: &[Arc<Gitignore>], full: &Path, is_dir: bool) -> bool {
    for rule in rules.iter().rev() {
        match rule.matched(full, is_dir) {
            Match::Ignore(_) => return true,
            Match::Whitelist(_) => return false,
            Match::None => {}
        }
    }
    false
}

/// The path of `name` in the directory `rel` (`.` for the allowed directory).
fn child(rel: &Path, name: &std::ffi::OsStr) -> PathBuf {
    if rel == Path::new(".") {
        PathBuf::from(name)
    } else {
        rel.join(name)
    }
}

/// `file`, `dir`, `symlink` or `other` (a FIFO, socket or device).
pub(super) fn entry_kind(meta: &Metadata) -> &'static str {
    if meta.is_symlink() {
        "symlink"
    } else if meta.is_dir() {
        "dir"
    } else if meta.is_file() {
        "file"
    } else {
        "other"
    }
}
