//! Opening a file to read it only when it is a regular file. A FIFO, socket or device is
//! refused, judged on the opened handle (what was opened, whatever the path named a moment
//! before), and the open never waits on one: a FIFO is opened without blocking, a device is
//! refused before it is opened when the path already says what it is.

use std::io::{self, Read};
use std::path::Path;

use cap_std::fs::{Dir, OpenOptions};

use crate::error::ToolError;

/// What a path holds when it is not a regular file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Special {
    Directory,
    Link,
    Fifo,
    Socket,
    CharDevice,
    BlockDevice,
    Other,
}

impl Special {
    /// The kind in words: `a FIFO (named pipe)`.
    pub fn describe(self) -> &'static str {
        match self {
            Self::Directory => "a directory",
            Self::Link => "a symbolic link",
            Self::Fifo => "a FIFO (named pipe)",
            Self::Socket => "a socket",
            Self::CharDevice => "a character device",
            Self::BlockDevice => "a block device",
            Self::Other => "not a regular file",
        }
    }
}

/// The [`Special`] kind of a file type (`None` for a regular file): the same questions asked
/// of `cap-std`'s and `std`'s types, which answer them alike.
macro_rules! special_of {
    ($kind:ident) => {{
        if $kind.is_file() {
            return None;
        }
        if $kind.is_dir() {
            return Some(Special::Directory);
        }
        if $kind.is_symlink() {
            return Some(Special::Link);
        }
        #[cfg(unix)]
        {
            if $kind.is_fifo() {
                return Some(Special::Fifo);
            }
            if $kind.is_socket() {
                return Some(Special::Socket);
            }
            if $kind.is_char_device() {
                return Some(Special::CharDevice);
            }
            if $kind.is_block_device() {
                return Some(Special::BlockDevice);
            }
        }
        Some(Special::Other)
    }};
}

/// What a path looked up through a capability holds, unless a regular file.
fn special_seen(kind: cap_std::fs::FileType) -> Option<Special> {
    #[cfg(unix)]
    use cap_std::fs::FileTypeExt as _;
    special_of!(kind)
}

/// What an opened handle is, unless a regular file.
fn special_opened(kind: std::fs::FileType) -> Option<Special> {
    #[cfg(unix)]
    use std::os::unix::fs::FileTypeExt as _;
    special_of!(kind)
}

/// Why a file was not opened for reading.
#[derive(Debug)]
pub(super) enum OpenError {
    /// The file system refused.
    Io(io::Error),
    /// It is there, but not a regular file.
    Special(Special),
}

impl OpenError {
    /// The error the model sees for the file `shown`, which `tool` tried to read.
    pub fn at(self, shown: &str, tool: &str) -> ToolError {
        match self {
            Self::Io(err) => crate::builtin::workspace::io_error(shown, &err),
            Self::Special(Special::Directory) => {
                ToolError::execution(format!("`{shown}` is a directory; list it with file_list"))
            }
            Self::Special(special) => ToolError::execution(format!(
                "`{shown}` is {}, not a regular file; {tool} reads regular files only",
                special.describe()
            )),
        }
    }
}

/// Whether a link at the end of the path is followed (within the directory's bounds) or
/// refused as [`Special::Link`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Follow {
    Yes,
    No,
}

/// Opens `rel` below `dir` for reading when it is a regular file, with its metadata (read
/// from the handle).
pub(super) fn open_regular(
    dir: &Dir,
    rel: &Path,
    follow: Follow,
) -> Result<(std::fs::File, std::fs::Metadata), OpenError> {
    // What the path holds now: a device is refused before it is opened (opening some has
    // effects). The handle is checked again below; this look is only a courtesy.
    let seen = match follow {
        Follow::Yes => dir.metadata(rel),
        Follow::No => dir.symlink_metadata(rel),
    }
    .map_err(OpenError::Io)?;
    if let Some(special) = special_seen(seen.file_type()) {
        return Err(OpenError::Special(special));
    }
    let mut options = OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use cap_std::fs::OpenOptionsExt as _;
        use nix::fcntl::OFlag;
        // A FIFO swapped in opens at once instead of waiting for a writer; a terminal never
        // becomes the process's.
        let mut flags = OFlag::O_NONBLOCK | OFlag::O_NOCTTY;
        if follow == Follow::No {
            flags |= OFlag::O_NOFOLLOW;
        }
        options.custom_flags(flags.bits());
    }
    let file = match dir.open_with(rel, &options) {
        Ok(file) => file.into_std(),
        Err(err) => return Err(opened_something_else(err, follow)),
    };
    let meta = file.metadata().map_err(OpenError::Io)?;
    if let Some(special) = special_opened(meta.file_type()) {
        return Err(OpenError::Special(special));
    }
    Ok((file, meta))
}

/// The error of an open that found something other than a regular file: a socket (which
/// cannot be opened), a link where none is followed.
fn opened_something_else(err: io::Error, follow: Follow) -> OpenError {
    #[cfg(unix)]
    {
        use nix::errno::Errno;
        match err.raw_os_error().map(Errno::from_raw) {
            Some(Errno::ENXIO) => return OpenError::Special(Special::Socket),
            Some(Errno::ELOOP) if follow == Follow::No => {
                return OpenError::Special(Special::Link);
            }
            _ => {}
        }
    }
    #[cfg(not(unix))]
    let _ = follow;
    OpenError::Io(err)
}

/// Reads `file` whole when it holds at most `max` bytes; `Ok(Err(len))` with the length
/// reached when it holds more (it may have grown since its size was read).
pub(super) fn read_at_most(file: std::fs::File, max: u64) -> io::Result<Result<Vec<u8>, u64>> {
    let mut bytes = Vec::new();
    file.take(max.saturating_add(1)).read_to_end(&mut bytes)?;
    let len = bytes.len() as u64;
    Ok(if len > max { Err(len) } else { Ok(bytes) })
}
