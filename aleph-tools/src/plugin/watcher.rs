//! `PluginWatcher`: hot reload. A debounced watch on the search paths; a plugin whose files
//! change is reloaded, a new plugin directory is loaded, a removed one is unloaded.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::error::PluginError;
use super::manager::{PluginManager, has_manifest};
use crate::util::watch::{EntryWatcher, watch_entries};

/// Watches the plugin directories while it lives; drop it to stop.
pub struct PluginWatcher {
    _watcher: EntryWatcher,
    roots: Vec<PathBuf>,
}

impl std::fmt::Debug for PluginWatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PluginWatcher")
            .field("roots", &self.roots)
            .finish_non_exhaustive()
    }
}

impl PluginWatcher {
    /// The directories watched.
    pub fn roots(&self) -> &[PathBuf] {
        &self.roots
    }
}

impl PluginManager {
    /// Starts hot reload with a 300 ms debounce; see [`watch_with`](Self::watch_with).
    ///
    /// # Errors
    ///
    /// As [`watch_with`](Self::watch_with).
    pub fn watch(&self) -> Result<PluginWatcher, PluginError> {
        self.watch_with(Duration::from_millis(300))
    }

    /// Starts hot reload: every search path that exists is watched (none when the config's
    /// `hot_reload` is off), and once its files have
    /// been quiet for `debounce`, a plugin directory that changed is reloaded (a new one
    /// loaded, a removed one unloaded and its tools withdrawn). A bad update keeps the
    /// previous version serving and puts the error in the plugin's status. Reloading runs on
    /// the watcher's thread, never on the caller's.
    ///
    /// # Errors
    ///
    /// [`PluginError::Watch`] when the operating system refuses the watch.
    pub fn watch_with(&self, debounce: Duration) -> Result<PluginWatcher, PluginError> {
        let config = self.config();
        let search_paths = if config.hot_reload {
            config.resolved_search_paths()
        } else {
            Vec::new()
        };
        let roots: Vec<PathBuf> = search_paths
            .into_iter()
            .filter_map(|root| std::fs::canonicalize(root).ok())
            .filter(|root| root.is_dir())
            .collect();
        let manager = self.clone();
        let watcher = watch_entries(&roots, debounce, move |dir, paths| {
            // A plugin writing its own data (a `write:` grant inside its directory) is not
            // a change to the plugin.
            if paths.iter().any(|path| !manager.is_plugin_data(dir, path)) {
                manager.sync(dir);
            }
        })
        .map_err(|e| PluginError::Watch {
            path: e.path,
            message: e.message,
        })?;
        Ok(PluginWatcher {
            _watcher: watcher,
            roots,
        })
    }

    /// Brings the plugin in `dir` in line with the disk.
    fn sync(&self, dir: &Path) {
        if has_manifest(dir) {
            // A disabled plugin stays disabled until enabled, whatever changes.
            if !self.is_disabled(dir) {
                // A failure is kept in the plugin's status (and logged) by `load`.
                let _ = self.load(dir);
            }
        } else if self.knows_dir(dir) {
            self.unload_dir(dir);
        }
    }
}
