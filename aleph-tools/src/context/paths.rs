//! Resolving a path a tool was given against the call's working directory, and keeping it
//! inside the allowed directories.

use std::ffi::OsString;
use std::io;
use std::path::{Component, Path, PathBuf};

use crate::error::{ArgumentProblem, ToolError};

/// Paths longer than this are refused before the file system sees them.
const MAX_PATH_BYTES: usize = 4096;

/// Resolves `path` (see [`ToolContext::resolve_path`](super::ToolContext::resolve_path)).
pub(super) fn resolve(
    tool: &str,
    path: &Path,
    working_dir: Option<&Path>,
    allowed: &[PathBuf],
) -> Result<PathBuf, ToolError> {
    let shown = path.display().to_string();
    let invalid = |expected: String, received: String| {
        ToolError::invalid_args(
            tool,
            vec![ArgumentProblem::new("", expected).received(received)],
        )
    };
    let bytes = path.as_os_str().as_encoded_bytes();
    if bytes.is_empty() {
        return Err(invalid(
            "a file or directory path".to_owned(),
            "an empty path".to_owned(),
        ));
    }
    if bytes.contains(&0) {
        return Err(invalid(
            "a path without NUL bytes".to_owned(),
            format!("the path \"{}\"", shown.escape_debug()),
        ));
    }
    if bytes.len() > MAX_PATH_BYTES {
        return Err(invalid(
            format!("a path of at most {MAX_PATH_BYTES} bytes"),
            format!("a path of {} bytes", bytes.len()),
        ));
    }
    let joined = if path.is_absolute() {
        path.to_path_buf()
    } else {
        let base = match working_dir {
            Some(dir) => dir.to_path_buf(),
            None => std::env::current_dir()
                .map_err(|e| ToolError::execution(format!("no working directory: {e}")))?,
        };
        base.join(path)
    };
    let resolved = canonicalize_lenient(&joined)
        .map_err(|e| ToolError::execution(format!("the path `{shown}` cannot be resolved: {e}")))?;
    if allowed.is_empty() {
        return Ok(resolved);
    }
    let inside = allowed
        .iter()
        .any(|root| canonicalize_lenient(root).is_ok_and(|root| resolved.starts_with(root)));
    if inside {
        Ok(resolved)
    } else {
        let roots: Vec<String> = allowed
            .iter()
            .map(|r| format!("`{}`", r.display()))
            .collect();
        Err(ToolError::permission_denied(
            tool,
            format!(
                "the path `{shown}` is outside the allowed directories ({})",
                roots.join(", ")
            ),
        ))
    }
}

/// Canonicalizes a path that may not exist yet: the longest existing ancestor is resolved
/// by the file system (symlinks included) and the missing rest is appended. A missing part
/// followed by `..` is refused: it cannot be resolved without guessing.
fn canonicalize_lenient(path: &Path) -> io::Result<PathBuf> {
    let mut existing = path.to_path_buf();
    let mut missing: Vec<OsString> = Vec::new();
    loop {
        match std::fs::canonicalize(&existing) {
            Ok(mut resolved) => {
                resolved.extend(missing.iter().rev());
                return Ok(resolved);
            }
            Err(err) if err.kind() == io::ErrorKind::NotFound => {
                match existing.components().next_back() {
                    Some(Component::Normal(name)) => {
                        missing.push(name.to_owned());
                        existing.pop();
                    }
                    Some(Component::ParentDir) => {
                        return Err(io::Error::new(
                            io::ErrorKind::InvalidInput,
                            "`..` follows a part of the path that does not exist",
                        ));
                    }
                    _ => return Err(err),
                }
            }
            Err(err) => return Err(err),
        }
    }
}
