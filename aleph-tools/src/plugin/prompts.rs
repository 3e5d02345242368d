//! Plugin prompts: the text a plugin's `[prompt]` contributes to the model's instructions,
//! chosen by its scope.

use std::sync::Arc;

use super::error::PluginError;
use super::manager::PluginManager;
use super::manifest::{LoadedManifest, PromptScope};

/// A plugin's prompt, as read when the plugin loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PluginPrompt {
    /// The plugin's id.
    pub plugin: String,
    /// When it is used.
    pub scope: PromptScope,
    /// The prompt file's text.
    pub text: Arc<str>,
    /// The plugin's description, from its manifest.
    pub description: Option<String>,
}

impl PluginManager {
    /// The prompts to add to the model's instructions when `offered` are the tools offered to
    /// it (pass `server.tools().names()` for every tool the filter offers): every running
    /// plugin's `system` prompt, and the `tool` prompt of each plugin one of whose tools is
    /// offered. `standalone` prompts come only from
    /// [`Plugin::prompt`](super::Plugin::prompt); `disabled` ones never. Sorted by plugin id.
    pub fn prompts(&self, offered: &[impl AsRef<str>]) -> Vec<PluginPrompt> {
        let offered: Vec<&str> = offered.iter().map(AsRef::as_ref).collect();
        let mut prompts: Vec<PluginPrompt> = self
            .serving_prompts()
            .into_iter()
            .filter(|(prompt, tools)| match prompt.scope {
                PromptScope::System => true,
                PromptScope::Tool => tools.iter().any(|t| offered.contains(&t.as_str())),
                _ => false,
            })
            .map(|(prompt, _)| prompt)
            .collect();
        prompts.sort_by(|a, b| a.plugin.cmp(&b.plugin));
        prompts
    }

    /// The `standalone` prompts of the running plugins, sorted by plugin id: the ones a user
    /// picks by name, which [`McpServer::with_prompts`](crate::mcp::McpServer::with_prompts)
    /// serves as MCP prompts.
    pub fn standalone_prompts(&self) -> Vec<PluginPrompt> {
        let mut prompts: Vec<PluginPrompt> = self
            .serving_prompts()
            .into_iter()
            .map(|(prompt, _)| prompt)
            .filter(|prompt| prompt.scope == PromptScope::Standalone)
            .collect();
        prompts.sort_by(|a, b| a.plugin.cmp(&b.plugin));
        prompts
    }

    /// The prompt of plugin `id` asked for by name (a user typing `/id`), whatever its scope
    /// but `disabled`; `None` when the plugin is not running or has no prompt.
    pub(crate) fn prompt(&self, id: &str) -> Option<PluginPrompt> {
        self.serving_prompts()
            .into_iter()
            .map(|(prompt, _)| prompt)
            .find(|prompt| prompt.plugin == id && prompt.scope != PromptScope::Disabled)
    }
}

/// Reads the plugin's `[prompt]` file, when it has one.
pub(super) fn read_prompt(loaded: &LoadedManifest) -> Result<Option<PluginPrompt>, PluginError> {
    let Some(section) = &loaded.manifest.prompt else {
        return Ok(None);
    };
    let text = loaded
        .read_text(&section.file)
        .map_err(|message| PluginError::Load {
            plugin: loaded.manifest.plugin.id.clone(),
            message: format!("its prompt file: {message}"),
        })?;
    Ok(Some(PluginPrompt {
        plugin: loaded.manifest.plugin.id.clone(),
        scope: section.scope,
        text: text.into(),
        description: loaded.manifest.plugin.description.clone(),
    }))
}
