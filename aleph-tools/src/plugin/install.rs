//! Installing a plugin from a directory or an archive into the first search path, and
//! uninstalling one.

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use super::error::PluginError;
use super::manager::{PluginInfo, PluginManager, has_manifest};
use super::manifest::PluginManifest;

/// The most an archive may unpack to. A plugin is code and a few assets; a larger archive
/// is refused before it fills the disk.
const MAX_UNPACKED: u64 = 1 << 30;

impl PluginManager {
    /// Installs the plugin at `source` (a plugin directory, or a `.tar.gz`, `.tgz` or `.zip`
    /// archive holding one at its top level or in its single top-level directory) into the
    /// first search path, as a directory named for its id, and loads it.
    ///
    /// Nothing lands in the search path until the manifest has been read and checked and the
    /// permission policy allows it; a plugin that then fails to load is removed again, so an
    /// install either serves the plugin or leaves no trace.
    ///
    /// # Errors
    ///
    /// [`PluginError::Install`] when the source cannot be read or unpacked, holds no plugin,
    /// or its id is installed already; [`PluginError::Manifest`] or [`PluginError::Policy`]
    /// for a plugin that may not load; the load error of one that cannot.
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
    pub fn uninstall(&self, id: &str) -> Result<PathBuf, PluginError> {
        let dir = match self.get(id) {
            Some(info) => info.dir,
            None => self
                .discover()
                .into_iter()
                .find(|dir| PluginManifest::read_dir(dir).is_ok_and(|m| m.manifest.plugin.id == id))
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
        return copy_tree(source, into).map_err(|e| format!("cannot copy it: {e}"));
    }
    let name = source
        .file_name()
        .map(|n| n.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    let file = File::open(source).map_err(|e| format!("cannot open it: {e}"))?;
    if name.ends_with(".tar.gz") || name.ends_with(".tgz") {
        unpack_tar(BufReader::new(file), into)
    } else if name.ends_with(".zip") {
        unpack_zip(file, into)
    } else {
        Err("it is neither a directory nor a `.tar.gz`, `.tgz` or `.zip` archive".into())
    }
}

fn unpack_tar(file: impl Read, into: &Path) -> Result<(), String> {
    let broken = |e: std::io::Error| format!("it is not a readable .tar.gz archive: {e}");
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(file));
    archive.set_preserve_permissions(false);
    let mut total = 0u64;
    for entry in archive.entries().map_err(broken)? {
        let mut entry = entry.map_err(broken)?;
        total = total.saturating_add(entry.header().size().map_err(broken)?);
        if total > MAX_UNPACKED {
            return Err(too_large());
        }
        // `unpack_in` refuses entries that would land outside `into`.
        let inside = entry.unpack_in(into).map_err(broken)?;
        if !inside {
            let path = entry.path().map(|p| p.display().to_string());
            return Err(format!(
                "its entry `{}` would land outside the plugin's directory",
                path.unwrap_or_default()
            ));
        }
    }
    Ok(())
}

fn unpack_zip(file: File, into: &Path) -> Result<(), String> {
    let broken = |e: zip::result::ZipError| format!("it is not a readable .zip archive: {e}");
    let mut archive = zip::ZipArchive::new(BufReader::new(file)).map_err(broken)?;
    let mut total = 0u64;
    for i in 0..archive.len() {
        total = total.saturating_add(archive.by_index_raw(i).map_err(broken)?.size());
    }
    if total > MAX_UNPACKED {
        return Err(too_large());
    }
    // `extract` refuses names and links that lead outside `into`.
    archive.extract(into).map_err(broken)
}

fn too_large() -> String {
    format!(
        "it unpacks to more than {} MB, more than a plugin may be",
        MAX_UNPACKED >> 20
    )
}

/// Copies the directory tree `from` into `to`; symbolic links are copied as links.
fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        let kind = entry.file_type()?;
        if kind.is_dir() {
            std::fs::create_dir(&target)?;
            copy_tree(&entry.path(), &target)?;
        } else if kind.is_symlink() {
            let link = std::fs::read_link(entry.path())?;
            #[cfg(unix)]
            std::os::unix::fs::symlink(link, &target)?;
            #[cfg(not(unix))]
            let _ = link;
        } else {
            std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
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
