//! Where the built-in tools may touch the file system: the call's allowed directories (its
//! working directory when it has none), each opened as a capability, so that a path checked
//! once cannot be redirected outside by a symbolic link swapped in before it is used.

use std::io;
use std::path::{Component, Path, PathBuf};

use cap_std::ambient_authority;
use cap_std::fs::Dir;

use crate::context::ToolContext;
use crate::error::ToolError;

/// A path a tool was given, checked: the allowed directory it lies in, opened, and the path
/// below it.
pub(crate) struct Place {
    /// The allowed directory, opened: every operation goes through it, and no path taken
    /// from it resolves outside it, whatever the file system does meanwhile.
    pub root: Dir,
    /// The path below `root`, canonical when it was checked (`.` for the root itself).
    pub rel: PathBuf,
    /// The whole canonical path.
    pub full: PathBuf,
    /// The path as the model should write it back: relative to the working directory when
    /// it lies inside it, absolute otherwise.
    pub shown: String,
}

impl Place {
    /// Whether this is the allowed directory itself.
    pub fn is_root(&self) -> bool {
        self.rel == Path::new(".")
    }

    /// The allowed directory's own path.
    pub fn root_path(&self) -> &Path {
        let depth = if self.is_root() {
            0
        } else {
            self.rel.components().count()
        };
        self.full.ancestors().nth(depth).unwrap_or(&self.full)
    }

    /// The whole path of `rel`, a path below the allowed directory.
    pub fn full_path(&self, rel: &Path) -> PathBuf {
        self.root_path()
            .join(rel)
            .components()
            .filter(|part| !matches!(part, Component::CurDir))
            .collect()
    }

    /// Makes the directories above the path that are missing.
    pub fn make_parent(&self) -> Result<(), ToolError> {
        match self.rel.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => {
                self.root.create_dir_all(parent).map_err(|e| self.error(&e))
            }
            _ => Ok(()),
        }
    }

    /// The name and parent of the path, for operations that replace an entry in its
    /// directory.
    pub fn parent_and_name(&self) -> Result<(Dir, std::ffi::OsString), ToolError> {
        let name = self
            .rel
            .file_name()
            .ok_or_else(|| ToolError::execution(format!("`{}` names no file", self.shown)))?
            .to_owned();
        let parent = match self.rel.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => {
                self.root.open_dir(parent).map_err(|e| self.error(&e))?
            }
            _ => self.root.try_clone().map_err(|e| self.error(&e))?,
        };
        Ok((parent, name))
    }

    /// A tool error for an I/O error met at this path, saying what to fix.
    pub fn error(&self, err: &io::Error) -> ToolError {
        io_error(&self.shown, err)
    }
}

/// A tool error for an I/O error met at `shown`.
pub(crate) fn io_error(shown: &str, err: &io::Error) -> ToolError {
    let message = match err.kind() {
        io::ErrorKind::NotFound => format!("`{shown}` does not exist"),
        io::ErrorKind::AlreadyExists => format!("`{shown}` already exists"),
        io::ErrorKind::NotADirectory => format!("a part of `{shown}` is not a directory"),
        io::ErrorKind::IsADirectory => format!("`{shown}` is a directory"),
        io::ErrorKind::DirectoryNotEmpty => format!(
            "the directory `{shown}` is not empty; pass `recursive: true` to delete it with its contents"
        ),
        io::ErrorKind::CrossesDevices => {
            format!("`{shown}` cannot be moved to another file system; copy it, then delete it")
        }
        _ if escaped(err) => format!(
            "`{shown}` leads outside the allowed directories (a symbolic link on the way points out, or was swapped in while the call ran)"
        ),
        io::ErrorKind::PermissionDenied => {
            format!("the file system refuses access to `{shown}`")
        }
        _ => format!("`{shown}`: {err}"),
    };
    ToolError::execution(message)
}

/// Whether a capability refused a path because it resolved outside its directory (`cap-std`
/// says so with this message, the kernel's `EXDEV` from `openat2` included).
fn escaped(err: &io::Error) -> bool {
    err.kind() == io::ErrorKind::PermissionDenied
        && err.to_string().contains("outside of the filesystem")
}

/// The directories a call's file tools may touch: its allowed directories, or its working
/// directory (the process's when it has none) when it has none, canonical.
pub(crate) fn roots(ctx: &ToolContext) -> Result<Vec<PathBuf>, ToolError> {
    let given: Vec<PathBuf> = if ctx.allowed_paths().is_empty() {
        vec![base_dir(ctx)?]
    } else {
        ctx.allowed_paths().to_vec()
    };
    Ok(given
        .iter()
        .filter_map(|root| std::fs::canonicalize(root).ok())
        .collect())
}

/// The call's working directory, or the process's.
fn base_dir(ctx: &ToolContext) -> Result<PathBuf, ToolError> {
    match ctx.working_dir() {
        Some(dir) => Ok(dir.to_path_buf()),
        None => std::env::current_dir()
            .map_err(|e| ToolError::execution(format!("no working directory: {e}"))),
    }
}

/// Resolves and checks `path` (as [`ToolContext::resolve_path`] does, bounded by
/// [`roots`]), and opens the allowed directory it lies in.
pub(crate) fn locate(ctx: &ToolContext, path: &str) -> Result<Place, ToolError> {
    let roots = roots(ctx)?;
    if roots.is_empty() {
        return Err(ToolError::execution(
            "none of the allowed directories exists, so no path can be used",
        ));
    }
    let bounded;
    let ctx = if ctx.allowed_paths().is_empty() {
        bounded = ctx.clone().with_allowed_paths(roots.iter().cloned());
        &bounded
    } else {
        ctx
    };
    let full = ctx.resolve_path(path)?;
    let root_path = roots
        .iter()
        .filter(|root| full.starts_with(root))
        .max_by_key(|root| root.as_os_str().len())
        .ok_or_else(|| {
            ToolError::permission_denied(
                ctx.tool_name().unwrap_or_default(),
                format!("the path `{path}` is outside the allowed directories"),
            )
        })?;
    // `root_path` was chosen as a prefix of `full`.
    let rel = full.strip_prefix(root_path).unwrap_or(Path::new("."));
    let rel = if rel.as_os_str().is_empty() {
        PathBuf::from(".")
    } else {
        rel.to_path_buf()
    };
    let root = Dir::open_ambient_dir(root_path, ambient_authority())
        .map_err(|e| io_error(&root_path.display().to_string(), &e))?;
    let shown = shown(ctx, &full);
    Ok(Place {
        root,
        rel,
        full,
        shown,
    })
}

/// As [`locate`], except that a symbolic link at the end of `path` is the place itself, not
/// where it points: what deleting or moving a link acts on.
pub(crate) fn locate_entry(ctx: &ToolContext, path: &str) -> Result<Place, ToolError> {
    let given = Path::new(path);
    let (Some(parent), Some(Component::Normal(name))) =
        (given.parent(), given.components().next_back())
    else {
        return locate(ctx, path);
    };
    let parent = if parent.as_os_str().is_empty() {
        Path::new(".")
    } else {
        parent
    };
    let Some(parent) = parent.to_str() else {
        return locate(ctx, path);
    };
    let mut place = locate(ctx, parent)?;
    place.rel = if place.is_root() {
        PathBuf::from(name)
    } else {
        place.rel.join(name)
    };
    place.full.push(name);
    place.shown = shown(ctx, &place.full);
    Ok(place)
}

/// Whether `path` (absolute) lies inside the call's allowed directories, the links on its
/// way followed as far as it exists.
pub(crate) fn inside_roots(ctx: &ToolContext, path: &Path) -> bool {
    let Ok(roots) = roots(ctx) else {
        return false;
    };
    !roots.is_empty()
        && ctx
            .clone()
            .with_allowed_paths(roots)
            .resolve_path(path)
            .is_ok()
}

/// `full` as the model should write it: relative to the working directory when inside it.
pub(crate) fn shown(ctx: &ToolContext, full: &Path) -> String {
    let base = base_dir(ctx)
        .ok()
        .and_then(|dir| std::fs::canonicalize(dir).ok());
    match base
        .as_deref()
        .and_then(|base| full.strip_prefix(base).ok())
    {
        Some(rel) if rel.as_os_str().is_empty() => ".".to_owned(),
        Some(rel) => rel.display().to_string(),
        None => full.display().to_string(),
    }
}
