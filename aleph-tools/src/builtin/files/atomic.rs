//! Writing a file whole or not at all: the bytes go to a temporary file beside it, which is
//! then renamed over it, so a reader sees the old content or the new, never a part.

use std::ffi::OsStr;
use std::io::{self, Write};
use std::sync::atomic::{AtomicU64, Ordering};

use cap_std::fs::{Dir, OpenOptions};

/// Distinguishes the temporary files of concurrent writes within this process; the process
/// id distinguishes processes.
static NEXT_TEMP: AtomicU64 = AtomicU64::new(0);

/// Writes `contents` as `name` in `dir`, atomically. An existing file keeps its
/// permissions; a new one gets the usual `0o666` less the process's umask. Nothing is written
/// where `name` is a symbolic link (the caller refuses those first; this catches one swapped
/// in meanwhile) or anything but a regular file.
pub(crate) fn write(dir: &Dir, name: &OsStr, contents: &[u8]) -> io::Result<()> {
    write_as(dir, name, contents, true)
}

/// As [`write`], but only where nothing is named `name` yet: a file that appears meanwhile
/// is kept, and the write fails with [`io::ErrorKind::AlreadyExists`].
#[cfg(feature = "browser")]
pub(crate) fn write_new(dir: &Dir, name: &OsStr, contents: &[u8]) -> io::Result<()> {
    write_as(dir, name, contents, false)
}

fn write_as(dir: &Dir, name: &OsStr, contents: &[u8], replace: bool) -> io::Result<()> {
    let existing = match dir.symlink_metadata(name) {
        Ok(meta) if meta.is_dir() => {
            return Err(io::Error::new(
                io::ErrorKind::IsADirectory,
                "is a directory",
            ));
        }
        Ok(meta) if meta.is_symlink() => {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "is a symbolic link; files are never written through links",
            ));
        }
        Ok(meta) if !meta.is_file() => {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "is not a regular file; only regular files are written",
            ));
        }
        Ok(_) if !replace => {
            return Err(io::Error::new(io::ErrorKind::AlreadyExists, "exists"));
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
        if replace {
            dir.rename(&temp_name, dir, name)
        } else {
            // A link fails where the name is taken, which a rename would replace.
            dir.hard_link(&temp_name, dir, name)
        }
    })();
    if written.is_err() || !replace {
        let _ = dir.remove_file(&temp_name);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;
    use cap_std::ambient_authority;

    #[test]
    fn a_new_file_is_written_only_where_the_name_is_free() {
        let scratch = tempfile::tempdir().unwrap();
        let dir = Dir::open_ambient_dir(scratch.path(), ambient_authority()).unwrap();
        write_as(&dir, OsStr::new("a.pdf"), b"first", false).unwrap();
        let taken = write_as(&dir, OsStr::new("a.pdf"), b"second", false).unwrap_err();
        assert_eq!(taken.kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(dir.read("a.pdf").unwrap(), b"first");
        write(&dir, OsStr::new("a.pdf"), b"third").unwrap();
        assert_eq!(dir.read("a.pdf").unwrap(), b"third");
        // Only the file: no temporary one is left beside it, whichever way it went.
        let names: Vec<_> = dir
            .entries()
            .unwrap()
            .map(|entry| entry.unwrap().file_name())
            .collect();
        assert_eq!(names, ["a.pdf"]);
    }
}
