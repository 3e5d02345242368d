//! Building a plugin read from its manifest (its code, tools and hooks) and putting it in
//! service on the server, or taking it out again.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::{Inner, Serving, Slot};
use crate::middleware::Layer;
use crate::plugin::code::Code;
use crate::plugin::error::PluginError;
use crate::plugin::manifest::{LoadedManifest, PluginKind};
use crate::plugin::messages::MessageHook;
use crate::plugin::prompts::read_prompt;
use crate::plugin::services::Services;
use crate::tool::AlephToolDyn;

/// A plugin read and built, not yet served.
pub(super) struct Prepared {
    manifest: Arc<LoadedManifest>,
    tools: Vec<Arc<dyn AlephToolDyn>>,
    hooks: Vec<Layer>,
    message_hooks: Vec<Arc<MessageHook>>,
    code: Option<Code>,
    dropped: Vec<String>,
}

impl Prepared {
    /// The plugin of `manifest` running as `code`, with its `tools` and its manifest's hooks.
    #[cfg(any(feature = "wasm", feature = "node"))]
    fn built(
        manifest: Arc<LoadedManifest>,
        tools: Vec<Arc<dyn AlephToolDyn>>,
        code: Code,
    ) -> Result<Self, PluginError> {
        let (hooks, message_hooks) = crate::plugin::hooks::plugin_hooks(&manifest, &code)?;
        Ok(Self {
            manifest,
            tools,
            hooks,
            message_hooks,
            code: Some(code),
            dropped: Vec::new(),
        })
    }
}

/// The error that the plugin of `manifest` cannot load, for `message`.
fn load_error(manifest: &LoadedManifest, message: &str) -> PluginError {
    PluginError::Load {
        plugin: manifest.manifest.plugin.id.clone(),
        message: message.to_owned(),
    }
}

impl Inner {
    /// Builds the plugin's code and tools.
    pub(super) fn prepare(
        &self,
        manifest: Arc<LoadedManifest>,
        dir: &Path,
        slots: &BTreeMap<PathBuf, Slot>,
    ) -> Result<Prepared, PluginError> {
        let id = &manifest.manifest.plugin.id;
        if let Some((first, _)) = slots
            .iter()
            .find(|(other, slot)| other.as_path() != dir && slot.id == *id)
        {
            return Err(PluginError::DuplicateId {
                id: id.clone(),
                first: first.clone(),
                second: dir.to_path_buf(),
            });
        }
        let m = &manifest.manifest;
        if m.plugin.kind == PluginKind::Wasm && !m.channels.is_empty() {
            return Err(load_error(
                &manifest,
                "its manifest declares [[channels]], and a WebAssembly plugin cannot deliver a channel's incoming messages (it runs only while called); write the channel as a Node.js plugin",
            ));
        }
        if cfg!(not(feature = "routes")) && !m.http_routes.is_empty() {
            return Err(load_error(
                &manifest,
                "its manifest declares [[http_routes]] and this build cannot serve them; enable the `routes` feature of aleph-tools",
            ));
        }
        let granted = self
            .config
            .policy
            .grant(id, &m.permissions, dir)
            .map_err(|message| PluginError::Policy {
                plugin: id.clone(),
                message,
            })?;
        for grant in &granted.dropped {
            tracing::warn!(plugin = %id, grant = %grant, "permission dropped by the policy");
        }
        let manifest = if granted.permissions == m.permissions {
            manifest
        } else {
            let mut trimmed = (*manifest).clone();
            trimmed.manifest.permissions = granted.permissions;
            Arc::new(trimmed)
        };
        let prepared = match manifest.manifest.plugin.kind {
            PluginKind::Static => Ok(Prepared {
                manifest,
                tools: Vec::new(),
                hooks: Vec::new(),
                message_hooks: Vec::new(),
                code: None,
                dropped: Vec::new(),
            }),
            PluginKind::Nodejs => self.prepare_node(manifest),
            PluginKind::Wasm => self.prepare_wasm(manifest),
        };
        prepared.map(|prepared| Prepared {
            dropped: granted.dropped,
            ..prepared
        })
    }

    #[cfg(feature = "wasm")]
    fn prepare_wasm(&self, manifest: Arc<LoadedManifest>) -> Result<Prepared, PluginError> {
        if !self.config.runtimes.wasm.enabled {
            return Err(load_error(
                &manifest,
                "WebAssembly plugins are turned off (`[plugins.runtimes.wasm] enabled = false`)",
            ));
        }
        let code = self.runtime.load(&manifest)?;
        let tools = crate::plugin::build::wasm_tools(&manifest, &code)?;
        Prepared::built(manifest, tools, Code::Wasm(code))
    }

    #[cfg(feature = "node")]
    fn prepare_node(&self, manifest: Arc<LoadedManifest>) -> Result<Prepared, PluginError> {
        if !self.config.runtimes.nodejs.enabled {
            return Err(load_error(
                &manifest,
                "Node.js plugins are turned off (`[plugins.runtimes.nodejs] enabled = false`)",
            ));
        }
        let code = self.node.start(&manifest)?;
        let tools =
            crate::plugin::build::node_tools(&manifest, &code, self.node.config().timeout())?;
        Prepared::built(manifest, tools, Code::Node(code))
    }

    #[cfg(not(feature = "node"))]
    #[allow(
        clippy::unused_self,
        clippy::needless_pass_by_value,
        reason = "the same signature as with the `node` feature"
    )]
    fn prepare_node(&self, manifest: Arc<LoadedManifest>) -> Result<Prepared, PluginError> {
        Err(load_error(
            &manifest,
            "this build has no Node.js runtime; enable the `node` feature of aleph-tools",
        ))
    }

    #[cfg(not(feature = "wasm"))]
    #[allow(
        clippy::unused_self,
        clippy::needless_pass_by_value,
        reason = "the same signature as with the `wasm` feature"
    )]
    fn prepare_wasm(&self, manifest: Arc<LoadedManifest>) -> Result<Prepared, PluginError> {
        Err(load_error(
            &manifest,
            "this build has no WebAssembly runtime; enable the `wasm` feature of aleph-tools",
        ))
    }

    /// Serves a prepared plugin in place of `old` (its previous version), in one change.
    pub(super) fn activate(
        &self,
        prepared: Prepared,
        old: Option<&Serving>,
    ) -> Result<Serving, PluginError> {
        let id = &prepared.manifest.manifest.plugin.id;
        // Read before anything changes: a prompt that cannot be read fails the load whole.
        let prompt = read_prompt(&prepared.manifest)?;
        let remove = old.map(|o| o.tools.clone()).unwrap_or_default();
        let mut tools: Vec<String> = prepared.tools.iter().map(|t| t.name().to_owned()).collect();
        tools.sort();
        self.server
            .swap_tools(&remove, prepared.tools)
            .map_err(|error| {
                let key = match &error {
                    crate::RegistryError::AlreadyServed { name } => prepared
                        .manifest
                        .manifest
                        .tools
                        .iter()
                        .position(|t| t.name == *name)
                        .map(|i| format!(" (`tools[{i}].name`)"))
                        .unwrap_or_default(),
                    _ => String::new(),
                };
                PluginError::Load {
                    plugin: id.clone(),
                    message: format!("{error}{key}; rename the plugin's tool"),
                }
            })?;
        // The old version's hooks leave as the new version's join, in one change, so every
        // call runs with one version's hooks.
        let leaving = old.as_ref().map_or(&[][..], |old| &old.hooks[..]);
        let hooks = self.server.swap_layers(leaving, prepared.hooks);
        if let Some(old) = old {
            old.services.stop_all();
        }
        let services = Services::new(
            id,
            prepared.code.clone(),
            &prepared.manifest.manifest.services,
        );
        services.start_automatic();
        Ok(Serving {
            manifest: prepared.manifest,
            tools,
            hooks,
            message_hooks: prepared.message_hooks,
            seq: self.next_seq.fetch_add(1, Ordering::Relaxed),
            prompt,
            services,
            code: prepared.code,
            dropped: prepared.dropped,
        })
    }

    pub(super) fn withdraw(&self, serving: &Serving) {
        // Only this plugin's own tools: one replaced by hand since is left alone.
        let _ = self.server.swap_tools(&serving.tools, Vec::new());
        self.server.swap_layers(&serving.hooks, Vec::new());
        serving.services.stop_all();
    }
}
