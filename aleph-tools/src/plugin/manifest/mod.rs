//! `PluginManifest`: what a plugin provides and needs, read from `aleph_plugin.toml`,
//! `aleph_plugin.json` or `package.json`'s `alephPlugin` section, and checked before anything
//! runs.
//!
//! The sections are in `sections`, the sandbox grants in `permissions`, reading the three
//! formats in `read`, the rules in `check`, and what a broken manifest reports in `error`.

mod check;
mod error;
mod permissions;
mod read;
mod sections;

pub use self::error::{ManifestError, ManifestProblem};
pub(in crate::plugin) use self::permissions::parse_filesystem;
pub use self::permissions::{Mount, Permissions};
pub use self::read::LoadedManifest;
pub(in crate::plugin) use self::read::read_small;
pub use self::sections::{
    ChannelSection, CommandSection, HookEvent, HookKind, HookSection, HttpRouteSection,
    IconSection, PluginInfoSection, PluginKind, PluginManifest, PromptScope, PromptSection,
    ProviderSection, SchemaSource, ServiceSection, ToolSection,
};

/// The version of the plugin interface this host implements. A manifest may ask for a range
/// with `api_version = "^1"`; a plugin asking for a range this version is outside of does not
/// load.
pub const PLUGIN_API_VERSION: semver::Version = semver::Version::new(1, 0, 0);

/// The manifest file names, in the order they are looked for.
pub const MANIFEST_FILES: [&str; 3] = ["aleph_plugin.toml", "aleph_plugin.json", "package.json"];
