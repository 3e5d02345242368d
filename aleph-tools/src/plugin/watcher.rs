//! `PluginWatcher`: hot reload. A debounced watch on the search paths; a plugin whose files
//! change is reloaded, a new plugin directory is loaded, a removed one is unloaded.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use notify::{EventKind, RecommendedWatcher, RecursiveMode};
use notify_debouncer_full::{DebounceEventResult, Debouncer, RecommendedCache, new_debouncer};

use super::error::PluginError;
use super::manager::{PluginManager, has_manifest};

/// Watches the plugin directories while it lives; drop it to stop.
pub struct PluginWatcher {
    _debouncer: Debouncer<RecommendedWatcher, RecommendedCache>,
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
        let watched = roots.clone();
        let mut debouncer = new_debouncer(debounce, None, move |events: DebounceEventResult| {
            let events = match events {
                Ok(events) => events,
                Err(errors) => {
                    for error in errors {
                        tracing::warn!("plugin watcher: {error}");
                    }
                    return;
                }
            };
            // A plugin writing its own data (a `write:` grant inside its directory) is not
            // a change to the plugin.
            // A file read (a plugin process loading its own code) changes nothing.
            let dirs: BTreeSet<PathBuf> = events
                .iter()
                .filter(|event| !matches!(event.kind, EventKind::Access(_)))
                .flat_map(|event| event.paths.iter())
                .filter_map(|path| {
                    let dir = plugin_dir_of(&watched, path)?;
                    (!manager.is_plugin_data(&dir, path)).then_some(dir)
                })
                .collect();
            for dir in dirs {
                manager.sync(&dir);
            }
        })
        .map_err(|e| PluginError::Watch {
            path: PathBuf::new(),
            message: e.to_string(),
        })?;
        for root in &roots {
            debouncer
                .watch(root, RecursiveMode::Recursive)
                .map_err(|e| PluginError::Watch {
                    path: root.clone(),
                    message: e.to_string(),
                })?;
        }
        Ok(PluginWatcher {
            _debouncer: debouncer,
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

/// The plugin directory `path` is in: the directory directly under one of `roots`.
fn plugin_dir_of(roots: &[PathBuf], path: &Path) -> Option<PathBuf> {
    roots.iter().find_map(|root| {
        let first = path.strip_prefix(root).ok()?.components().next()?;
        // Hidden directories are not plugins (an install unpacks in one).
        if first.as_os_str().to_string_lossy().starts_with('.') {
            return None;
        }
        Some(root.join(first))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_map_to_their_plugin_directory() {
        let roots = vec![PathBuf::from("/p"), PathBuf::from("/q")];
        assert_eq!(
            plugin_dir_of(&roots, Path::new("/q/echo/src/lib.rs")),
            Some(PathBuf::from("/q/echo"))
        );
        assert_eq!(plugin_dir_of(&roots, Path::new("/p")), None);
        assert_eq!(
            plugin_dir_of(&roots, Path::new("/p/.installing-1/aleph_plugin.toml")),
            None
        );
        assert_eq!(plugin_dir_of(&roots, Path::new("/elsewhere/x")), None);
    }
}
