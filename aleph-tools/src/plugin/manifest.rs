//! `PluginManifest`: what a plugin provides and needs, read from `aleph_plugin.toml`,
//! `aleph_plugin.json` or `package.json`'s `alephPlugin` section, and checked before anything
//! runs.

use std::collections::HashSet;
use std::fmt;
use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::middleware::HookPriority;
use crate::names::check_tool_name;

/// The version of the plugin interface this host implements. A manifest may ask for a range
/// with `api_version = "^1"`; a plugin asking for a range this version is outside of does not
/// load.
pub const PLUGIN_API_VERSION: semver::Version = semver::Version::new(1, 0, 0);

/// The manifest file names, in the order they are looked for.
pub const MANIFEST_FILES: [&str; 3] = ["aleph_plugin.toml", "aleph_plugin.json", "package.json"];

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

/// `[permissions]`. Nothing is granted unless listed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct Permissions {
    /// Hosts the plugin may send HTTP requests to: `"connect:https://api.example.com"`,
    /// `"connect:*.example.com"`, `"connect:*"`.
    pub network: Vec<String>,
    /// Directories it may use: `"read:./data"` (read-only) or `"write:./output"`, relative to
    /// the plugin's directory or absolute. Each is mounted at the same path inside the plugin,
    /// relative ones under `/`.
    pub filesystem: Vec<String>,
    /// Environment variables it may read, handed to it as config keys of the same name.
    pub env: Vec<String>,
}

/// One directory a plugin may use.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Mount {
    /// The directory on the host.
    pub host: PathBuf,
    /// Where the plugin sees it.
    pub guest: PathBuf,
    /// Whether writes are refused.
    pub read_only: bool,
}

impl Permissions {
    /// The host patterns of the `network` list, in Extism's form (`api.example.com`,
    /// `*.example.com`).
    pub fn allowed_hosts(&self) -> Vec<String> {
        self.network
            .iter()
            .filter_map(|rule| parse_network(rule).ok())
            .collect()
    }

    /// The `filesystem` list as mounts, relative paths taken from `plugin_dir`.
    pub fn mounts(&self, plugin_dir: &Path) -> Vec<Mount> {
        self.filesystem
            .iter()
            .filter_map(|rule| parse_filesystem(rule, plugin_dir).ok())
            .collect()
    }
}

fn parse_network(rule: &str) -> Result<String, String> {
    let Some(target) = rule.strip_prefix("connect:") else {
        return Err(format!(
            "`{rule}` must start with `connect:`, as in `connect:https://api.example.com`"
        ));
    };
    let host = target
        .split_once("://")
        .map_or(target, |(_, rest)| rest)
        .split(['/', '?', '#'])
        .next()
        .unwrap_or_default();
    let host = host.rsplit_once('@').map_or(host, |(_, host)| host);
    let host = match host.rsplit_once(':') {
        Some((name, port)) if port.chars().all(|c| c.is_ascii_digit()) => name,
        _ => host,
    };
    if host.is_empty()
        || !host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '*' | '[' | ']' | ':'))
    {
        return Err(format!(
            "`{rule}` names no host; write `connect:https://api.example.com` or `connect:*.example.com`"
        ));
    }
    Ok(host.to_owned())
}

fn parse_filesystem(rule: &str, plugin_dir: &Path) -> Result<Mount, String> {
    let (read_only, path) = if let Some(path) = rule.strip_prefix("read:") {
        (true, path)
    } else if let Some(path) = rule.strip_prefix("write:") {
        (false, path)
    } else {
        return Err(format!(
            "`{rule}` must start with `read:` or `write:`, as in `read:./data`"
        ));
    };
    if path.is_empty() {
        return Err(format!("`{rule}` names no directory"));
    }
    let path = Path::new(path);
    if path.is_absolute() {
        return Ok(Mount {
            host: path.to_path_buf(),
            guest: path.to_path_buf(),
            read_only,
        });
    }
    let relative = inside(path).ok_or_else(|| {
        format!("`{rule}` leaves the plugin's directory; use a path inside it or an absolute one")
    })?;
    Ok(Mount {
        host: plugin_dir.join(&relative),
        guest: Path::new("/").join(relative),
        read_only,
    })
}

/// `path` without `.` parts, or `None` when it climbs out with `..` or is absolute.
fn inside(path: &Path) -> Option<PathBuf> {
    let mut clean = PathBuf::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::Normal(name) => clean.push(name),
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    Some(clean)
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

/// `[[tools]]`: one tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct ToolSection {
    /// The name the model calls it by (1 to 64 of `a-z A-Z 0-9 _ -`).
    pub name: String,
    /// What it does, for the model.
    pub description: String,
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
    /// Labels for filtering.
    #[serde(default)]
    pub tags: Vec<String>,
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
    pub priority: HookPriority,
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

/// A manifest that cannot be used: the file, and every problem found in it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub struct ManifestError {
    /// The manifest file (or the plugin directory, when there is no manifest).
    pub file: PathBuf,
    /// What is wrong, one entry per problem.
    pub problems: Vec<ManifestProblem>,
}

/// One problem in a manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ManifestProblem {
    /// The key, as a path: `plugin.id`, `tools[1].name`. Empty for the file as a whole.
    pub key: String,
    /// Where in the file, 1-based line and column, when known.
    pub position: Option<(usize, usize)>,
    /// What is wrong and what to do.
    pub message: String,
}

impl fmt::Display for ManifestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let count = self.problems.len();
        write!(
            f,
            "{}: {count} problem{}",
            self.file.display(),
            if count == 1 { "" } else { "s" }
        )?;
        for problem in &self.problems {
            f.write_str("\n  - ")?;
            if let Some((line, column)) = problem.position {
                write!(f, "line {line}, column {column}: ")?;
            }
            if !problem.key.is_empty() {
                write!(f, "`{}`: ", problem.key)?;
            }
            f.write_str(&problem.message)?;
        }
        Ok(())
    }
}

impl ManifestError {
    fn single(file: &Path, key: &str, message: impl Into<String>) -> Self {
        Self {
            file: file.to_path_buf(),
            problems: vec![ManifestProblem {
                key: key.to_owned(),
                position: None,
                message: message.into(),
            }],
        }
    }
}

/// A manifest read from disk, with where it came from.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct LoadedManifest {
    /// The manifest.
    pub manifest: PluginManifest,
    /// The plugin's directory.
    pub dir: PathBuf,
    /// The file it was read from.
    pub file: PathBuf,
}

impl LoadedManifest {
    /// A path of the manifest's, relative to the plugin's directory, made absolute.
    pub fn resolve(&self, relative: &Path) -> PathBuf {
        self.dir.join(relative)
    }

    /// The entry file, when the plugin has one.
    pub fn entry(&self) -> Option<PathBuf> {
        self.manifest
            .plugin
            .entry
            .as_deref()
            .map(|e| self.resolve(e))
    }

    /// Reads a schema written inline or in a file.
    ///
    /// # Errors
    ///
    /// A message naming the file when it cannot be read or is not JSON.
    pub fn read_schema(&self, source: &SchemaSource) -> Result<Value, String> {
        match source {
            SchemaSource::Inline(schema) => Ok(schema.clone()),
            SchemaSource::File(path) => {
                let relative = inside(path).ok_or_else(|| {
                    format!(
                        "`{}` is outside the plugin's directory; name a file inside it",
                        path.display()
                    )
                })?;
                let full = self.dir.join(relative);
                let text = std::fs::read_to_string(&full)
                    .map_err(|e| format!("cannot read `{}`: {e}", full.display()))?;
                serde_json::from_str(&text)
                    .map_err(|e| format!("`{}` is not JSON: {e}", full.display()))
            }
        }
    }
}

impl PluginManifest {
    /// Reads the manifest of the plugin in `dir`: `aleph_plugin.toml`, else
    /// `aleph_plugin.json`, else the `alephPlugin` section of `package.json` (where `plugin.id`
    /// and `plugin.version` default to the package's `name` and `version`), then checks it.
    ///
    /// # Errors
    ///
    /// [`ManifestError`] naming the file and, for each problem, the key and what to fix
    /// (with line and column for TOML).
    pub fn read_dir(dir: &Path) -> Result<LoadedManifest, ManifestError> {
        let dir = dir.to_path_buf();
        for name in MANIFEST_FILES {
            let file = dir.join(name);
            let text = match std::fs::read_to_string(&file) {
                Ok(text) => text,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => {
                    return Err(ManifestError::single(
                        &file,
                        "",
                        format!("cannot read: {e}"),
                    ));
                }
            };
            let manifest = match name {
                "aleph_plugin.toml" => Self::from_toml(&text).map_err(|mut e| {
                    e.file.clone_from(&file);
                    e
                })?,
                "aleph_plugin.json" => Self::from_json(&text)
                    .map_err(|message| ManifestError::single(&file, "", message))?,
                _ => match Self::from_package_json(&text)
                    .map_err(|message| ManifestError::single(&file, "", message))?
                {
                    Some(manifest) => manifest,
                    None => continue,
                },
            };
            let loaded = LoadedManifest {
                manifest,
                dir: dir.clone(),
                file,
            };
            loaded.check(&text)?;
            return Ok(loaded);
        }
        Err(ManifestError::single(
            &dir,
            "",
            "no manifest: add `aleph_plugin.toml` (or `aleph_plugin.json`, or an `alephPlugin` section in `package.json`)",
        ))
    }

    /// Parses TOML manifest text. Only the shape is checked here; [`read_dir`](Self::read_dir)
    /// also checks the rules and the files the manifest names.
    ///
    /// # Errors
    ///
    /// [`ManifestError`] with the key and the line and column.
    pub fn from_toml(text: &str) -> Result<Self, ManifestError> {
        toml::from_str(text).map_err(|e| {
            let position = e.span().map(|span| line_column(text, span.start));
            ManifestError {
                file: PathBuf::from("aleph_plugin.toml"),
                problems: vec![ManifestProblem {
                    key: String::new(),
                    position,
                    message: e.message().trim_end().to_owned(),
                }],
            }
        })
    }

    /// Parses JSON manifest text; see [`from_toml`](Self::from_toml).
    ///
    /// # Errors
    ///
    /// What is wrong, with its line and column.
    pub fn from_json(text: &str) -> Result<Self, String> {
        serde_json::from_str(text).map_err(|e| e.to_string())
    }

    /// Reads `package.json` text: `Ok(None)` when it has no `alephPlugin` section.
    ///
    /// # Errors
    ///
    /// What is wrong with the section.
    pub fn from_package_json(text: &str) -> Result<Option<Self>, String> {
        let mut package: Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
        let Some(mut section) = package.get_mut("alephPlugin").map(Value::take) else {
            return Ok(None);
        };
        if let Some(info) = section.get_mut("plugin").and_then(Value::as_object_mut) {
            for (key, from) in [("id", "name"), ("version", "version")] {
                if !info.contains_key(key)
                    && let Some(value) = package.get(from)
                {
                    info.insert(key.to_owned(), value.clone());
                }
            }
        }
        serde_json::from_value(section)
            .map(Some)
            .map_err(|e| format!("in `alephPlugin`: {e}"))
    }
}

fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

/// Where `key` (`tools[1].name`) sits in TOML `text`.
fn toml_position(text: &str, key: &str) -> Option<(usize, usize)> {
    use toml::de::{DeTable, DeValue};
    let root = DeTable::parse(text).ok()?;
    let mut span = root.span();
    let mut table = Some(root.get_ref());
    for part in key.split('.') {
        let (name, index) = match part.split_once('[') {
            Some((name, rest)) => (name, rest.trim_end_matches(']').parse::<usize>().ok()),
            None => (part, None),
        };
        // A key that is missing is placed at the table that should hold it.
        let Some((_, found)) =
            table.and_then(|table| table.iter().find(|(k, _)| k.get_ref().as_ref() == name))
        else {
            break;
        };
        let mut value = found;
        if let Some(index) = index {
            let DeValue::Array(items) = found.get_ref() else {
                break;
            };
            let Some(item) = items.get(index) else { break };
            value = item;
        }
        span = value.span();
        table = match value.get_ref() {
            DeValue::Table(inner) => Some(inner),
            _ => None,
        };
    }
    Some(line_column(text, span.start))
}

impl LoadedManifest {
    /// Checks the rules a parsed manifest must follow and the files it names. `text` is the
    /// file's text, used to place problems in TOML files.
    fn check(&self, text: &str) -> Result<(), ManifestError> {
        let mut problems = Vec::new();
        let mut add = |key: String, message: String| problems.push((key, message));
        self.check_plugin(&mut add);
        self.check_tools(&mut add);
        self.check_handlers(&mut add);
        if problems.is_empty() {
            return Ok(());
        }
        let is_toml = self.file.extension().is_some_and(|e| e == "toml");
        Err(ManifestError {
            file: self.file.clone(),
            problems: problems
                .into_iter()
                .map(|(key, message)| ManifestProblem {
                    position: if is_toml {
                        toml_position(text, &key)
                    } else {
                        None
                    },
                    key,
                    message,
                })
                .collect(),
        })
    }

    /// `[plugin]`, `[permissions]` and `[prompt]`.
    fn check_plugin(&self, add: &mut impl FnMut(String, String)) {
        let m = &self.manifest;
        let info = &m.plugin;

        if !is_valid_id(&info.id) {
            add(
                "plugin.id".into(),
                format!(
                    "`{}` is not a valid id; use a lowercase letter followed by up to 63 of `a-z 0-9 - _ .`",
                    info.id
                ),
            );
        }
        if let Some(range) = &info.api_version
            && !range.matches(&PLUGIN_API_VERSION)
        {
            add(
                "plugin.api_version".into(),
                format!(
                    "the plugin needs plugin API `{range}`, and this host implements {PLUGIN_API_VERSION}; update the host or the plugin"
                ),
            );
        }
        match (info.kind, &info.entry) {
            (PluginKind::Static, Some(_)) => add(
                "plugin.entry".into(),
                "a `static` plugin runs no code; remove `entry` or change `kind`".into(),
            ),
            (PluginKind::Static, None) => {
                if !m.tools.is_empty() {
                    add(
                        "tools".into(),
                        "a `static` plugin runs no code, so it cannot serve tools; set `kind = \"wasm\"` and an `entry`".into(),
                    );
                }
            }
            (kind, None) => add(
                "plugin.entry".into(),
                format!("a `{kind}` plugin needs `entry`, the file to run, such as `plugin.wasm`"),
            ),
            (_, Some(entry)) => self.check_file("plugin.entry", entry, add),
        }

        for (i, rule) in m.permissions.network.iter().enumerate() {
            if let Err(message) = parse_network(rule) {
                add(format!("permissions.network[{i}]"), message);
            }
        }
        for (i, rule) in m.permissions.filesystem.iter().enumerate() {
            if let Err(message) = parse_filesystem(rule, &self.dir) {
                add(format!("permissions.filesystem[{i}]"), message);
            }
        }
        for (i, name) in m.permissions.env.iter().enumerate() {
            if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                add(
                    format!("permissions.env[{i}]"),
                    format!("`{name}` is not an environment variable name; use `A-Z 0-9 _`"),
                );
            }
        }
        if let Some(prompt) = &m.prompt {
            self.check_file("prompt.file", &prompt.file, add);
        }
    }

    /// `[[tools]]`.
    fn check_tools(&self, add: &mut impl FnMut(String, String)) {
        let m = &self.manifest;
        let mut names = HashSet::new();
        for (i, tool) in m.tools.iter().enumerate() {
            let key = format!("tools[{i}]");
            if let Err(rule) = check_tool_name(&tool.name) {
                add(format!("{key}.name"), rule);
            } else if !names.insert(tool.name.as_str()) {
                add(
                    format!("{key}.name"),
                    format!("`{}` is declared twice; tool names must differ", tool.name),
                );
            }
            if tool.description.trim().is_empty() {
                add(
                    format!("{key}.description"),
                    "is empty; say what the tool does, for the model".into(),
                );
            }
            if let Some(handler) = &tool.handler
                && !is_valid_export(handler)
            {
                add(
                    format!("{key}.handler"),
                    format!("`{handler}` is not a function name"),
                );
            }
            if let Some(path) = &tool.instruction_file {
                self.check_file(&format!("{key}.instruction_file"), path, add);
            }
            for (field, source) in [
                ("input_schema", &tool.input_schema),
                ("output_schema", &tool.output_schema),
            ] {
                let Some(source) = source else { continue };
                match self.read_schema(source) {
                    Ok(schema) if field == "input_schema" && !crate::schema::is_object_schema(&schema) => add(
                        format!("{key}.{field}"),
                        "must describe an object (`type = \"object\"` with `properties`); tool arguments are always an object".into(),
                    ),
                    Ok(schema) if !(schema.is_object() || schema.is_boolean()) => add(
                        format!("{key}.{field}"),
                        "is not a JSON Schema (an object)".into(),
                    ),
                    Ok(_) => {}
                    Err(message) => add(format!("{key}.{field}"), message),
                }
            }
        }
    }

    /// Hooks, commands, services, channels, providers and HTTP routes.
    fn check_handlers(&self, add: &mut impl FnMut(String, String)) {
        let m = &self.manifest;
        let mut handlers: Vec<(String, &str)> = Vec::new();
        for (i, hook) in m.hooks.iter().enumerate() {
            handlers.push((format!("hooks[{i}].handler"), &hook.handler));
        }
        let mut commands = HashSet::new();
        for (i, command) in m.commands.iter().enumerate() {
            if command.name.is_empty() || !commands.insert(command.name.as_str()) {
                add(
                    format!("commands[{i}].name"),
                    format!("`{}` is empty or declared twice", command.name),
                );
            }
            handlers.push((format!("commands[{i}].handler"), &command.handler));
        }
        for (i, service) in m.services.iter().enumerate() {
            handlers.push((
                format!("services[{i}].start_handler"),
                &service.start_handler,
            ));
            handlers.push((format!("services[{i}].stop_handler"), &service.stop_handler));
        }
        for (i, channel) in m.channels.iter().enumerate() {
            handlers.push((
                format!("channels[{i}].connect_handler"),
                &channel.connect_handler,
            ));
            handlers.push((
                format!("channels[{i}].disconnect_handler"),
                &channel.disconnect_handler,
            ));
            handlers.push((format!("channels[{i}].send_handler"), &channel.send_handler));
        }
        for (i, provider) in m.providers.iter().enumerate() {
            handlers.push((
                format!("providers[{i}].list_models_handler"),
                &provider.list_models_handler,
            ));
            handlers.push((
                format!("providers[{i}].chat_handler"),
                &provider.chat_handler,
            ));
        }
        for (i, route) in m.http_routes.iter().enumerate() {
            if !matches!(
                route.method.as_str(),
                "GET" | "POST" | "PUT" | "PATCH" | "DELETE"
            ) {
                add(
                    format!("http_routes[{i}].method"),
                    format!(
                        "`{}` is not one of GET, POST, PUT, PATCH, DELETE",
                        route.method
                    ),
                );
            }
            if !route.path.starts_with('/') {
                add(
                    format!("http_routes[{i}].path"),
                    format!("`{}` must start with `/`", route.path),
                );
            }
            handlers.push((format!("http_routes[{i}].handler"), &route.handler));
        }
        for (key, handler) in handlers {
            if !is_valid_export(handler) {
                add(key, format!("`{handler}` is not a function name"));
            }
        }
    }

    fn check_file(&self, key: &str, path: &Path, add: &mut impl FnMut(String, String)) {
        let Some(relative) = inside(path) else {
            add(
                key.to_owned(),
                format!(
                    "`{}` is outside the plugin's directory; name a file inside it",
                    path.display()
                ),
            );
            return;
        };
        let full = self.dir.join(relative);
        if !full.is_file() {
            add(
                key.to_owned(),
                format!(
                    "`{}` does not exist; build the plugin or fix the path",
                    full.display()
                ),
            );
        }
    }
}

fn is_valid_id(id: &str) -> bool {
    let mut chars = id.chars();
    chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && id.len() <= 64
        && chars
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '-' | '_' | '.'))
}

fn is_valid_export(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 256
        && !name.chars().any(|c| c.is_control() || c.is_whitespace())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn network_rules_become_hosts() {
        for (rule, host) in [
            ("connect:https://api.example.com/v1", "api.example.com"),
            ("connect:https://*", "*"),
            ("connect:*.example.com", "*.example.com"),
            ("connect:http://127.0.0.1:8080", "127.0.0.1"),
            ("connect:https://user@host.io", "host.io"),
        ] {
            assert_eq!(parse_network(rule).as_deref(), Ok(host), "{rule}");
        }
        assert!(
            parse_network("https://x.com")
                .unwrap_err()
                .contains("connect:")
        );
        assert!(parse_network("connect:https://").is_err());
        assert!(parse_network("connect:a b").is_err());
    }

    #[test]
    fn filesystem_rules_become_mounts() {
        let dir = Path::new("/plugins/p");
        let mount = parse_filesystem("read:./data", dir).unwrap();
        assert_eq!(mount.host, Path::new("/plugins/p/data"));
        assert_eq!(mount.guest, Path::new("/data"));
        assert!(mount.read_only);
        assert!(!parse_filesystem("write:/tmp/out", dir).unwrap().read_only);
        assert!(
            parse_filesystem("read:../secrets", dir)
                .unwrap_err()
                .contains("leaves")
        );
        assert!(parse_filesystem("data", dir).unwrap_err().contains("read:"));
        assert!(parse_filesystem("read:", dir).is_err());
    }

    #[test]
    fn keys_are_placed_in_toml() {
        let text = "[plugin]\nid = \"x\"\n\n[[tools]]\nname = \"a\"\n\n[[tools]]\nname = \"b b\"\n";
        assert_eq!(toml_position(text, "plugin.id"), Some((2, 6)));
        assert_eq!(toml_position(text, "tools[1].name"), Some((8, 8)));
        // Missing keys are placed at the nearest table that exists.
        assert_eq!(toml_position(text, "plugin.entry"), Some((1, 1)));
        assert!(toml_position(text, "tools[7].name").is_some());
    }

    #[test]
    fn ids_follow_the_rules() {
        assert!(is_valid_id("text-tools.v2_x"));
        for bad in ["", "Text", "1x", "a b", "a/b", &"a".repeat(65)] {
            assert!(!is_valid_id(bad), "{bad}");
        }
    }
}
