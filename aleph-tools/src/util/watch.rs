//! Hot reload's eyes: a debounced, recursive watch on directories whose entries are units
//! (a plugin each, a skill each). Once a root's files have been quiet for the debounce, each
//! entry directly under it that changed is reported once, with the paths that changed in it.
//! Plugins and Markdown skills both reload through it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use notify::{EventKind, RecommendedWatcher, RecursiveMode};
use notify_debouncer_full::{DebounceEventResult, Debouncer, RecommendedCache, new_debouncer};

/// A running watch; dropping it stops it.
pub(crate) struct EntryWatcher {
    _debouncer: Debouncer<RecommendedWatcher, RecommendedCache>,
}

/// Why a watch could not start: the directory, and the operating system's reason.
#[derive(Debug)]
pub(crate) struct WatchError {
    pub(crate) path: PathBuf,
    pub(crate) message: String,
}

/// Watches `roots` (each canonical, an existing directory). `on_change(entry, paths)` runs on
/// the watcher's thread for each entry directory that changed: the directory directly under
/// a root (hidden ones, such as an install's staging directory, are skipped), and the paths
/// that changed in it. Reads of files are not changes.
pub(crate) fn watch_entries(
    roots: &[PathBuf],
    debounce: Duration,
    on_change: impl Fn(&Path, &[PathBuf]) + Send + 'static,
) -> Result<EntryWatcher, WatchError> {
    let watched = roots.to_vec();
    let mut debouncer = new_debouncer(debounce, None, move |events: DebounceEventResult| {
        let events = match events {
            Ok(events) => events,
            Err(errors) => {
                for error in errors {
                    tracing::warn!("file watcher: {error}");
                }
                return;
            }
        };
        let mut changed: BTreeMap<PathBuf, Vec<PathBuf>> = BTreeMap::new();
        for event in events
            .iter()
            .filter(|event| !matches!(event.kind, EventKind::Access(_)))
        {
            for path in &event.paths {
                if let Some(entry) = entry_of(&watched, path) {
                    changed.entry(entry).or_default().push(path.clone());
                }
            }
        }
        for (entry, paths) in changed {
            on_change(&entry, &paths);
        }
    })
    .map_err(|e| WatchError {
        path: roots.first().cloned().unwrap_or_default(),
        message: e.to_string(),
    })?;
    for root in roots {
        debouncer
            .watch(root, RecursiveMode::Recursive)
            .map_err(|e| WatchError {
                path: root.clone(),
                message: e.to_string(),
            })?;
    }
    Ok(EntryWatcher {
        _debouncer: debouncer,
    })
}

/// The entry `path` is in: the directory directly under one of `roots`, unless hidden.
pub(crate) fn entry_of(roots: &[PathBuf], path: &Path) -> Option<PathBuf> {
    roots.iter().find_map(|root| {
        let first = path.strip_prefix(root).ok()?.components().next()?;
        if is_hidden(first.as_os_str()) {
            return None;
        }
        Some(root.join(first))
    })
}

/// Whether an entry's name makes it hidden (an install's staging directory, an editor's
/// temporary file): it is not a unit of its own.
pub(crate) fn is_hidden(name: &std::ffi::OsStr) -> bool {
    name.to_string_lossy().starts_with('.')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_map_to_their_entry_directory() {
        let roots = vec![PathBuf::from("/p"), PathBuf::from("/q")];
        assert_eq!(
            entry_of(&roots, Path::new("/q/echo/src/lib.rs")),
            Some(PathBuf::from("/q/echo"))
        );
        assert_eq!(entry_of(&roots, Path::new("/p")), None);
        assert_eq!(
            entry_of(&roots, Path::new("/p/.installing-1/aleph_plugin.toml")),
            None
        );
        assert_eq!(entry_of(&roots, Path::new("/elsewhere/x")), None);
    }
}
