//! The tools that change files: `file_write`, `file_edit`, `file_move`, `file_copy`,
//! `file_delete`, `file_mkdir`.

use std::io;

use cap_std::fs::Dir;

use super::{Changed, FileOps, atomic};
use crate::builtin::workspace::{Place, locate, locate_entry};
use crate::context::{State, ToolContext};
use crate::error::{ArgumentProblem, ToolError};
use crate::tool;

/// The most entries one `file_copy` of a directory copies.
const MAX_COPY_ENTRIES: usize = 10_000;

/// Write a text file, replacing what it held; missing parent directories are created.
///
/// The file is written whole or not at all. To change part of a file, use `file_edit`.
#[tool(crate = crate, register = false, confirm, destructive, idempotent)]
pub(crate) fn file_write(
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
    let place = locate(ctx, &path)?;
    if place.is_root() {
        return Err(ToolError::execution(format!(
            "`{}` is an allowed directory, not a file",
            place.shown
        )));
    }
    if let Some(parent) = place.rel.parent().filter(|p| !p.as_os_str().is_empty()) {
        place
            .root
            .create_dir_all(parent)
            .map_err(|e| place.error(&e))?;
    }
    let (dir, name) = place.parent_and_name()?;
    atomic::write(&dir, &name, content.as_bytes()).map_err(|e| place.error(&e))?;
    Ok(Changed::new(
        &place,
        format!("wrote {} bytes", content.len()),
    ))
}

/// Replace an exact piece of text in a file.
///
/// `old_text` must appear in the file exactly once (copy it with its whitespace and enough
/// surrounding lines to be unique), or set `replace_all` to replace every occurrence.
#[tool(crate = crate, register = false, destructive)]
pub(crate) fn file_edit(
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
    let place = locate(ctx, &path)?;
    let bytes = place.root.read(&place.rel).map_err(|e| place.error(&e))?;
    let Ok(text) = String::from_utf8(bytes) else {
        return Err(ToolError::execution(format!(
            "`{}` is not UTF-8 text; file_edit changes text files only",
            place.shown
        )));
    };
    let count = text.matches(&old_text).count();
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
        1 => text.replacen(&old_text, &new_text, 1),
        _ if replace_all => text.replace(&old_text, &new_text),
        n => {
            return Err(ToolError::execution(format!(
                "`old_text` appears {n} times in `{}`; add surrounding lines to make it unique, or set `replace_all: true` to replace all {n}",
                place.shown
            )));
        }
    };
    if edited.len() > limits.max_write_bytes {
        return Err(too_big(ctx, edited.len(), limits.max_write_bytes));
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
pub(crate) fn file_move(
    /// What to move
    from: String,
    /// Where to put it (the new path, not the directory to move it into)
    to: String,
    /// Replace what is at `to` already
    #[arg(default = false)]
    overwrite: bool,
    ctx: &ToolContext,
) -> Result<Changed, ToolError> {
    let source = locate_entry(ctx, &from)?;
    let target = locate(ctx, &to)?;
    refuse_root(&source)?;
    refuse_root(&target)?;
    source
        .root
        .symlink_metadata(&source.rel)
        .map_err(|e| source.error(&e))?;
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
}

/// Copy a file, or a directory with everything in it.
#[tool(crate = crate, register = false)]
pub(crate) fn file_copy(
    /// What to copy
    from: String,
    /// The path of the copy
    to: String,
    /// Replace what is at `to` already
    #[arg(default = false)]
    overwrite: bool,
    ctx: &ToolContext,
) -> Result<Changed, ToolError> {
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
    if meta.is_dir() {
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
        let mut budget = MAX_COPY_ENTRIES;
        copy_dir(&from_dir, &to_dir, &mut budget).map_err(|e| match e {
            CopyError::Io(e) => source.error(&e),
            CopyError::TooMany => ToolError::execution(format!(
                "`{}` holds more than {MAX_COPY_ENTRIES} entries; copy parts of it",
                source.shown
            )),
        })?;
        Ok(Changed::new(
            &target,
            format!(
                "copied the directory `{}` ({} entries)",
                source.shown,
                MAX_COPY_ENTRIES - budget
            ),
        ))
    } else {
        let (from_dir, from_name) = source.parent_and_name()?;
        let (to_dir, to_name) = target.parent_and_name()?;
        let bytes = from_dir
            .copy(&from_name, &to_dir, &to_name)
            .map_err(|e| source.error(&e))?;
        Ok(Changed::new(
            &target,
            format!("copied `{}` ({bytes} bytes)", source.shown),
        ))
    }
}

enum CopyError {
    Io(io::Error),
    TooMany,
}

impl From<io::Error> for CopyError {
    fn from(err: io::Error) -> Self {
        Self::Io(err)
    }
}

/// Copies everything in `from` into `to`; symbolic links are copied as links.
fn copy_dir(from: &Dir, to: &Dir, budget: &mut usize) -> Result<(), CopyError> {
    for entry in from.entries()? {
        let entry = entry?;
        *budget = budget.checked_sub(1).ok_or(CopyError::TooMany)?;
        let name = entry.file_name();
        let kind = entry.file_type()?;
        if kind.is_dir() {
            to.create_dir(&name)?;
            copy_dir(&entry.open_dir()?, &to.open_dir(&name)?, budget)?;
        } else if kind.is_symlink() {
            let target = from.read_link_contents(&name)?;
            to.symlink_contents(target, &name)?;
        } else {
            from.copy(&name, to, &name)?;
        }
    }
    Ok(())
}

/// Delete a file, or a directory (with `recursive`, and everything in it).
#[tool(crate = crate, register = false, confirm, destructive, idempotent)]
pub(crate) fn file_delete(
    /// What to delete
    path: String,
    /// Delete a directory that is not empty, with everything in it
    #[arg(default = false)]
    recursive: bool,
    ctx: &ToolContext,
) -> Result<Changed, ToolError> {
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
}

/// Create a directory, with any missing parents. Nothing happens when it exists.
#[tool(crate = crate, register = false, idempotent)]
pub(crate) fn file_mkdir(
    /// The directory to create
    path: String,
    ctx: &ToolContext,
) -> Result<Changed, ToolError> {
    let place = locate(ctx, &path)?;
    if place.is_root() {
        return Ok(Changed::new(&place, "exists already"));
    }
    place
        .root
        .create_dir_all(&place.rel)
        .map_err(|e| place.error(&e))?;
    Ok(Changed::new(&place, "created the directory"))
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
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            if let Some(parent) = target.rel.parent().filter(|p| !p.as_os_str().is_empty()) {
                target
                    .root
                    .create_dir_all(parent)
                    .map_err(|e| target.error(&e))?;
            }
            return Ok(());
        }
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
