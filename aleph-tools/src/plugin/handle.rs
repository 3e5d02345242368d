//! [`Plugin`]: one plugin of a [`PluginManager`], named by its id, to read or act on.

use std::fmt;
use std::path::PathBuf;

use serde_json::Value;

use super::{
    PluginChannel, PluginError, PluginInfo, PluginManager, PluginPrompt, PluginProvider,
    ServiceInfo,
};

impl PluginManager {
    /// The plugin `id`: what the manager knows of it, and what can be done to it.
    ///
    /// The handle names the plugin; each of its methods finds the plugin as it is when
    /// called, so a plugin reloaded, stopped or removed in between is seen as it is now.
    ///
    /// ```no_run
    /// use aleph_tools::plugin::{PluginManager, PluginsConfig};
    /// use aleph_tools::prelude::*;
    ///
    /// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// let server = AlephToolServer::new();
    /// let manager = PluginManager::new(&server, PluginsConfig::with_search_paths(["plugins"]));
    /// manager.load_all();
    /// let weather = manager.plugin("weather");
    /// println!("{:?}", weather.info().map(|info| info.status));
    /// weather.reload()?;
    /// let input = serde_json::json!({ "city": "Oslo" });
    /// let answer = weather.execute_command("forecast", &input).await?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn plugin(&self, id: impl Into<String>) -> Plugin<'_> {
        Plugin {
            manager: self,
            id: id.into(),
        }
    }
}

/// One plugin of a manager, made by [`PluginManager::plugin`].
#[derive(Clone)]
pub struct Plugin<'m> {
    manager: &'m PluginManager,
    id: String,
}

impl fmt::Debug for Plugin<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Plugin")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

impl Plugin<'_> {
    /// The plugin's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// What the manager knows of the plugin (its version, status and tools); `None` when it
    /// knows no plugin with this id.
    pub fn info(&self) -> Option<PluginInfo> {
        self.manager.get(&self.id)
    }

    /// Loads the plugin again from its directory. A version that fails to load leaves the
    /// previous one serving, and its status says why.
    ///
    /// # Errors
    ///
    /// [`PluginError::NotFound`], or why the new version cannot load (the previous one keeps
    /// serving).
    pub fn reload(&self) -> Result<PluginInfo, PluginError> {
        self.manager.reload(&self.id)
    }

    /// Stops serving the plugin's tools and forgets it.
    ///
    /// # Errors
    ///
    /// [`PluginError::NotFound`].
    pub fn unload(&self) -> Result<(), PluginError> {
        self.manager.unload(&self.id)
    }

    /// Stops serving the plugin's tools, keeping it listed as
    /// [`Stopped`](super::PluginStatus::Stopped) until [`enable`](Self::enable).
    ///
    /// # Errors
    ///
    /// [`PluginError::NotFound`].
    pub fn disable(&self) -> Result<PluginInfo, PluginError> {
        self.manager.disable(&self.id)
    }

    /// Loads a disabled (or failed) plugin again from its directory, or the plugin with
    /// this id that [`discover`](PluginManager::discover) finds when the manager does not
    /// know it yet (one copied into a search path by hand).
    ///
    /// # Errors
    ///
    /// As [`reload`](Self::reload); and [`PluginError::Load`] when the manager's config
    /// turns plugins off.
    pub fn enable(&self) -> Result<PluginInfo, PluginError> {
        self.manager.enable(&self.id)
    }

    /// Stops the plugin and deletes its directory, which must lie directly in a search
    /// path (a plugin loaded from anywhere else is only [`unload`](Self::unload)ed). The
    /// plugin need not be loaded: an installed one is found by its manifest. Returns the
    /// directory removed.
    ///
    /// # Errors
    ///
    /// [`PluginError::NotFound`] when no plugin has this id; [`PluginError::Uninstall`] when
    /// its directory is outside the search paths or cannot be removed.
    pub fn uninstall(&self) -> Result<PathBuf, PluginError> {
        self.manager.uninstall(&self.id)
    }

    /// Runs the plugin's direct command `command` with `input` (JSON), without a model: the
    /// handler (a WebAssembly export, or a Node.js plugin's command) gets the input as JSON
    /// and returns JSON, within the runtime's time limit.
    ///
    /// # Errors
    ///
    /// [`PluginError::NotFound`] for an unknown or stopped plugin; [`PluginError::Command`]
    /// for an unknown command (naming the commands there are) or a failed one.
    pub async fn execute_command(
        &self,
        command: &str,
        input: &Value,
    ) -> Result<Value, PluginError> {
        self.manager.execute_command(&self.id, command, input).await
    }

    /// The plugin's channel `name`, to use as any [`Channel`](super::Channel).
    ///
    /// # Errors
    ///
    /// [`PluginError::NotFound`] for a plugin that is not running; [`PluginError::Unknown`]
    /// naming the channels there are when it declares no such channel.
    pub fn channel(&self, name: &str) -> Result<PluginChannel, PluginError> {
        self.manager.channel(&self.id, name)
    }

    /// The plugin's provider `name`, to use as any [`ModelProvider`](super::ModelProvider).
    ///
    /// # Errors
    ///
    /// [`PluginError::NotFound`] for a plugin that is not running; [`PluginError::Unknown`]
    /// naming the providers there are when it declares no such provider.
    pub fn provider(&self, name: &str) -> Result<PluginProvider, PluginError> {
        self.manager.provider(&self.id, name)
    }

    /// The plugin's prompt, asked for by name (a user typing `/id`), whatever its scope but
    /// `disabled`; `None` when the plugin is not running or has no prompt.
    pub fn prompt(&self) -> Option<PluginPrompt> {
        self.manager.prompt(&self.id)
    }

    /// Starts the plugin's service `name` and waits for its start handler (at most the
    /// runtime's time limit). Starting a service that is starting or running changes
    /// nothing.
    ///
    /// # Errors
    ///
    /// [`PluginError::NotFound`] for a plugin that is not running, [`PluginError::Service`]
    /// for an unknown service or a start handler that failed (the service is then
    /// [`Failed`](super::ServiceState::Failed)).
    pub async fn start_service(&self, name: &str) -> Result<ServiceInfo, PluginError> {
        self.manager.start_service(&self.id, name).await
    }

    /// Stops the plugin's service `name` and waits for its stop handler. Stopping a service
    /// that is not running changes nothing.
    ///
    /// # Errors
    ///
    /// As [`start_service`](Self::start_service).
    pub async fn stop_service(&self, name: &str) -> Result<ServiceInfo, PluginError> {
        self.manager.stop_service(&self.id, name).await
    }
}
