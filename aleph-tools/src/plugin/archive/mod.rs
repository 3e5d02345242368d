//! Unpacking a plugin archive (`.tar.gz`, `.zip`) into an empty directory. Every entry is
//! read and judged before anything is written: absolute names, `..`, links and hard links
//! that lead out, device files, entries written through a link, more than
//! [`MAX_ENTRIES`] entries or [`MAX_UNPACKED`] bytes are refused, naming the entry or the
//! limit. Modes are clamped: no set-id or sticky bits, nothing writable by others.

mod plan;

use std::cell::Cell;
use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};
use std::rc::Rc;

use self::plan::{Kind, Plan};
use super::tree::MAX_ENTRIES;

/// The most an archive (or a directory installed by copy) may unpack to. A plugin is code
/// and a few assets; a larger archive is refused before it fills the disk.
pub(super) const MAX_UNPACKED: u64 = 1 << 30;

/// The most a tar entry's own headers (GNU long names, pax records) may take: the tar reader
/// holds them in memory, so they are bounded here.
const MAX_HEADERS: u64 = 256 * 1024;

/// The longest link target read from a zip entry.
const MAX_LINK: u64 = 4096;

/// Unpacks the `.tar.gz` archive `source` into the empty directory `into`: the whole archive
/// is read and judged first, then read again and written.
pub(super) fn unpack_tar(source: &Path, into: &Path) -> Result<(), String> {
    let mut plan = Plan::default();
    read_tar(source, |entry| {
        if let Some((raw, kind)) = tar_entry(entry)? {
            plan.admit(&raw, kind)?;
        }
        Ok(())
    })?;
    plan.check_links()?;
    // The second reading must find the same entries: what is written is what was judged.
    let mut again = Plan::default();
    let mut planned = plan.entries.iter();
    read_tar(source, |entry| {
        let Some((raw, kind)) = tar_entry(entry)? else {
            return Ok(());
        };
        if !again.admit(&raw, kind)? {
            return Ok(());
        }
        let (path, kind) = again.entries.last().ok_or_else(changed)?;
        if planned.next() != Some(&(path.clone(), kind.clone())) {
            return Err(changed());
        }
        make(into, path, kind, entry)
    })?;
    if planned.next().is_some() {
        return Err(changed());
    }
    Ok(())
}

type TarEntry<'a> = tar::Entry<'a, Bounded<flate2::read::GzDecoder<BufReader<File>>>>;

/// Reads every entry of the tar archive, each entry's headers bounded by [`MAX_HEADERS`].
fn read_tar(
    source: &Path,
    mut each: impl FnMut(&mut TarEntry<'_>) -> Result<(), String>,
) -> Result<(), String> {
    let file = File::open(source).map_err(|e| format!("cannot open it: {e}"))?;
    let limit = Rc::new(Cell::new(MAX_HEADERS));
    let mut archive = tar::Archive::new(Bounded {
        inner: flate2::read::GzDecoder::new(BufReader::new(file)),
        read: 0,
        limit: Rc::clone(&limit),
    });
    let broken = |e: std::io::Error| {
        if e.to_string() == HEADERS_TOO_LARGE {
            format!(
                "an entry's headers (long names, pax records) take more than {} KiB",
                MAX_HEADERS >> 10
            )
        } else {
            format!("it is not a readable .tar.gz archive: {e}")
        }
    };
    // Every entry's data is read past, so every entry's size counts, whatever its kind.
    let mut declared = 0u64;
    for entry in archive.entries().map_err(broken)? {
        let mut entry = entry.map_err(broken)?;
        declared = declared.saturating_add(entry.size());
        if declared > MAX_UNPACKED {
            return Err(too_large());
        }
        // This entry's data, then at most the next entry's headers, may be read.
        let end = entry
            .raw_file_position()
            .saturating_add(entry.size().div_ceil(512) * 512);
        limit.set(end.saturating_add(MAX_HEADERS));
        each(&mut entry)?;
    }
    Ok(())
}

/// A tar entry's name and kind; `None` for a pax global header, which names nothing.
fn tar_entry(entry: &TarEntry<'_>) -> Result<Option<(PathBuf, Kind)>, String> {
    use tar::EntryType;
    let raw = bytes_path(&entry.path_bytes());
    let link = || {
        entry
            .link_name_bytes()
            .map(|bytes| bytes_path(&bytes))
            .ok_or_else(|| format!("its entry `{}` is a link with no target", raw.display()))
    };
    let kind = match entry.header().entry_type() {
        EntryType::Regular | EntryType::Continuous => Kind::File {
            size: entry.size(),
            executable: entry.header().mode().is_ok_and(|mode| mode & 0o111 != 0),
        },
        EntryType::Directory => Kind::Dir,
        EntryType::Symlink => Kind::Symlink(link()?),
        EntryType::Link => Kind::HardLink(link()?),
        EntryType::XGlobalHeader => return Ok(None),
        other => {
            let what = match other {
                EntryType::Char | EntryType::Block => "a device file",
                EntryType::Fifo => "a named pipe",
                EntryType::GNUSparse => "a sparse file",
                _ => "of a kind a plugin cannot hold",
            };
            return Err(format!(
                "its entry `{}` is {what}; a plugin holds files, directories and links",
                raw.display()
            ));
        }
    };
    Ok(Some((raw, kind)))
}

#[cfg(unix)]
fn bytes_path(bytes: &[u8]) -> PathBuf {
    use std::os::unix::ffi::OsStrExt;
    PathBuf::from(std::ffi::OsStr::from_bytes(bytes))
}

#[cfg(not(unix))]
fn bytes_path(bytes: &[u8]) -> PathBuf {
    PathBuf::from(String::from_utf8_lossy(bytes).into_owned())
}

/// Unpacks the `.zip` archive `source` into the empty directory `into`: its directory is
/// judged whole (link targets read) before anything is written.
pub(super) fn unpack_zip(source: &Path, into: &Path) -> Result<(), String> {
    let broken = |e: zip::result::ZipError| format!("it is not a readable .zip archive: {e}");
    let file = File::open(source).map_err(|e| format!("cannot open it: {e}"))?;
    let mut archive = zip::ZipArchive::new(BufReader::new(file)).map_err(broken)?;
    if archive.len() > MAX_ENTRIES {
        return Err(too_many());
    }
    let mut plan = Plan::default();
    let mut made = Vec::with_capacity(archive.len());
    for i in 0..archive.len() {
        let mut entry = archive.by_index(i).map_err(broken)?;
        let raw = PathBuf::from(entry.name().map_err(broken)?.as_ref());
        let kind = if entry.is_dir() {
            Kind::Dir
        } else if entry.is_symlink() {
            let mut target = Vec::new();
            (&mut entry)
                .take(MAX_LINK)
                .read_to_end(&mut target)
                .map_err(|e| format!("it is not a readable .zip archive: {e}"))?;
            Kind::Symlink(bytes_path(&target))
        } else {
            Kind::File {
                size: entry.size(),
                executable: entry.unix_mode().is_some_and(|mode| mode & 0o111 != 0),
            }
        };
        made.push(plan.admit(&raw, kind)?);
    }
    plan.check_links()?;
    let mut planned = plan.entries.iter();
    for (i, made) in made.into_iter().enumerate() {
        if !made {
            continue;
        }
        let (path, kind) = planned.next().ok_or_else(changed)?;
        let mut entry = archive.by_index(i).map_err(broken)?;
        make(into, path, kind, &mut entry)?;
    }
    Ok(())
}

/// Makes one judged entry under `into`, its data read from `data`.
fn make(into: &Path, path: &Path, kind: &Kind, data: &mut dyn Read) -> Result<(), String> {
    let target = into.join(path);
    let failed = |e: std::io::Error| format!("cannot write `{}`: {e}", path.display());
    if let Some(parent) = target.parent() {
        std::fs::create_dir_all(parent).map_err(failed)?;
    }
    match kind {
        Kind::Dir => {
            std::fs::create_dir_all(&target).map_err(failed)?;
            set_mode(&target, 0o755).map_err(failed)
        }
        Kind::File { size, executable } => {
            let mut file = create(&target, *executable).map_err(failed)?;
            let written = std::io::copy(&mut data.take(*size), &mut file).map_err(failed)?;
            let mut more = [0u8; 1];
            if written != *size || data.read(&mut more).map_err(failed)? != 0 {
                return Err(format!(
                    "its entry `{}` does not hold the {size} bytes it says it does",
                    path.display()
                ));
            }
            Ok(())
        }
        Kind::HardLink(original) => {
            let executable = is_executable(&into.join(original));
            let mut from = File::open(into.join(original)).map_err(failed)?;
            let mut file = create(&target, executable).map_err(failed)?;
            std::io::copy(&mut from, &mut file).map_err(failed)?;
            Ok(())
        }
        Kind::Symlink(to) => symlink(to, &target).map_err(failed),
    }
}

/// A new file (never one already there, nor through a link), `0644`, or `0755` when
/// `executable`.
fn create(path: &Path, executable: bool) -> std::io::Result<File> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(if executable { 0o755 } else { 0o644 });
    }
    #[cfg(not(unix))]
    let _ = executable;
    options.open(path)
}

/// The mode an installed file gets: `0755` when any execute bit is set, else `0644`; no
/// set-id or sticky bit, nothing writable by others.
pub(super) fn clamped_mode(mode: u32) -> u32 {
    if mode & 0o111 == 0 { 0o644 } else { 0o755 }
}

#[cfg(unix)]
fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.permissions().mode() & 0o111 != 0)
}

#[cfg(not(unix))]
fn is_executable(_: &Path) -> bool {
    false
}

/// Sets `path`'s permission bits to `mode` (on Unix).
pub(super) fn set_mode(path: &Path, mode: u32) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
    }
    #[cfg(not(unix))]
    {
        let _ = (path, mode);
        Ok(())
    }
}

#[cfg(unix)]
fn symlink(to: &Path, at: &Path) -> std::io::Result<()> {
    std::os::unix::fs::symlink(to, at)
}

#[cfg(not(unix))]
fn symlink(_: &Path, _: &Path) -> std::io::Result<()> {
    Err(std::io::Error::other(
        "symbolic links in archives are unpacked on Unix only",
    ))
}

fn too_large() -> String {
    format!(
        "it unpacks to more than {} MB, more than a plugin may be",
        MAX_UNPACKED >> 20
    )
}

fn too_many() -> String {
    format!("it has more than {MAX_ENTRIES} entries, more than a plugin may")
}

fn changed() -> String {
    "it changed while it was read; install it again".to_owned()
}

const HEADERS_TOO_LARGE: &str = "a tar entry's headers are over their limit";

/// A reader that reads no further than a limit its owner moves along.
struct Bounded<R> {
    inner: R,
    read: u64,
    limit: Rc<Cell<u64>>,
}

impl<R: Read> Read for Bounded<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let left = self.limit.get().saturating_sub(self.read);
        if left == 0 && !buf.is_empty() {
            return Err(std::io::Error::other(HEADERS_TOO_LARGE));
        }
        let take = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
        let n = self.inner.read(&mut buf[..take])?;
        self.read += n as u64;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_are_clamped() {
        assert_eq!(clamped_mode(0o4777), 0o755);
        assert_eq!(clamped_mode(0o2666), 0o644);
        assert_eq!(clamped_mode(0o100), 0o755);
        assert_eq!(clamped_mode(0o600), 0o644);
    }
}
