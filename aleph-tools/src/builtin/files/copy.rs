//! Copying for `file_copy`: regular files byte for byte, directories entry by entry, and
//! symbolic links as they are written, but only a link that leads inside the allowed
//! directories from its new place. A relative link means something else once copied
//! elsewhere (`../../x` climbs from wherever it is), so each is judged where the copy puts
//! it; one that would lead out, or whose text alone cannot say where it leads, is left out
//! and named in the result. FIFOs, sockets and devices are left out too: only regular files
//! are read.

use std::ffi::OsString;
use std::io::{self, Read, Write};
use std::path::{Component, Path, PathBuf};

use cap_std::fs::{Dir, FileType, OpenOptions};

use super::job::Stop;
use super::open::{Follow, OpenError, open_regular};
use crate::builtin::workspace::inside_roots;
use crate::context::ToolContext;

/// The most entries one `file_copy` of a directory copies.
pub(super) const MAX_COPY_ENTRIES: usize = 10_000;

/// How many left-out entries the result names.
const NAMED_LEFT_OUT: usize = 5;

/// Why a copy stopped.
pub(super) enum CopyError {
    /// The file system refused, on the side given, at the path given (below the copied
    /// directory, or the name of the file copied alone).
    Io(io::Error, Side, PathBuf),
    /// More than [`MAX_COPY_ENTRIES`] entries.
    TooMany,
    /// The file copied alone is not a regular file.
    Special(OpenError),
    /// Nobody waits for the copy any more.
    Stopped,
}

/// Which side of a copy a path is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Side {
    From,
    To,
}

/// What a directory copy did.
pub(super) struct Copied {
    /// Entries copied.
    pub entries: usize,
    /// Entries left out, each with why, as `path (why)`.
    pub left_out: Vec<String>,
}

impl Copied {
    /// The left-out entries in words, empty when none was.
    pub fn left_out_text(&self) -> String {
        if self.left_out.is_empty() {
            return String::new();
        }
        let named: Vec<&str> = self
            .left_out
            .iter()
            .take(NAMED_LEFT_OUT)
            .map(String::as_str)
            .collect();
        let more = self.left_out.len().saturating_sub(NAMED_LEFT_OUT);
        let more = if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        };
        format!(
            "; left out {}: {}{more}",
            self.left_out.len(),
            named.join(", ")
        )
    }
}

/// Copies the regular file `from_rel` below `from` to `to_rel` below `to` (which must not
/// exist), with its permission bits less the umask; returns the bytes copied. A partial copy
/// is removed.
pub(super) fn copy_file(
    from: &Dir,
    from_rel: &Path,
    follow: Follow,
    to: &Dir,
    to_rel: &Path,
    stop: &Stop,
) -> Result<u64, CopyError> {
    let (mut source, meta) = open_regular(from, from_rel, follow).map_err(|e| match e {
        OpenError::Io(err) => CopyError::Io(err, Side::From, from_rel.to_path_buf()),
        special @ OpenError::Special(_) => CopyError::Special(special),
    })?;
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use cap_std::fs::OpenOptionsExt as _;
        use std::os::unix::fs::PermissionsExt as _;
        options.mode(meta.permissions().mode() & 0o777);
    }
    #[cfg(not(unix))]
    let _ = meta;
    let mut target = to
        .open_with(to_rel, &options)
        .map_err(|e| CopyError::Io(e, Side::To, to_rel.to_path_buf()))?
        .into_std();
    let copied = (|| {
        let mut buf = vec![0; 64 * 1024];
        let mut total = 0u64;
        loop {
            if stop.requested() {
                return Err(CopyError::Stopped);
            }
            let n = match source.read(&mut buf) {
                Ok(0) => return Ok(total),
                Ok(n) => n,
                Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
                Err(err) => return Err(CopyError::Io(err, Side::From, from_rel.to_path_buf())),
            };
            target
                .write_all(&buf[..n])
                .map_err(|e| CopyError::Io(e, Side::To, to_rel.to_path_buf()))?;
            total += n as u64;
        }
    })();
    if copied.is_err() {
        drop(target);
        let _ = to.remove_file(to_rel);
    }
    copied
}

/// Copies everything in `from` into `to` (an empty directory whose whole path is
/// `to_full`), depth first without recursion, so no depth overflows the stack.
pub(super) fn copy_dir(
    ctx: &ToolContext,
    from: &Dir,
    to: &Dir,
    to_full: &Path,
    shown: &str,
    stop: &Stop,
) -> Result<Copied, CopyError> {
    let mut copied = Copied {
        entries: 0,
        left_out: Vec::new(),
    };
    let mut pending = vec![PathBuf::from(".")];
    while let Some(dir) = pending.pop() {
        for (name, kind) in entries(from, &dir)? {
            if stop.requested() {
                return Err(CopyError::Stopped);
            }
            if copied.entries + copied.left_out.len() == MAX_COPY_ENTRIES {
                return Err(CopyError::TooMany);
            }
            let rel = if dir == Path::new(".") {
                PathBuf::from(&name)
            } else {
                dir.join(&name)
            };
            let from_io = |e: io::Error| CopyError::Io(e, Side::From, rel.clone());
            let to_io = |e: io::Error| CopyError::Io(e, Side::To, rel.clone());
            let left_out =
                |why: &str| format!("`{}` ({why})", Path::new(shown).join(&rel).display());
            if kind.is_dir() {
                to.create_dir(&rel).map_err(to_io)?;
                pending.push(rel);
            } else if kind.is_symlink() {
                let target = from.read_link_contents(&rel).map_err(from_io)?;
                match judge_link(ctx, &to_full.join(&rel), &target) {
                    Ok(()) => to.symlink_contents(&target, &rel).map_err(to_io)?,
                    Err(why) => {
                        copied
                            .left_out
                            .push(left_out(&format!("a symbolic link: {why}")));
                        continue;
                    }
                }
            } else {
                match copy_file(from, &rel, Follow::No, to, &rel, stop) {
                    Ok(_) => {}
                    Err(CopyError::Special(OpenError::Special(special))) => {
                        copied.left_out.push(left_out(special.describe()));
                        continue;
                    }
                    Err(err) => return Err(err),
                }
            }
            copied.entries += 1;
        }
    }
    Ok(copied)
}

/// The first relative link in the directory `from` that, were the directory moved to
/// `to_full`, would lead out of the allowed directories (or could not be judged), as `link
/// (why)`; `None` when there is none. An absolute link means the same wherever it is, so it
/// is not judged. Walks at most `max` entries ([`CopyError::TooMany`] past them).
pub(super) fn link_leading_out(
    ctx: &ToolContext,
    from: &Dir,
    to_full: &Path,
    max: usize,
    stop: &Stop,
) -> Result<Option<String>, CopyError> {
    let mut seen = 0;
    let mut pending = vec![PathBuf::from(".")];
    while let Some(dir) = pending.pop() {
        for (name, kind) in entries(from, &dir)? {
            if stop.requested() {
                return Err(CopyError::Stopped);
            }
            seen += 1;
            if seen > max {
                return Err(CopyError::TooMany);
            }
            let rel = if dir == Path::new(".") {
                PathBuf::from(&name)
            } else {
                dir.join(&name)
            };
            if kind.is_dir() {
                pending.push(rel);
            } else if kind.is_symlink() {
                let target = from
                    .read_link_contents(&rel)
                    .map_err(|e| CopyError::Io(e, Side::From, rel.clone()))?;
                if target.is_relative()
                    && let Err(why) = judge_link(ctx, &to_full.join(&rel), &target)
                {
                    return Ok(Some(format!(
                        "`{}` → `{}` ({why})",
                        rel.display(),
                        target.display()
                    )));
                }
            }
        }
    }
    Ok(None)
}

/// The names and types in the directory `rel` below `from`; the directory is closed again
/// at once.
fn entries(from: &Dir, rel: &Path) -> Result<Vec<(OsString, FileType)>, CopyError> {
    let io = |e: io::Error| CopyError::Io(e, Side::From, rel.to_path_buf());
    let mut found = Vec::new();
    for entry in from.read_dir(rel).map_err(io)? {
        let entry = entry.map_err(io)?;
        found.push((entry.file_name(), entry.file_type().map_err(io)?));
    }
    Ok(found)
}

/// `Ok` when a link holding `target`, made at `link` (a whole path whose directories are
/// real ones), leads inside the call's allowed directories; else why not, as a clause.
pub(super) fn judge_link(
    ctx: &ToolContext,
    link: &Path,
    target: &Path,
) -> Result<(), &'static str> {
    let Some(leads_to) = lexical_target(link, target) else {
        return Err(
            "its target climbs with `..` after a name, so its text alone cannot say where it leads",
        );
    };
    if inside_roots(ctx, &leads_to) {
        Ok(())
    } else {
        Err("from its new place it would lead outside the allowed directories")
    }
}

/// Where a link at `link` holding `target` leads, worked out from the text alone: `..` at the
/// start climbs from the link's directory. `None` when the text alone cannot say: a `..`
/// after a name (the name may be a link itself), or one that climbs above `/`.
fn lexical_target(link: &Path, target: &Path) -> Option<PathBuf> {
    let mut leads_to = if target.is_absolute() {
        PathBuf::new()
    } else {
        link.parent()?.to_path_buf()
    };
    let mut named = false;
    for part in target.components() {
        match part {
            Component::Prefix(_) | Component::RootDir => leads_to.push(part),
            Component::CurDir => {}
            Component::ParentDir => {
                if named || !leads_to.pop() {
                    return None;
                }
            }
            Component::Normal(name) => {
                named = true;
                leads_to.push(name);
            }
        }
    }
    Some(leads_to)
}

#[cfg(test)]
mod tests {
    use super::lexical_target;
    use std::path::Path;

    #[test]
    fn a_link_is_read_from_where_it_is() {
        let at = |link: &str, target: &str| {
            lexical_target(Path::new(link), Path::new(target)).map(|p| p.display().to_string())
        };
        assert_eq!(at("/r/a/b/l", "../x").as_deref(), Some("/r/a/x"));
        assert_eq!(at("/r/a/b/l", "../../../x").as_deref(), Some("/x"));
        assert_eq!(at("/r/l", "./x/./y").as_deref(), Some("/r/x/y"));
        assert_eq!(at("/r/l", "/r/x").as_deref(), Some("/r/x"));
        assert_eq!(at("/r/l", "s/../x"), None);
        assert_eq!(at("/r/l", "/r/../x"), None);
        assert_eq!(at("/l", "../../x"), None);
    }
}
