//! Plugins: tools added at run time from a directory with a manifest.
//!
//! A plugin is a directory holding `aleph_plugin.toml` (or `aleph_plugin.json`, or a
//! `package.json` with an `alephPlugin` section) and its code: a WebAssembly module for a
//! `wasm` plugin, a JavaScript program for a `nodejs` one. The [`PluginManager`] finds
//! plugins in its search paths, checks their manifests, runs their code (in the `WasmRuntime`
//! sandbox, or as a child process supervised by the `NodejsRuntime`) and serves their tools
//! through an [`AlephToolServer`](crate::AlephToolServer) beside the static ones;
//! [`PluginManager::watch`] reloads them when their files change.
//!
//! Plugins are untrusted: a plugin that traps, loops, crashes, runs out of memory or returns
//! garbage fails its own calls and nothing else. WebAssembly plugins reach no network, files
//! or environment unless the manifest asks and the host grants it, with memory, time and fuel
//! limits on every call; Node.js plugins get what Node's permission model can enforce (files
//! and processes, not the network), a cleared environment and per-call timeouts.
//!
//! Needs the `plugins` feature; the WebAssembly runtime needs `wasm`, the Node.js runtime
//! `node`.

mod adapter;
#[cfg(feature = "admin")]
mod admin;
mod archive;
mod channels;
mod config;
mod error;
mod handle;
mod install;
mod manager;
mod manifest;
mod messages;
mod policy;
mod prompts;
mod providers;
#[cfg(feature = "routes")]
mod routes;
mod services;
mod tree;
mod watcher;

#[cfg(any(feature = "wasm", feature = "node"))]
mod build;
mod code;
#[cfg(any(feature = "wasm", feature = "node"))]
mod hooks;
#[cfg(feature = "node")]
mod node;
#[cfg(feature = "wasm")]
mod tool;
#[cfg(feature = "wasm")]
mod wasm;
#[cfg(feature = "wasm")]
mod wasm_http;

#[cfg(feature = "admin")]
pub use admin::{ADMIN_PATH, ADMIN_SCOPE, AdminError, METHODS, PluginAdmin};
#[cfg(feature = "wasm")]
pub use build::DESCRIBE_EXPORT;
pub use channels::{BoxStream, Channel, ChannelError, ChannelInfo, PluginChannel};
pub use config::{
    ByteSize, NodeConfig, PluginsConfig, RestartPolicy, RoutesConfig, RuntimesConfig, WasmConfig,
};
pub use error::PluginError;
pub use handle::Plugin;
pub use manager::{LoadReport, PluginInfo, PluginManager, PluginStatus};
pub use manifest::{
    ChannelSection, CommandSection, HookEvent, HookKind, HookSection, HttpRouteSection,
    IconSection, LoadedManifest, MANIFEST_FILES, ManifestError, ManifestProblem, Mount,
    PLUGIN_API_VERSION, Permissions, PluginInfoSection, PluginKind, PluginManifest, PromptScope,
    PromptSection, ProviderSection, SchemaSource, ServiceSection, ToolSection,
};
pub use messages::MessageOutcome;
#[cfg(feature = "node")]
pub use node::{NodeCallError, NodePlugin, NodejsRuntime, PROTOCOL_VERSION};
pub use policy::{PermissionPolicy, PolicyMode, PolicyOverride};
pub use prompts::PluginPrompt;
pub use providers::{ModelProvider, PluginProvider, ProviderError, ProviderInfo};
pub use services::{ServiceInfo, ServiceState};
#[cfg(feature = "wasm")]
pub use wasm::{WasmCallError, WasmPlugin, WasmRuntime};
pub use watcher::PluginWatcher;
