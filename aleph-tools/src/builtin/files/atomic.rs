//! Writing a file whole or not at all: the bytes go to a temporary file beside it, which is
//! then renamed over it, so a reader sees the old content or the new, never a part.

use std::ffi::OsStr;
use std::io::{self, Write};
use std::sync::atomic::{AtomicU64, Ordering};

use cap_std::fs::{Dir, OpenOptions};

/// Distinguishes the temporary files of concurrent writes within this process; the process
/// id distinguishes processes.
static NEXT_TEMP: AtomicU64 = AtomicU64::new(0);

/// Writes `contents` as `name` in `dir`, atomically; an existing file keeps its permissions.
pub(crate) fn write(dir: &Dir, name: &OsStr, contents: &[u8]) -> io::Result<()> {
    let existing = match dir.symlink_metadata(name) {
        Ok(meta) if meta.is_dir() => {
            return Err(io::Error::new(
                io::ErrorKind::IsADirectory,
                "is a directory",
            ));
        }
        Ok(meta) => Some(meta.permissions()),
        Err(err) if err.kind() == io::ErrorKind::NotFound => None,
        Err(err) => return Err(err),
    };
    let temp = loop {
        let candidate = format!(
            ".{}.{}-{}.tmp",
            name.to_string_lossy(),
            std::process::id(),
            NEXT_TEMP.fetch_add(1, Ordering::Relaxed)
        );
        match dir.open_with(&candidate, OpenOptions::new().write(true).create_new(true)) {
            Ok(file) => break (candidate, file),
            Err(err) if err.kind() == io::ErrorKind::AlreadyExists => {}
            Err(err) => return Err(err),
        }
    };
    let (temp_name, mut file) = temp;
    let written = (|| {
        file.write_all(contents)?;
        if let Some(permissions) = existing {
            file.set_permissions(permissions)?;
        }
        file.sync_all()?;
        drop(file);
        dir.rename(&temp_name, dir, name)
    })();
    if written.is_err() {
        let _ = dir.remove_file(&temp_name);
    }
    written
}
