//! Opening a file that must be a regular file (a manifest, a schema, a skill) without ever
//! waiting on what a path may lead to instead: a named pipe waits for a writer, a device
//! never ends.

use std::fs::File;
use std::io;
use std::path::Path;

/// Opens `path` for reading if it is a regular file, judged before it is opened (a device is
/// never opened) and again on the open handle (a pipe swapped in meanwhile was opened without
/// waiting, and is refused). Anything else is an `InvalidInput` error saying so.
pub(crate) fn open_regular(path: &Path) -> io::Result<File> {
    let not_regular = || {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "it is not a regular file (a directory, pipe, socket or device)",
        )
    };
    if !std::fs::metadata(path)?.is_file() {
        return Err(not_regular());
    }
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use nix::fcntl::OFlag;
        use std::os::unix::fs::OpenOptionsExt as _;
        // Not blocking: opening a pipe does not wait for a writer. It changes nothing for a
        // regular file's reads.
        options.custom_flags((OFlag::O_NONBLOCK | OFlag::O_NOCTTY).bits());
    }
    let file = options.open(path)?;
    if !file.metadata()?.is_file() {
        return Err(not_regular());
    }
    Ok(file)
}

#[cfg(all(test, unix))]
mod tests {
    use super::open_regular;

    #[test]
    fn only_regular_files_open() {
        let dir = std::env::temp_dir().join(format!("aleph-regular-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("a.txt");
        std::fs::write(&file, "text").unwrap();
        assert!(open_regular(&file).is_ok());
        let pipe = dir.join("pipe");
        nix::unistd::mkfifo(&pipe, nix::sys::stat::Mode::S_IRWXU).unwrap();
        let error = open_regular(&pipe).unwrap_err();
        assert!(error.to_string().contains("not a regular file"), "{error}");
        assert!(open_regular(&dir).is_err());
        assert!(open_regular(std::path::Path::new("/dev/zero")).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
