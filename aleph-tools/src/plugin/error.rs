//! `PluginError`: why a plugin could not be loaded or managed.

use std::path::PathBuf;

use super::manifest::ManifestError;

/// Why a plugin could not be loaded, reloaded or found. A failure costs only its own plugin:
/// the manager keeps every other plugin, and a plugin that fails to reload keeps serving its
/// previous version.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PluginError {
    /// The manifest is missing, malformed or breaks a rule.
    #[error(transparent)]
    Manifest(#[from] ManifestError),

    /// The manifest is fine but the plugin cannot run: its code is not WebAssembly, its start
    /// function fails, it lacks an export its manifest names, its tool names are taken.
    #[error("plugin `{plugin}` cannot load: {message}")]
    Load {
        /// The plugin's id.
        plugin: String,
        /// What is wrong and what to do.
        message: String,
    },

    /// The manifest asks for permissions the host's [`PermissionPolicy`] does not allow.
    ///
    /// [`PermissionPolicy`]: super::PermissionPolicy
    #[error("plugin `{plugin}` is refused: {message}")]
    Policy {
        /// The plugin's id.
        plugin: String,
        /// Each grant refused, what the policy allows instead, and what to change.
        message: String,
    },

    /// Another directory already holds a plugin with this id.
    #[error(
        "plugin id `{id}` is already loaded from `{}`; ids must be unique, so `{}` was skipped",
        first.display(),
        second.display()
    )]
    DuplicateId {
        /// The id.
        id: String,
        /// The directory it was loaded from.
        first: PathBuf,
        /// The directory that was skipped.
        second: PathBuf,
    },

    /// A direct command is unknown or failed.
    #[error("plugin `{plugin}`, command `{command}`: {message}")]
    Command {
        /// The plugin's id.
        plugin: String,
        /// The command's name.
        command: String,
        /// What went wrong.
        message: String,
    },

    /// A background service is unknown or failed.
    #[error("plugin `{plugin}`, service `{service}`: {message}")]
    Service {
        /// The plugin's id.
        plugin: String,
        /// The service's name.
        service: String,
        /// What went wrong.
        message: String,
    },

    /// A plugin could not be installed.
    #[error("cannot install `{}`: {message}", path.display())]
    Install {
        /// The directory or archive installed from.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },

    /// A plugin could not be uninstalled.
    #[error("cannot uninstall plugin `{plugin}`: {message}")]
    Uninstall {
        /// The plugin's id.
        plugin: String,
        /// What went wrong.
        message: String,
    },

    /// A running plugin declares no channel or provider of this name.
    #[error("plugin `{plugin}` has no {what} `{name}`; it has: {}", if known.is_empty() { "none".to_owned() } else { known.join(", ") })]
    Unknown {
        /// The plugin's id.
        plugin: String,
        /// `channel` or `provider`.
        what: String,
        /// The name asked for.
        name: String,
        /// The names it has.
        known: Vec<String>,
    },

    /// No plugin has this id.
    #[error("no plugin `{0}` is loaded")]
    NotFound(String),

    /// The watcher could not start.
    #[error("cannot watch `{}` for changes: {message}", path.display())]
    Watch {
        /// The directory.
        path: PathBuf,
        /// Why.
        message: String,
    },
}
