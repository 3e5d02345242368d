//! The tools that change files: `file_write`, `file_edit`, `file_move`, `file_copy`,
//! `file_delete`, `file_mkdir`.

use std::io;
use std::path::Path;

use super::copy::{self, CopyError, MAX_COPY_ENTRIES, Side};
use super::job;
use super::open::{Follow, open_regular, read_at_most};
use super::{Changed, FileOps, atomic};
use crate::builtin::workspace::{Place, io_error, locate, locate_entry};
use crate::context::{State, ToolContext};
use crate::error::{ArgumentProblem, ToolError};
use crate::tool;

/// The most entries of a directory whose links are checked before it is moved.
const MAX_MOVE_CHECKED: usize = 100_000;

/// Write a text file, replacing what it held; missing parent directories are created.
///
/// The file is written whole or not at all. To change part of a file, use `file_edit`.
#[tool(crate = crate, register = false, confirm, destructive, idempotent)]
pub(crate) async fn file_write(
    /// The file to write, relative to the working directory or absolute
    path: String,
    /// The whole new content
    content: String,
    limits: State<FileOps>,
    ctx: &ToolContext,
) -> Result<Changed, ToolError> {
    if content.len() > limits.max_write_bytes {
        return Err(too_big(ctx, content.len(), limits.max_write_bytes));
    }
    job::run(ctx, limits.time_limit, move |ctx, _| {
        let place = locate(ctx, &path)?;
        if place.is_root() {
            return Err(ToolError::execution(format!(
                "`{}` is an allowed directory, not a file",
                place.shown
            )));
        }
        place.make_parent()?;
        let (dir, name) = place.parent_and_name()?;
        refuse_link(&place, &dir, &name)?;
        atomic::write(&dir, &name, content.as_bytes()).map_err(|e| place.error(&e))?;
        Ok(Changed::new(
            &place,
            format!("wrote {} bytes", content.len()),
        ))
    })
    .await
}

/// Refuses to write where `name` in `dir` is a symbolic link: one that `locate` left as it
/// is leads nowhere (it would resolve otherwise), and a file is never made through a link.
fn refuse_link(
    place: &Place,
    dir: &cap_std::fs::Dir,
    name: &std::ffi::OsStr,
) -> Result<(), ToolError> {
    match dir.symlink_metadata(name) {
        Ok(meta) if meta.is_symlink() => {
            let target = dir
                .read_link_contents(name)
                .map(|t| format!(" to `{}`", t.display()))
                .unwrap_or_default();
            Err(ToolError::execution(format!(
                "`{}` is a symbolic link{target} that leads to nothing; files are never written through links: delete the link with file_delete, or write to the path it should name",
                place.shown
            )))
        }
        _ => Ok(()),
    }
}

/// Replace an exact piece of text in a file.
///
/// `old_text` must appear in the file exactly once (copy it with its whitespace and enough
/// surrounding lines to be unique), or set `replace_all` to replace every occurrence.
#[tool(crate = crate, register = false, destructive)]
pub(crate) async fn file_edit(
    /// The file to change
    path: String,
    /// The text to replace, exactly as it is in the file
    old_text: String,
    /// The text to put in its place
    new_text: String,
    /// Replace every occurrence instead of requiring exactly one
    #[arg(default = false)]
    replace_all: bool,
    limits: State<FileOps>,
    ctx: &ToolContext,
) -> Result<Changed, ToolError> {
    let tool = ctx.tool_name().unwrap_or("file_edit");
    if old_text.is_empty() {
        return Err(ToolError::invalid_args(
            tool,
            vec![
                ArgumentProblem::new("/old_text", "the text to replace").received("an empty text"),
            ],
        ));
    }
    if old_text == new_text {
        return Err(ToolError::invalid_args(
            tool,
            vec![
                ArgumentProblem::new("/new_text", "a text different from `old_text`")
                    .received("the same text"),
            ],
        ));
    }
    let time_limit = limits.time_limit;
    job::run(ctx, time_limit, move |ctx, _| {
        edit(
            ctx,
            &path,
            &old_text,
            &new_text,
            replace_all,
            limits.max_write_bytes,
        )
    })
    .await
}

/// `file_edit`'s work.
fn edit(
    ctx: &ToolContext,
    path: &str,
    old_text: &str,
    new_text: &str,
    replace_all: bool,
    max: usize,
) -> Result<Changed, ToolError> {
    let place = locate(ctx, path)?;
    let (file, meta) = open_regular(&place.root, &place.rel, Follow::Yes)
        .map_err(|e| e.at(&place.shown, "file_edit"))?;
    let over = |size: String| {
        ToolError::execution(format!(
            "`{}` is {size} bytes; file_edit changes files of at most {max} bytes. Read parts of it with file_read (start_line and line_count)",
            place.shown
        ))
    };
    if meta.len() > max as u64 {
        return Err(over(meta.len().to_string()));
    }
    let bytes = match read_at_most(file, max as u64).map_err(|e| place.error(&e))? {
        Ok(bytes) => bytes,
        Err(len) => return Err(over(format!("at least {len}"))),
    };
    let Ok(text) = String::from_utf8(bytes) else {
        return Err(ToolError::execution(format!(
            "`{}` is not UTF-8 text; file_edit changes text files only",
            place.shown
        )));
    };
    let count = text.matches(old_text).count();
    // The size the edit makes, known before it is made: a short `old_text` found often and a
    // long `new_text` would otherwise build a result far past the limit (or past memory).
    let size =
        (text.len() - count * old_text.len()).saturating_add(count.saturating_mul(new_text.len()));
    if count > 0 && (count == 1 || replace_all) && size > max {
        return Err(too_big(ctx, size, max));
    }
    let edited = match count {
        0 => {
            let hint = if text.contains(old_text.trim()) {
                " (it does with different surrounding whitespace: copy the text exactly)"
            } else {
                ""
            };
            return Err(ToolError::execution(format!(
                "`old_text` does not appear in `{}`{hint}; read the file again and copy the text to replace exactly",
                place.shown
            )));
        }
        1 => text.replacen(old_text, new_text, 1),
        _ if replace_all => text.replace(old_text, new_text),
        n => {
            return Err(ToolError::execution(format!(
                "`old_text` appears {n} times in `{}`; add surrounding lines to make it unique, or set `replace_all: true` to replace all {n}",
                place.shown
            )));
        }
    };
    if edited.len() > max {
        return Err(too_big(ctx, edited.len(), max));
    }
    let (dir, name) = place.parent_and_name()?;
    atomic::write(&dir, &name, edited.as_bytes()).map_err(|e| place.error(&e))?;
    let done = if count == 1 {
        "replaced 1 occurrence".to_owned()
    } else {
        format!("replaced {count} occurrences")
    };
    Ok(Changed::new(&place, done))
}

/// Move or rename a file or directory.
#[tool(crate = crate, register = false, destructive)]
pub(crate) async fn file_move(
    /// What to move
    from: String,
    /// Where to put it (the new path, not the directory to move it into)
    to: String,
    /// Replace what is at `to` already
    #[arg(default = false)]
    overwrite: bool,
    limits: State<FileOps>,
    ctx: &ToolContext,
) -> Result<Changed, ToolError> {
    job::run(ctx, limits.time_limit, move |ctx, stop| {
        let source = locate_entry(ctx, &from)?;
        let target = locate(ctx, &to)?;
        refuse_root(&source)?;
        refuse_root(&target)?;
        let meta = source
            .root
            .symlink_metadata(&source.rel)
            .map_err(|e| source.error(&e))?;
        if meta.is_dir() {
            // The relative links inside move with it, and mean something else there.
            let dir = source
                .root
                .open_dir(&source.rel)
                .map_err(|e| source.error(&e))?;
            match copy::link_leading_out(ctx, &dir, &target.full, MAX_MOVE_CHECKED, stop) {
                Ok(None) => {}
                Ok(Some(link)) => {
                    return Err(ToolError::execution(format!(
                        "`{}` holds the symbolic link {link}, which moved to `{}` would lead outside the allowed directories; move it separately, or delete it, then move the directory",
                        source.shown, target.shown
                    )));
                }
                Err(CopyError::TooMany) => {
                    return Err(ToolError::execution(format!(
                        "`{}` holds more than {MAX_MOVE_CHECKED} entries, too many to check the links inside before a move; move parts of it",
                        source.shown
                    )));
                }
                Err(CopyError::Io(e, _, rel)) => {
                    return Err(io_error(
                        &format!("{}/{}", source.shown, rel.display()),
                        &e,
                    ));
                }
                Err(CopyError::Stopped | CopyError::Special(_)) => {
                    return Err(ToolError::execution("stopped: the call ended"));
                }
            }
        }
        if meta.is_symlink() {
            // A relative link means something else in another directory.
            let link = source
                .root
                .read_link_contents(&source.rel)
                .map_err(|e| source.error(&e))?;
            if let Err(why) = copy::judge_link(ctx, &target.full, &link) {
                return Err(ToolError::execution(format!(
                    "`{}` is a symbolic link to `{}`; moved to `{}`, {why}. Move what it points at instead, or delete the link",
                    source.shown,
                    link.display(),
                    target.shown
                )));
            }
        }
        vacate(&target, overwrite)?;
        let (from_dir, from_name) = source.parent_and_name()?;
        let (to_dir, to_name) = target.parent_and_name()?;
        from_dir
            .rename(&from_name, &to_dir, &to_name)
            .map_err(|e| source.error(&e))?;
        Ok(Changed::new(
            &target,
            format!("moved from `{}`", source.shown),
        ))
    })
    .await
}

/// Copy a file, or a directory with everything in it.
///
/// Symbolic links in a directory are copied as they are written when they lead inside the
/// allowed directories from their new place; others are left out and named in the result.
#[tool(crate = crate, register = false)]
pub(crate) async fn file_copy(
    /// What to copy
    from: String,
    /// The path of the copy
    to: String,
    /// Replace what is at `to` already
    #[arg(default = false)]
    overwrite: bool,
    limits: State<FileOps>,
    ctx: &ToolContext,
) -> Result<Changed, ToolError> {
    job::run(ctx, limits.time_limit, move |ctx, stop| {
        let source = locate(ctx, &from)?;
        let target = locate(ctx, &to)?;
        refuse_root(&target)?;
        if target.full.starts_with(&source.full) {
            return Err(ToolError::execution(format!(
                "`{}` is inside `{}`: a directory cannot be copied into itself",
                target.shown, source.shown
            )));
        }
        let meta = source
            .root
            .metadata(&source.rel)
            .map_err(|e| source.error(&e))?;
        vacate(&target, overwrite)?;
        let failed = |err: CopyError| match err {
            CopyError::Io(e, side, rel) => {
                let place = if side == Side::From { &source } else { &target };
                if !meta.is_dir() || rel == Path::new(".") {
                    place.error(&e)
                } else {
                    io_error(&format!("{}/{}", place.shown, rel.display()), &e)
                }
            }
            CopyError::TooMany => ToolError::execution(format!(
                "`{}` holds more than {MAX_COPY_ENTRIES} entries; copy parts of it",
                source.shown
            )),
            CopyError::Special(e) => e.at(&source.shown, "file_copy"),
            CopyError::Stopped => ToolError::execution("stopped: the call ended"),
        };
        if !meta.is_dir() {
            let (from_dir, from_name) = source.parent_and_name()?;
            let (to_dir, to_name) = target.parent_and_name()?;
            let bytes = copy::copy_file(
                &from_dir,
                Path::new(&from_name),
                Follow::Yes,
                &to_dir,
                Path::new(&to_name),
                stop,
            )
            .map_err(failed)?;
            return Ok(Changed::new(
                &target,
                format!("copied `{}` ({bytes} bytes)", source.shown),
            ));
        }
        let from_dir = source
            .root
            .open_dir(&source.rel)
            .map_err(|e| source.error(&e))?;
        target
            .root
            .create_dir(&target.rel)
            .map_err(|e| target.error(&e))?;
        let to_dir = target
            .root
            .open_dir(&target.rel)
            .map_err(|e| target.error(&e))?;
        let copied = copy::copy_dir(ctx, &from_dir, &to_dir, &target.full, &source.shown, stop);
        let copied = match copied {
            Ok(copied) => copied,
            Err(err) => {
                // Nothing half-copied is left behind.
                let _ = target.root.remove_dir_all(&target.rel);
                return Err(failed(err));
            }
        };
        Ok(Changed::new(
            &target,
            format!(
                "copied the directory `{}` ({} entries){}",
                source.shown,
                copied.entries,
                copied.left_out_text()
            ),
        ))
    })
    .await
}

/// Delete a file, or a directory (with `recursive`, and everything in it).
#[tool(crate = crate, register = false, confirm, destructive, idempotent)]
pub(crate) async fn file_delete(
    /// What to delete
    path: String,
    /// Delete a directory that is not empty, with everything in it
    #[arg(default = false)]
    recursive: bool,
    limits: State<FileOps>,
    ctx: &ToolContext,
) -> Result<Changed, ToolError> {
    job::run(ctx, limits.time_limit, move |ctx, _| {
        let place = locate_entry(ctx, &path)?;
        refuse_root(&place)?;
        let meta = place
            .root
            .symlink_metadata(&place.rel)
            .map_err(|e| place.error(&e))?;
        let removed = if !meta.is_dir() {
            place.root.remove_file(&place.rel)
        } else if recursive {
            place.root.remove_dir_all(&place.rel)
        } else {
            place.root.remove_dir(&place.rel)
        };
        removed.map_err(|e| place.error(&e))?;
        let what = if meta.is_dir() {
            "the directory"
        } else {
            "the file"
        };
        Ok(Changed::new(&place, format!("deleted {what}")))
    })
    .await
}

/// Create a directory, with any missing parents. Nothing happens when it exists.
#[tool(crate = crate, register = false, idempotent)]
pub(crate) async fn file_mkdir(
    /// The directory to create
    path: String,
    limits: State<FileOps>,
    ctx: &ToolContext,
) -> Result<Changed, ToolError> {
    job::run(ctx, limits.time_limit, move |ctx, _| {
        let place = locate(ctx, &path)?;
        if place.is_root() {
            return Ok(Changed::new(&place, "exists already"));
        }
        place
            .root
            .create_dir_all(&place.rel)
            .map_err(|e| place.error(&e))?;
        Ok(Changed::new(&place, "created the directory"))
    })
    .await
}

fn refuse_root(place: &Place) -> Result<(), ToolError> {
    if place.is_root() {
        Err(ToolError::execution(format!(
            "`{}` is an allowed directory itself; it cannot be moved, replaced or deleted",
            place.shown
        )))
    } else {
        Ok(())
    }
}

/// Makes room at `target`: an error when something is there and `overwrite` is not set,
/// else removes it.
fn vacate(target: &Place, overwrite: bool) -> Result<(), ToolError> {
    let existing = match target.root.symlink_metadata(&target.rel) {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return target.make_parent(),
        Err(e) => return Err(target.error(&e)),
    };
    if !overwrite {
        return Err(ToolError::execution(format!(
            "`{}` exists already; set `overwrite: true` to replace it",
            target.shown
        )));
    }
    let removed = if existing.is_dir() {
        target.root.remove_dir_all(&target.rel)
    } else {
        target.root.remove_file(&target.rel)
    };
    removed.map_err(|e| target.error(&e))
}

fn too_big(ctx: &ToolContext, size: usize, max: usize) -> ToolError {
    ToolError::invalid_args(
        ctx.tool_name().unwrap_or_default(),
        vec![
            ArgumentProblem::new("", format!("a file of at most {max} bytes"))
                .received(format!("{size} bytes")),
        ],
    )
}
