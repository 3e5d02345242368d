//! Installing a plugin from a directory or an archive into the first search path, and
//! uninstalling one.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use super::archive::{MAX_UNPACKED, clamped_mode, set_mode, unpack_tar, unpack_zip};
use super::error::PluginError;
use super::manager::{PluginInfo, PluginManager, has_manifest};
use super::manifest::PluginManifest;
use super::tree::{MAX_DEPTH, MAX_ENTRIES};

impl PluginManager {
    /// Installs the plugin at `source` (a plugin directory, or a `.tar.gz`, `.tgz` or `.zip`
    /// archive holding one at its top level or in its single top-level directory) into the
    /// first search path, as a directory named for its id, and loads it.
    ///
    /// Nothing lands in the search path until the manifest has been read and checked and the
    /// permission policy allows it; a plugin that then fails to load is removed again, so an
    /// install either serves the plugin or leaves no trace.
    ///
    /// An archive is judged whole before anything is written: an entry with an absolute
    /// name or `..`, a link or hard link that leads out of the plugin, a device file or named
    /// pipe, more than 50,000 entries or more than 1 GiB unpacked refuses the install,
    /// naming the entry or the limit. Files get mode `0644`, or `0755` when marked
    /// executable: no set-id bits, nothing writable by others. Whatever the source, the
    /// unpacked plugin holds no link that leads out of its directory.
    ///
    /// # Errors
    ///
    /// [`PluginError::Install`] when the source cannot be read or unpacked, is refused as
    /// above, holds no plugin, or its id is installed already; [`PluginError::Manifest`] or
    /// [`PluginError::Policy`] for a plugin that may not load; the load error of one that
    /// cannot.
    pub fn install(&self, source: &Path) -> Result<PluginInfo, PluginError> {
        let fail = |message: String| PluginError::Install {
            path: source.to_path_buf(),
            message,
        };
        let root = self
            .config()
            .resolved_search_paths()
            .into_iter()
            .next()
            .ok_or_else(|| fail("there is no search path to install into".into()))?;
        std::fs::create_dir_all(&root)
            .map_err(|e| fail(format!("cannot create `{}`: {e}", root.display())))?;
        let staging = Staging::new(&root).map_err(|e| {
            fail(format!(
                "cannot create a directory in `{}`: {e}",
                root.display()
            ))
        })?;
        unpack(source, &staging.0).map_err(fail)?;
        let found = plugin_root(&staging.0).map_err(fail)?;
        // Links are judged where they lead once unpacked, before the manifest is read.
        super::tree::check(&found).map_err(|problem| fail(problem.to_string()))?;
        // A broken manifest is reported where it is in the source, not in the staging area.
        let loaded = PluginManifest::read_dir(&found).map_err(|mut error| {
            if let Ok(inner) = error.file.strip_prefix(&staging.0) {
                error.file = source.join(inner);
            }
            error
        })?;
        let id = loaded.manifest.plugin.id.clone();
        self.config()
            .policy
            .grant(&id, &loaded.manifest.permissions, &found)
            .map_err(|message| PluginError::Policy {
                plugin: id.clone(),
                message,
            })?;
        if let Some(info) = self.get(&id) {
            return Err(fail(format!(
                "a plugin `{id}` is loaded already from `{}`; uninstall it first",
                info.dir.display()
            )));
        }
        let target = root.join(&id);
        if target.exists() {
            return Err(fail(format!(
                "`{}` exists already; uninstall plugin `{id}` first",
                target.display()
            )));
        }
        std::fs::rename(&found, &target)
            .map_err(|e| fail(format!("cannot move it to `{}`: {e}", target.display())))?;
        drop(staging);
        self.load(&target).inspect_err(|_| {
            if let Ok(dir) = std::fs::canonicalize(&target) {
                self.unload_dir(&dir);
            }
            let _ = std::fs::remove_dir_all(&target);
        })
    }

    /// Stops the plugin `id` and deletes its directory, which must lie directly in a search
    /// path (a plugin loaded from anywhere else is only [`unload`](Self::unload)ed by hand).
    /// The plugin need not be loaded: an installed one is found by its manifest. Returns the
    /// directory removed.
    ///
    /// # Errors
    ///
    /// [`PluginError::NotFound`] when no plugin has this id; [`PluginError::Uninstall`] when
    /// its directory is outside the search paths or cannot be removed.
    pub(crate) fn uninstall(&self, id: &str) -> Result<PathBuf, PluginError> {
        let dir = match self.get(id) {
            Some(info) => info.dir,
            None => self
                .discovered(id)
                .ok_or_else(|| PluginError::NotFound(id.to_owned()))?,
        };
        let roots: Vec<PathBuf> = self
            .config()
            .resolved_search_paths()
            .iter()
            .filter_map(|root| std::fs::canonicalize(root).ok())
            .collect();
        let real = std::fs::canonicalize(&dir).unwrap_or_else(|_| dir.clone());
        if !real
            .parent()
            .is_some_and(|parent| roots.iter().any(|r| r == parent))
        {
            return Err(PluginError::Uninstall {
                plugin: id.to_owned(),
                message: format!(
                    "`{}` is not directly in a search path, so it is not deleted; unload the plugin instead",
                    dir.display()
                ),
            });
        }
        self.unload_dir(&real);
        std::fs::remove_dir_all(&real).map_err(|e| PluginError::Uninstall {
            plugin: id.to_owned(),
            message: format!("cannot remove `{}`: {e}", real.display()),
        })?;
        tracing::info!(plugin = %id, dir = %real.display(), "plugin uninstalled");
        Ok(real)
    }
}

/// A hidden directory in a search path, removed when dropped. Hidden, so neither discovery
/// nor the watcher takes a half-unpacked plugin for a plugin.
struct Staging(PathBuf);

impl Staging {
    fn new(root: &Path) -> std::io::Result<Self> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let name = format!(
            ".installing-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let dir = root.join(name);
        std::fs::create_dir(&dir)?;
        Ok(Self(dir))
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Copies or unpacks `source` into the empty directory `into`.
#[allow(
    clippy::case_sensitive_file_extension_comparisons,
    reason = "the name is lowercased first"
)]
fn unpack(source: &Path, into: &Path) -> Result<(), String> {
    let meta = std::fs::metadata(source).map_err(|e| format!("cannot read it: {e}"))?;
    if meta.is_dir() {
        return Copy::default().tree(source, into, 0);
    }
    if !meta.is_file() {
        // A named pipe or a device would be read forever.
        return Err("it is neither a directory nor a regular file (a pipe or a device)".into());
    }
    let name = source
        .file_name()
        .map(|n| n.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    if name.ends_with(".tar.gz") || name.ends_with(".tgz") {
        unpack_tar(source, into)
    } else if name.ends_with(".zip") {
        unpack_zip(source, into)
    } else {
        Err("it is neither a directory nor a `.tar.gz`, `.tgz` or `.zip` archive".into())
    }
}

/// Copies a directory tree within the limits an archive has: links copied as links (judged
/// once copied, with the rest of the plugin), files with clamped modes, anything else
/// (a named pipe, a socket, a device) refused.
#[derive(Default)]
struct Copy {
    entries: usize,
    bytes: u64,
}

impl Copy {
    fn tree(&mut self, from: &Path, to: &Path, depth: usize) -> Result<(), String> {
        let failed =
            |path: &Path, e: std::io::Error| format!("cannot copy `{}`: {e}", path.display());
        if depth > MAX_DEPTH {
            return Err(format!(
                "`{}` nests more than {MAX_DEPTH} directories deep, deeper than a plugin may",
                from.display()
            ));
        }
        for entry in std::fs::read_dir(from).map_err(|e| failed(from, e))? {
            let entry = entry.map_err(|e| failed(from, e))?;
            let path = entry.path();
            self.entries += 1;
            if self.entries > MAX_ENTRIES {
                return Err(format!(
                    "it holds more than {MAX_ENTRIES} files, directories and links, more than a plugin may"
                ));
            }
            let target = to.join(entry.file_name());
            // The entry's own type: a link is not followed.
            let kind = entry.file_type().map_err(|e| failed(&path, e))?;
            if kind.is_dir() {
                std::fs::create_dir(&target).map_err(|e| failed(&path, e))?;
                self.tree(&path, &target, depth + 1)?;
            } else if kind.is_symlink() {
                let link = std::fs::read_link(&path).map_err(|e| failed(&path, e))?;
                #[cfg(unix)]
                std::os::unix::fs::symlink(link, &target).map_err(|e| failed(&path, e))?;
                #[cfg(not(unix))]
                let _ = link;
            } else if kind.is_file() {
                let meta = entry.metadata().map_err(|e| failed(&path, e))?;
                self.bytes = self.bytes.saturating_add(meta.len());
                if self.bytes > MAX_UNPACKED {
                    return Err(format!(
                        "it holds more than {} MB, more than a plugin may be",
                        MAX_UNPACKED >> 20
                    ));
                }
                std::fs::copy(&path, &target).map_err(|e| failed(&path, e))?;
                set_mode(&target, clamped_mode(mode_of(&meta))).map_err(|e| failed(&path, e))?;
            } else {
                return Err(format!(
                    "`{}` is not a file, directory or link (a named pipe, socket or device); a plugin cannot hold it",
                    path.display()
                ));
            }
        }
        Ok(())
    }
}

#[cfg(unix)]
fn mode_of(meta: &std::fs::Metadata) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    meta.permissions().mode()
}

#[cfg(not(unix))]
fn mode_of(_: &std::fs::Metadata) -> u32 {
    0o644
}

/// The plugin's directory among what was unpacked into `staging`: `staging` itself, or its
/// one subdirectory.
fn plugin_root(staging: &Path) -> Result<PathBuf, String> {
    if has_manifest(staging) {
        return Ok(staging.to_path_buf());
    }
    let entries: Vec<PathBuf> = std::fs::read_dir(staging)
        .map_err(|e| e.to_string())?
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .collect();
    match entries.as_slice() {
        [only] if only.is_dir() && has_manifest(only) => Ok(only.clone()),
        _ => Err(
            "it holds no plugin: no `aleph_plugin.toml`, `aleph_plugin.json` or `package.json` with `alephPlugin` at its top level or in its single top-level directory".into(),
        ),
    }
}
