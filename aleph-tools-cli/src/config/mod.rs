//! The command's configuration file: where it is found, what it holds, and the one key the
//! command writes (`disabled`, by `plugins enable` and `plugins disable`).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use aleph_tools::ToolFilter;
use aleph_tools::plugin::PluginsConfig;
use aleph_tools::sandbox::Sandbox;
use anyhow::{Context as _, bail};
use serde::Deserialize;

mod sections;

pub use self::sections::{AdminSection, BrowserSection, CodeModeSection, ToolSearchSection};

/// The config file a project may hold; read only when named.
pub const LOCAL_FILE: &str = "aleph-tools.toml";

/// The plugin directory a project may hold; searched only when named.
const LOCAL_PLUGINS: &str = "plugins";

/// Everything the command reads from its configuration file.
#[derive(Debug, Clone, Default)]
pub struct Config {
    /// The file read, when there is one.
    pub file: Option<PathBuf>,
    /// `[plugins]` (or `[extensions]`), search paths made absolute from the file's directory.
    pub plugins: PluginsConfig,
    /// `[tools]`: which tools are offered, and which need confirmation.
    pub tools: ToolFilter,
    /// `[server]`: how the MCP server presents itself.
    pub server: ServerSection,
    /// `[[mcp_servers]]`: MCP servers whose tools are served beside the plugins'.
    pub mcp_servers: Vec<McpServerSection>,
    /// The built-in tools, when `--builtin` asks for them.
    pub builtin: Option<BuiltinTools>,
    /// The directories the built-in tools and `pdf_generate` may use (`--allowed-path`);
    /// the working directory when empty.
    pub allowed_paths: Vec<PathBuf>,
    /// The directories of Markdown skills `--skills` names, reloaded as they change when
    /// plugins are.
    pub skills: Vec<PathBuf>,
    /// `[sandbox]`: the policy `bash` and `code_exec` run under (the call's allowed
    /// directories are added to its writable paths), and code mode's scripts.
    pub sandbox: Sandbox,
    /// `[code_mode]` (or `--code-mode`): the `code` tool and the tools open to it.
    pub code_mode: CodeModeSection,
    /// `[tool_search]` (or `--tool-search`, `--defer`): deferred tools and the search that
    /// finds them.
    pub tool_search: ToolSearchSection,
    /// `[browser]` (or `--browser`): the browser tools.
    pub browser: BrowserSection,
    /// `[admin]`: the management API's downloads, and its methods as tools over stdio.
    pub admin: AdminSection,
}

/// What `--builtin` and `--searxng` ask for.
#[derive(Debug, Clone, Default)]
pub struct BuiltinTools {
    /// A SearXNG instance for `web_search`; no `web_search` without one.
    pub searxng: Option<String>,
}

/// `[server]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ServerSection {
    /// The name MCP clients see (`aleph-tools` when left out).
    pub name: Option<String>,
    /// Instructions MCP clients may give their model.
    pub instructions: Option<String>,
    /// Host names HTTP clients may use (loopback names when left out).
    pub allowed_hosts: Option<Vec<String>>,
    /// `[[server.tokens]]`: the bearer tokens HTTP clients must send; anyone may call when
    /// there are none.
    pub tokens: Vec<TokenSection>,
    /// Origins of web pages that may call the server from a browser (`"*"` for any).
    pub cors_origins: Option<Vec<String>>,
    /// Seconds an HTTP session may go unused before it ends (300 when left out).
    pub session_idle_timeout_secs: Option<u64>,
    /// The most HTTP sessions open at once (1024 when left out).
    pub max_sessions: Option<usize>,
    /// The most HTTP sessions one token's identity holds at once (64 when left out).
    pub max_sessions_per_identity: Option<usize>,
    /// Seconds running calls get to finish when `serve --http` is told to stop (SIGTERM or
    /// Ctrl-C); those still running then are cancelled (25 when left out).
    pub drain_timeout_secs: Option<u64>,
    /// The Redis (or Valkey) that replicas share their sessions' handshakes, their streams'
    /// events and their MCP tasks through, such as `redis://127.0.0.1:6379/`.
    pub redis_url: Option<String>,
    /// The environment variable holding that URL, when it holds a password.
    pub redis_url_env: Option<String>,
}

/// One `[[server.tokens]]` entry: a token, read from the environment, and whom it stands for.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenSection {
    /// Who the token's bearer is; tools see it as the call's identity.
    pub subject: String,
    /// The environment variable holding the token (never the token itself).
    pub env: String,
    /// The scopes granted with it, which `Permission` rules can require.
    #[serde(default)]
    pub scopes: Vec<String>,
}

/// One `[[mcp_servers]]` entry: a command to start, or a URL to connect to.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpServerSection {
    /// The server's name, used in messages and as the prefix of its tools' names.
    pub name: String,
    /// The program to start (speaking MCP over stdio).
    pub command: Option<String>,
    /// Its arguments.
    #[serde(default)]
    pub args: Vec<String>,
    /// Variables added to its environment.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Its working directory.
    pub cwd: Option<PathBuf>,
    /// The URL of a streamable HTTP MCP server, instead of a command.
    pub url: Option<String>,
    /// The prefix of its tools' names; `name` when left out, none when empty.
    pub prefix: Option<String>,
    /// Its tools wait for a tool search (`[tool_search]`) instead of being listed.
    #[serde(default)]
    pub defer_loading: bool,
    /// The environment variable holding the bearer token sent to a `url`.
    pub bearer_token_env: Option<String>,
    /// The sandbox a `command` runs in (`[mcp_servers.sandbox]`); the default policy when
    /// left out: system directories read-only, its working directory writable, no network.
    pub sandbox: Option<Sandbox>,
}

#[derive(Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
struct FileShape {
    plugins: Option<toml::Value>,
    extensions: Option<toml::Value>,
    tools: ToolFilter,
    server: ServerSection,
    mcp_servers: Vec<McpServerSection>,
    sandbox: Sandbox,
    code_mode: CodeModeSection,
    tool_search: ToolSearchSection,
    browser: BrowserSection,
    admin: AdminSection,
}

impl Config {
    /// Turns every sandbox off (`--no-sandbox`): `bash`, `code_exec`, Node.js plugins and
    /// wrapped MCP servers run with this process's rights.
    pub fn without_sandbox(&mut self) {
        self.sandbox = Sandbox::none();
        self.plugins.runtimes.nodejs.sandbox = Sandbox::none();
        for server in &mut self.mcp_servers {
            server.sandbox = Some(Sandbox::none());
        }
        self.browser.unconfined = true;
    }

    /// Reads the configuration: `explicit` when given (it must exist), else the file named
    /// by `ALEPH_TOOLS_CONFIG`, else the user's ([`user_file`], else `~/.aleph/config.toml`);
    /// the defaults when there is none. A file in the working directory is read only when
    /// named: a cloned repository's `aleph-tools.toml` could start any program through
    /// `[[mcp_servers]]`.
    pub fn load(explicit: Option<&Path>) -> anyhow::Result<Self> {
        let Some(file) = locate(explicit) else {
            let mut config = Self::default();
            // Without a file, the plugins come from the user's and the system's directories,
            // never from one relative to wherever the command runs.
            config
                .plugins
                .search_paths
                .retain(|path| path.is_absolute() || path.starts_with("~"));
            return Ok(config);
        };
        if !file.is_file() {
            bail!("the config file `{}` does not exist", file.display());
        }
        let text = std::fs::read_to_string(&file)
            .with_context(|| format!("cannot read `{}`", file.display()))?;
        Self::parse(&text, &file)
    }

    /// One line saying where the configuration came from, and what in the working directory
    /// was left alone, for standard error.
    pub fn origin(&self, plugins_named: bool) -> String {
        let mut line = match &self.file {
            Some(file) => format!("aleph-tools: config `{}`", file.display()),
            None => "aleph-tools: no config file (defaults)".to_owned(),
        };
        let unread = Path::new(LOCAL_FILE);
        if unread.is_file()
            && !self
                .file
                .as_deref()
                .is_some_and(|file| same_file(file, unread))
        {
            let _ = write!(
                line,
                "; `./{LOCAL_FILE}` is not read unless named (`--config {LOCAL_FILE}`)"
            );
        }
        let local = Path::new(LOCAL_PLUGINS);
        if !plugins_named
            && local.is_dir()
            && !self
                .plugins
                .resolved_search_paths()
                .iter()
                .any(|path| same_file(path, local))
        {
            let _ = write!(
                line,
                "; `./{LOCAL_PLUGINS}` is not searched unless named (`--plugins {LOCAL_PLUGINS}`)"
            );
        }
        line
    }

    /// Reads the configuration from `text`, the contents of `file`.
    pub fn parse(text: &str, file: &Path) -> anyhow::Result<Self> {
        let at = || format!("in `{}`", file.display());
        let mut shape: FileShape = toml::from_str(text).with_context(at)?;
        let mut plugins = PluginsConfig::from_toml(text).with_context(at)?;
        let base = file.parent().unwrap_or(Path::new("."));
        for path in &mut plugins.search_paths {
            if path.is_relative() && !path.starts_with("~") {
                *path = base.join(&*path);
            }
        }
        if let Some(model) = &mut shape.tool_search.model
            && model.is_relative()
        {
            *model = base.join(&*model);
        }
        if let Some(ca) = &mut shape.admin.ca_file
            && ca.is_relative()
        {
            *ca = base.join(&*ca);
        }
        for (i, server) in shape.mcp_servers.iter().enumerate() {
            if server.bearer_token_env.is_some() && server.url.is_none() {
                bail!(
                    "in `{}`: `mcp_servers[{i}]` (`{}`) has `bearer_token_env` but no `url`; a command gets its secrets through `env`",
                    file.display(),
                    server.name
                );
            }
            if server.sandbox.is_some() && server.url.is_some() {
                bail!(
                    "in `{}`: `mcp_servers[{i}]` (`{}`) has a `sandbox` but a `url`; only a `command` runs here, in a sandbox",
                    file.display(),
                    server.name
                );
            }
            if server.command.is_some() == server.url.is_some() {
                bail!(
                    "in `{}`: `mcp_servers[{i}]` (`{}`) needs exactly one of `command` and `url`",
                    file.display(),
                    server.name
                );
            }
        }
        Ok(Self {
            file: Some(file.to_path_buf()),
            plugins,
            tools: shape.tools,
            server: shape.server,
            mcp_servers: shape.mcp_servers,
            builtin: None,
            allowed_paths: Vec::new(),
            skills: Vec::new(),
            sandbox: shape.sandbox,
            code_mode: shape.code_mode,
            tool_search: shape.tool_search,
            browser: shape.browser,
            admin: shape.admin,
        })
    }
}

/// The configuration file in use, by the order [`Config::load`] documents.
pub fn locate(explicit: Option<&Path>) -> Option<PathBuf> {
    if let Some(path) = explicit {
        return Some(path.to_path_buf());
    }
    if let Some(path) = std::env::var_os("ALEPH_TOOLS_CONFIG") {
        return Some(PathBuf::from(path));
    }
    [user_file(), older_user_file()]
        .into_iter()
        .flatten()
        .find(|file| file.is_file())
}

/// Whether two paths lead to the same file or directory.
fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// The user's configuration file, in the platform's directory for command-line programs'
/// settings: `$XDG_CONFIG_HOME/aleph-tools/config.toml` (else
/// `~/.config/aleph-tools/config.toml`) on Linux and macOS,
/// `%APPDATA%\aleph-tools\config.toml` on Windows. The one the command writes when there is
/// none.
pub fn user_file() -> Option<PathBuf> {
    use etcetera::BaseStrategy as _;
    let dirs = etcetera::choose_base_strategy().ok()?;
    Some(dirs.config_dir().join("aleph-tools").join("config.toml"))
}

/// `~/.aleph/config.toml`, beside the user's plugins in `~/.aleph/plugins`: read when
/// [`user_file`] does not exist.
fn older_user_file() -> Option<PathBuf> {
    etcetera::home_dir()
        .ok()
        .filter(|home| home.is_absolute())
        .map(|home| home.join(".aleph").join("config.toml"))
}

/// Adds `id` to the `disabled` list of the plugin table in `file` (creating the file, the
/// table and the list as needed), or removes it; the rest of the file is kept as written.
/// Returns whether the file changed.
pub fn set_disabled(file: &Path, id: &str, disabled: bool) -> anyhow::Result<bool> {
    let text = match std::fs::read_to_string(file) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(error) => return Err(error).context(format!("cannot read `{}`", file.display())),
    };
    let mut doc: toml_edit::DocumentMut = text
        .parse()
        .with_context(|| format!("in `{}`", file.display()))?;
    let name = if doc.contains_key("extensions") && !doc.contains_key("plugins") {
        "extensions"
    } else {
        "plugins"
    };
    let table = doc
        .entry(name)
        .or_insert_with(toml_edit::table)
        .as_table_like_mut()
        .with_context(|| format!("in `{}`: `{name}` is not a table", file.display()))?;
    let list = table
        .entry("disabled")
        .or_insert(toml_edit::value(toml_edit::Array::new()))
        .as_array_mut()
        .with_context(|| format!("in `{}`: `{name}.disabled` is not a list", file.display()))?;
    let position = list.iter().position(|item| item.as_str() == Some(id));
    let changed = match (disabled, position) {
        (true, None) => {
            list.push(id);
            true
        }
        (false, Some(i)) => {
            list.remove(i);
            true
        }
        _ => false,
    };
    if changed {
        if let Some(dir) = file.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create `{}`", dir.display()))?;
        }
        std::fs::write(file, doc.to_string())
            .with_context(|| format!("cannot write `{}`", file.display()))?;
    }
    Ok(changed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_reads_every_section() {
        let config = Config::parse(
            r#"
[extensions]
search_paths = ["plugins", "/abs"]

[tools]
blocked = ["dangerous_*"]
require_confirmation = ["note_*"]

[server]
name = "mine"
session_idle_timeout_secs = 120
max_sessions = 200
max_sessions_per_identity = 8
drain_timeout_secs = 45

[[mcp_servers]]
name = "everything"
command = "npx"
args = ["-y", "server"]
"#,
            Path::new("/etc/aleph/aleph-tools.toml"),
        )
        .unwrap();
        assert_eq!(
            config.plugins.search_paths,
            [PathBuf::from("/etc/aleph/plugins"), PathBuf::from("/abs")]
        );
        assert!(config.tools.blocked.contains("dangerous_*"));
        assert!(config.tools.require_confirmation.contains("note_*"));
        assert_eq!(config.server.name.as_deref(), Some("mine"));
        assert_eq!(config.server.session_idle_timeout_secs, Some(120));
        assert_eq!(config.server.max_sessions, Some(200));
        assert_eq!(config.server.max_sessions_per_identity, Some(8));
        assert_eq!(config.server.drain_timeout_secs, Some(45));
        assert_eq!(config.mcp_servers[0].args, ["-y", "server"]);
    }

    #[test]
    fn the_guides_example_reads() {
        // The guide is in the repository, not in the published package: read at run time,
        // so the package's own tests build without it.
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../book/src/command.md");
        let Ok(chapter) = std::fs::read_to_string(&path) else {
            assert!(
                !Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join("../.git")
                    .exists(),
                "{} is missing from the repository",
                path.display()
            );
            return;
        };
        let start = chapter
            .find("```toml\n")
            .expect("the chapter has a TOML example")
            + 8;
        let end = start + chapter[start..].find("```").expect("the example ends");
        let config = Config::parse(&chapter[start..end], Path::new("/srv/aleph-tools.toml"))
            .expect("the guide's example is a valid config");
        assert_eq!(config.mcp_servers.len(), 2);
        assert_eq!(config.plugins.disabled, ["weather-node"]);
        assert_eq!(config.server.tokens[0].env, "ALEPH_TOOLS_CI_TOKEN");
        assert_eq!(
            config.mcp_servers[1].bearer_token_env.as_deref(),
            Some("REMOTE_TOKEN")
        );
        assert_eq!(
            config.plugins.search_paths[0],
            PathBuf::from("/srv/plugins")
        );
    }

    #[test]
    fn mistakes_are_named() {
        let file = Path::new("c.toml");
        for (text, needle) in [
            ("[tool]\nblocked = []", "unknown field `tool`"),
            (
                "[[mcp_servers]]\nname = \"x\"",
                "exactly one of `command` and `url`",
            ),
            ("[plugins]\nsearch_path = []", "unknown field `search_path`"),
            (
                "[[mcp_servers]]\nname = \"x\"\ncommand = \"x\"\nbearer_token_env = \"T\"",
                "has `bearer_token_env` but no `url`",
            ),
            (
                "[[server.tokens]]\nsubject = \"ci\"\ntoken = \"secret\"",
                "unknown field `token`",
            ),
            (
                "[plugins.policy]\nnetwork = [\"x.com\"]",
                "plugins.policy.network[0]",
            ),
            (
                "[sandbox]\nnetwork = \"proxy\"",
                "a proxy needs the hosts it admits",
            ),
            (
                "[sandbox]\nnetwork = { proxy = [\"pypi.org\", \"no host/\"] }",
                "`no host/` is not a host pattern",
            ),
        ] {
            let error = format!("{:#}", Config::parse(text, file).unwrap_err());
            assert!(error.contains(needle), "{text}: {error}");
            assert!(error.contains("c.toml"), "{error}");
        }
    }

    #[test]
    fn disabling_edits_only_the_list() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("sub/aleph-tools.toml");
        assert!(set_disabled(&file, "a", true).unwrap());
        assert!(!set_disabled(&file, "a", true).unwrap());
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(text.contains("disabled = [\"a\"]"), "{text}");

        std::fs::write(&file, "# mine\n[extensions]\nhot_reload = false # keep\n").unwrap();
        set_disabled(&file, "b", true).unwrap();
        set_disabled(&file, "c", true).unwrap();
        set_disabled(&file, "b", false).unwrap();
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(
            text.starts_with("# mine\n[extensions]\nhot_reload = false # keep\n"),
            "{text}"
        );
        assert_eq!(Config::parse(&text, &file).unwrap().plugins.disabled, ["c"]);
    }
}
