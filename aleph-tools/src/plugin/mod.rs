//! Plugins: tools added at run time from a directory with a manifest.
//!
//! A plugin is a directory holding `aleph_plugin.toml` (or `aleph_plugin.json`, or a
//! `package.json` with an `alephPlugin` section) and, for a `wasm` plugin, a WebAssembly
//! module. The [`PluginManager`] finds plugins in its search paths, checks their manifests,
//! loads their code into the [`WasmRuntime`] sandbox and serves their tools through an
//! [`AlephToolServer`](crate::AlephToolServer) beside the static ones;
//! [`PluginManager::watch`] reloads them when their files change.
//!
//! Plugins are untrusted: no network, files or environment unless the manifest asks and
//! the host grants it; memory, time and fuel limits on every call; a plugin that traps,
//! loops, runs out of memory or returns garbage fails its own call and nothing else.
//!
//! Needs the `plugins` feature; the WebAssembly runtime needs `wasm`.

mod config;
mod error;
mod manager;
mod manifest;
mod watcher;

#[cfg(any(feature = "wasm", feature = "node"))]
mod build;
#[cfg(feature = "node")]
mod node;
#[cfg(feature = "wasm")]
mod tool;
#[cfg(feature = "wasm")]
mod wasm;

#[cfg(feature = "wasm")]
pub use build::DESCRIBE_EXPORT;
pub use config::{ByteSize, NodeConfig, PluginsConfig, RestartPolicy, RuntimesConfig, WasmConfig};
pub use error::PluginError;
pub use manager::{LoadReport, PluginInfo, PluginManager, PluginStatus};
pub use manifest::{
    ChannelSection, CommandSection, HookEvent, HookKind, HookSection, HttpRouteSection,
    LoadedManifest, MANIFEST_FILES, ManifestError, ManifestProblem, Mount, PLUGIN_API_VERSION,
    Permissions, PluginInfoSection, PluginKind, PluginManifest, PromptScope, PromptSection,
    ProviderSection, SchemaSource, ServiceSection, ToolSection,
};
#[cfg(feature = "node")]
pub use node::{NodeCallError, NodePlugin, NodejsRuntime, PROTOCOL_VERSION};
#[cfg(feature = "wasm")]
pub use wasm::{WasmCallError, WasmPlugin, WasmRuntime};
pub use watcher::PluginWatcher;
