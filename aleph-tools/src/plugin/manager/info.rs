//! What the manager reports of its plugins: each one's status, version, tools and sandbox,
//! and what a load of every plugin did.

use std::fmt;
use std::path::{Path, PathBuf};

use super::Slot;
use crate::plugin::code::Code;
use crate::plugin::error::PluginError;
use crate::plugin::manifest::PluginKind;

/// Where a plugin is in its life.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PluginStatus {
    /// The manifest was read; nothing runs yet.
    Loaded,
    /// Active: its tools are served.
    Running,
    /// Disabled: known, but its tools are not served.
    Stopped,
    /// The last load or reload failed. When a previous version was running it still is,
    /// and [`PluginInfo::tools`] lists its tools.
    Error(String),
}

impl fmt::Display for PluginStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Loaded => f.write_str("loaded"),
            Self::Running => f.write_str("running"),
            Self::Stopped => f.write_str("stopped"),
            Self::Error(message) => write!(f, "error: {message}"),
        }
    }
}

/// What the manager knows of one plugin.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct PluginInfo {
    /// The plugin's id; the directory's name when the manifest could not be read.
    pub id: String,
    /// Its display name.
    pub name: String,
    /// Its version, when the manifest could be read.
    pub version: Option<semver::Version>,
    /// How it runs, when the manifest could be read.
    pub kind: Option<PluginKind>,
    /// Its directory.
    pub dir: PathBuf,
    /// Where it is in its life.
    pub status: PluginStatus,
    /// The tools it serves now, sorted.
    pub tools: Vec<String>,
    /// The direct commands it offers.
    pub commands: Vec<String>,
    /// What its sandbox enforces, in one sentence, while its code runs.
    pub sandbox: Option<String>,
    /// The grants its manifest asks for that the permission policy dropped
    /// ([`PolicyMode::Trim`](crate::plugin::PolicyMode::Trim)); it runs without them.
    pub dropped: Vec<String>,
}

/// What [`PluginManager::load_all`](super::PluginManager::load_all) did.
#[derive(Debug, Default)]
#[non_exhaustive]
pub struct LoadReport {
    /// The plugins now running, by id.
    pub loaded: Vec<String>,
    /// The plugins that failed, by directory, with why. Each failure cost only its plugin.
    pub failed: Vec<(PathBuf, PluginError)>,
    /// The plugins left stopped because the config lists them as `disabled`, by id.
    pub disabled: Vec<String>,
}

impl Slot {
    /// What the manager reports of the plugin in this slot, found in `dir`.
    pub(super) fn info(&self, dir: &Path) -> PluginInfo {
        let manifest = self
            .serving
            .as_ref()
            .map(|s| &s.manifest)
            .or(self.manifest.as_ref())
            .map(|m| &m.manifest);
        PluginInfo {
            id: self.id.clone(),
            name: manifest
                .and_then(|m| m.plugin.name.clone())
                .unwrap_or_else(|| self.id.clone()),
            version: manifest.map(|m| m.plugin.version.clone()),
            kind: manifest.map(|m| m.plugin.kind),
            dir: dir.to_path_buf(),
            status: match (
                &self.status,
                self.serving.as_ref().and_then(|s| s.code.as_ref()),
            ) {
                #[cfg(feature = "node")]
                (PluginStatus::Running, Some(Code::Node(code))) => code.status(),
                (status, _) => status.clone(),
            },
            tools: self
                .serving
                .as_ref()
                .map(|s| s.tools.clone())
                .unwrap_or_default(),
            commands: manifest
                .map(|m| m.commands.iter().map(|c| c.name.clone()).collect())
                .unwrap_or_default(),
            sandbox: self
                .serving
                .as_ref()
                .and_then(|s| s.code.as_ref())
                .map(Code::sandbox),
            dropped: self
                .serving
                .as_ref()
                .map(|s| s.dropped.clone())
                .unwrap_or_default(),
        }
    }
}
