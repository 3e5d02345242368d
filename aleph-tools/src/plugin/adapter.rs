//! What a plugin's channel and provider have alike: the plugin serving it, its name, and its
//! handlers looked up in the plugin's current version at each call, so a reload is followed.

use std::fmt;

use serde_json::Value;
use tokio::sync::mpsc::UnboundedSender;

use super::code::{AdapterCall, Code};
use super::error::PluginError;
use super::manager::PluginManager;
use super::manifest::PluginManifest;

/// A channel or provider `name` that the plugin `plugin` declares.
#[derive(Clone)]
pub(super) struct Adapter {
    manager: PluginManager,
    plugin: String,
    name: String,
}

impl Adapter {
    /// The `what` (`channel`, `provider`) `name` of the running plugin `id`, if `names` lists it.
    pub(super) fn declared(
        manager: &PluginManager,
        id: &str,
        what: &str,
        name: &str,
        names: impl Fn(&PluginManifest) -> Vec<String>,
    ) -> Result<Self, PluginError> {
        manager.check_declared(id, what, name, names)?;
        Ok(Self {
            manager: manager.clone(),
            plugin: id.to_owned(),
            name: name.to_owned(),
        })
    }

    /// The plugin serving it.
    pub(super) fn plugin(&self) -> &str {
        &self.plugin
    }

    /// Its name.
    pub(super) fn name(&self) -> &str {
        &self.name
    }

    /// The running code and the `what` section `find` picks from the manifest, or why not.
    pub(super) fn section<T: Clone>(
        &self,
        what: &str,
        find: impl Fn(&PluginManifest) -> Option<&T>,
    ) -> Result<(Code, T), String> {
        self.manager.serving_section(&self.plugin, what, find)
    }

    /// What `handler` answers to `input` in `role`, asked by `method`; an error names the plugin.
    pub(super) async fn invoke(
        &self,
        code: &Code,
        method: &str,
        role: &str,
        handler: &str,
        input: &Value,
        chunks: Option<UnboundedSender<Value>>,
    ) -> Result<Value, String> {
        let call = AdapterCall {
            method,
            adapter: &self.name,
            role,
            handler,
            input,
        };
        code.invoke_adapter(&call, chunks)
            .await
            .map_err(|message| format!("plugin `{}`: {message}", self.plugin))
    }

    /// The `Debug` output of `ty`, the type holding it: the plugin and the name.
    pub(super) fn debug(&self, f: &mut fmt::Formatter<'_>, ty: &str) -> fmt::Result {
        f.debug_struct(ty)
            .field("plugin", &self.plugin)
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}
