//! The sections of a manifest, as they are written: `[plugin]`, `[prompt]`, `[[tools]]`,
//! `[[hooks]]`, `[[commands]]`, `[[services]]`, `[[channels]]`, `[[providers]]`,
//! `[[http_routes]]`.

use std::fmt;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::Permissions;
use crate::middleware::Priority;

/// A plugin's manifest: the `[plugin]` table and every section a plugin may declare.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct PluginManifest {
    /// `[plugin]`: who the plugin is and how it runs.
    pub plugin: PluginInfoSection,
    /// `[permissions]`: what the sandbox lets it reach.
    #[serde(default)]
    pub permissions: Permissions,
    /// `[prompt]`: a prompt file the plugin contributes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<PromptSection>,
    /// `[[tools]]`: the tools it serves.
    #[serde(default)]
    pub tools: Vec<ToolSection>,
    /// `[[hooks]]`: events it handles.
    #[serde(default)]
    pub hooks: Vec<HookSection>,
    /// `[[commands]]`: direct commands, run without a model.
    #[serde(default)]
    pub commands: Vec<CommandSection>,
    /// `[[services]]`: background services.
    #[serde(default)]
    pub services: Vec<ServiceSection>,
    /// `[[channels]]`: messaging channels.
    #[serde(default)]
    pub channels: Vec<ChannelSection>,
    /// `[[providers]]`: model providers.
    #[serde(default)]
    pub providers: Vec<ProviderSection>,
    /// `[[http_routes]]`: HTTP endpoints.
    #[serde(default)]
    pub http_routes: Vec<HttpRouteSection>,
}

/// `[plugin]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct PluginInfoSection {
    /// Unique id: a lowercase letter, then up to 63 of `a-z 0-9 - _ .`.
    pub id: String,
    /// Display name; the id when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The plugin's own version (semver).
    pub version: semver::Version,
    /// What it does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Who wrote it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub author: Option<String>,
    /// How it runs.
    pub kind: PluginKind,
    /// The code to run, relative to the plugin's directory (`plugin.wasm`); required for
    /// `wasm` and `nodejs`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entry: Option<PathBuf>,
    /// The host plugin interface versions it works with (`"^1"`); any when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<semver::VersionReq>,
    /// Every tool of the plugin waits for a tool search (see `[[tools]] defer_loading`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub defer_loading: bool,
}

/// How a plugin runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum PluginKind {
    /// A WebAssembly module run by Extism, sandboxed.
    Wasm,
    /// A Node.js program spoken to over stdio.
    Nodejs,
    /// No code: prompts and configuration only.
    Static,
}

impl fmt::Display for PluginKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Wasm => "wasm",
            Self::Nodejs => "nodejs",
            Self::Static => "static",
        })
    }
}

/// `[prompt]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct PromptSection {
    /// The prompt file, relative to the plugin's directory.
    pub file: PathBuf,
    /// When the prompt is used.
    #[serde(default)]
    pub scope: PromptScope,
}

/// When a plugin's prompt is used.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum PromptScope {
    /// Always, while the plugin is active.
    #[default]
    System,
    /// When one of the plugin's tools is offered.
    Tool,
    /// Only when the user asks for it.
    Standalone,
    /// Never.
    Disabled,
}

/// `[[tools.icons]]`: one icon of a tool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct IconSection {
    /// Where the image is: an `https:` or `data:` URL.
    pub src: String,
    /// Its MIME type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// The sizes it comes in (`"48x48"`, `"any"`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sizes: Vec<String>,
    /// The theme it is drawn for: `light` or `dark`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub theme: Option<crate::IconTheme>,
}

impl From<&IconSection> for crate::Icon {
    fn from(section: &IconSection) -> Self {
        let mut icon = Self::new(&section.src).with_sizes(section.sizes.iter().cloned());
        icon.mime_type.clone_from(&section.mime_type);
        icon.theme = section.theme;
        icon
    }
}

/// `[[tools]]`: one tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
#[expect(
    clippy::struct_excessive_bools,
    reason = "each is one yes-or-no key of the manifest, as `ToolDefinition` has it"
)]
pub struct ToolSection {
    /// The name the model calls it by (1 to 64 of `a-z A-Z 0-9 _ -`).
    pub name: String,
    /// What it does, for the model.
    pub description: String,
    /// A name for people ("Word count"), shown by clients instead of `name`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// `[[tools.icons]]`: images that stand for the tool in clients.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub icons: Vec<IconSection>,
    /// `[tools.meta]`: data for clients, served as MCP's `_meta`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<serde_json::Map<String, Value>>,
    /// The function the plugin exports for it; the tool's name when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handler: Option<String>,
    /// A file whose text is added to the description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instruction_file: Option<PathBuf>,
    /// The arguments' JSON Schema, inline or as a path to a JSON file. Without it the
    /// plugin's `describe` export is asked; without that, any object is accepted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_schema: Option<SchemaSource>,
    /// The JSON Schema of what it returns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<SchemaSource>,
    /// Only reads, changes nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only: Option<bool>,
    /// May destroy or overwrite data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive: Option<bool>,
    /// Calling it twice with the same arguments does no more than once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent: Option<bool>,
    /// Reaches beyond the host (the network, other systems).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_world: Option<bool>,
    /// A person approves each call first.
    #[serde(default)]
    pub requires_confirmation: bool,
    /// A shorter timeout for this tool, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// Calls may run as MCP tasks, polled by clients that support them.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub task: bool,
    /// The tool stays out of the tools array until a tool search finds it, on a server
    /// that serves one.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub defer_loading: bool,
    /// Labels for filtering.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Example calls, for few-shot prompting.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub examples: Vec<String>,
    /// Who may call it: `human` (the model in conversation, and the default) and
    /// `code_execution` (code the model writes, in code mode).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed_callers: Vec<crate::Caller>,
    /// The arguments follow the schema exactly (OpenAI's strict mode); a schema that cannot
    /// be strict fails the load.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub strict: bool,
    /// The most characters of output the model reads from one call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_limit: Option<usize>,
}

impl ToolSection {
    /// The export that runs the tool.
    pub fn handler(&self) -> &str {
        self.handler.as_deref().unwrap_or(&self.name)
    }
}

/// A JSON Schema written inline or kept in a file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum SchemaSource {
    /// A path to a JSON file, relative to the plugin's directory.
    File(PathBuf),
    /// The schema itself.
    Inline(Value),
}

/// `[[hooks]]`: one event handler.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct HookSection {
    /// The event.
    pub event: HookEvent,
    /// How it takes part.
    #[serde(default)]
    pub kind: HookKind,
    /// When it runs among the others.
    #[serde(default)]
    pub priority: Priority,
    /// The function the plugin exports for it.
    pub handler: String,
}

/// Events a hook can handle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum HookEvent {
    /// Before a tool runs.
    BeforeToolCall,
    /// After a tool ran.
    AfterToolCall,
    /// A user message arrived.
    OnMessage,
    /// A response is about to go out.
    OnResponse,
    /// An error happened.
    OnError,
}

/// How a hook takes part in an event.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum HookKind {
    /// In turn; may change or stop what happens.
    Interceptor,
    /// Alongside; sees what happens, changes nothing.
    #[default]
    Observer,
    /// In turn; the first answer wins.
    Resolver,
}

/// `[[commands]]`: a command a user runs directly, without a model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct CommandSection {
    /// What the user types.
    pub name: String,
    /// What it does.
    #[serde(default)]
    pub description: String,
    /// The function the plugin exports for it.
    pub handler: String,
}

/// `[[services]]`: a background service.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct ServiceSection {
    /// Its name.
    pub name: String,
    /// What it does.
    #[serde(default)]
    pub description: String,
    /// The export that starts it.
    pub start_handler: String,
    /// The export that stops it.
    pub stop_handler: String,
    /// Whether it starts with the plugin.
    #[serde(default)]
    pub auto_start: bool,
}

/// `[[channels]]`: a messaging channel.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct ChannelSection {
    /// Its name.
    pub name: String,
    /// What it connects to.
    #[serde(default)]
    pub description: String,
    /// The export that connects.
    pub connect_handler: String,
    /// The export that disconnects.
    pub disconnect_handler: String,
    /// The export that sends a message.
    pub send_handler: String,
}

/// `[[providers]]`: a model provider.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct ProviderSection {
    /// Its name.
    pub name: String,
    /// What it serves.
    #[serde(default)]
    pub description: String,
    /// The export that lists models.
    pub list_models_handler: String,
    /// The export that answers a chat.
    pub chat_handler: String,
    /// The export that streams an answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream_handler: Option<String>,
    /// The export that embeds text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embed_handler: Option<String>,
}

/// `[[http_routes]]`: an HTTP endpoint, served under `/plugins/{id}/`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct HttpRouteSection {
    /// `GET`, `POST`, `PUT`, `PATCH` or `DELETE`.
    pub method: String,
    /// The path, starting with `/`.
    pub path: String,
    /// The export that answers.
    pub handler: String,
}
