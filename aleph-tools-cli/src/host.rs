//! What every subcommand starts from: a tool server with the configured filter, the plugin
//! manager, and the wrapped MCP servers.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use aleph_tools::builtin::{CodeExec, FileOps, MetaTools, SearxNg, Skills, WebFetch, WebSearch};
use aleph_tools::mcp::{McpConnection, McpEndpoint};
use aleph_tools::plugin::{PluginInfo, PluginManager, PluginManifest};
use aleph_tools::sandbox::Sandbox;
use aleph_tools::{AlephToolServer, ToolServerBuilder};
use anyhow::{Context as _, bail};

use crate::approval::Approval;
use crate::config::{BuiltinTools, Config, McpServerSection};
use crate::progress::Spinner;

/// The variable that counts how deep `aleph-tools` runs inside `[[mcp_servers]]` entries
/// that start `aleph-tools` again.
const DEPTH_VARIABLE: &str = "ALEPH_TOOLS_DEPTH";

/// How deep that may go: deeper is a config that wraps itself.
const MAX_DEPTH: u32 = 8;

/// How many `aleph-tools` processes started this one through `[[mcp_servers]]`.
fn depth() -> u32 {
    std::env::var(DEPTH_VARIABLE)
        .ok()
        .and_then(|d| d.parse().ok())
        .unwrap_or(0)
}

/// Which plugins to run.
pub enum Plugins<'a> {
    /// None: only the manager, to install, uninstall or check.
    None,
    /// Every plugin in the search paths.
    All,
    /// The plugin with this id alone.
    Only(&'a str),
}

/// Bounds the tools that touch files (the built-in tools, `pdf_generate`) by the allowed
/// paths (the working directory when none are given), which must exist; the working
/// directory is the process's when it lies inside them.
fn with_paths(builder: ToolServerBuilder, paths: &[PathBuf]) -> anyhow::Result<ToolServerBuilder> {
    let allowed = if paths.is_empty() {
        vec![std::env::current_dir().context("the working directory cannot be read")?]
    } else {
        paths.to_vec()
    };
    let allowed = allowed
        .iter()
        .map(|dir| match dir.canonicalize() {
            Ok(dir) if dir.is_dir() => Ok(dir),
            _ => Err(anyhow::anyhow!(
                "--allowed-path `{}` is not a directory; give directories that exist",
                dir.display()
            )),
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let working_dir = std::env::current_dir()
        .ok()
        .and_then(|cwd| cwd.canonicalize().ok())
        .filter(|cwd| allowed.iter().any(|dir| cwd.starts_with(dir)))
        .unwrap_or_else(|| allowed[0].clone());
    Ok(builder
        .with_allowed_paths(allowed)
        .with_working_dir(working_dir))
}

/// Adds the built-in tools.
fn with_builtin(
    builder: ToolServerBuilder,
    builtin: &BuiltinTools,
    sandbox: &Sandbox,
) -> ToolServerBuilder {
    let mut builder = builder
        .with_builtin(FileOps::default())
        .with_builtin(CodeExec::new().bash_only().sandbox(sandbox.clone()))
        .with_builtin(CodeExec::new().sandbox(sandbox.clone()))
        .with_builtin(WebFetch::default())
        .with_builtin(MetaTools::default());
    if let Some(url) = &builtin.searxng {
        builder = builder.with_builtin(WebSearch::new(SearxNg::new(url.clone())));
    }
    builder
}

/// A running set of tools.
pub struct Host {
    /// The server every tool is served through.
    pub server: AlephToolServer,
    /// The plugins.
    pub manager: PluginManager,
    /// The wrapped MCP servers, kept open while the host lives (dropping one withdraws its
    /// tools); those connected in the background join when they connect.
    connections: Arc<Mutex<Vec<McpConnection>>>,
}

impl Host {
    /// Builds the server, loads `plugins` and, when `wrap` is set, connects to the configured
    /// MCP servers. A plugin or MCP server that fails is reported on standard error and
    /// left out; the rest are served. `approval` decides the calls that need confirmation.
    pub async fn start(
        config: &Config,
        plugins: Plugins<'_>,
        wrap: bool,
        approval: Approval,
    ) -> anyhow::Result<Self> {
        Self::start_with(config, plugins, wrap, approval, |builder| builder).await
    }

    /// As [`start`](Self::start), with `layers` adding to the server's builder first (its
    /// middleware is the outermost).
    pub async fn start_with(
        config: &Config,
        plugins: Plugins<'_>,
        wrap: bool,
        approval: Approval,
        layers: impl FnOnce(ToolServerBuilder) -> ToolServerBuilder,
    ) -> anyhow::Result<Self> {
        if wrap {
            check_depth(config)?;
        }
        let mut builder = approval.install(layers(
            AlephToolServer::builder().with_filter(config.tools.clone()),
        ));
        if config.builtin.is_some() || config.browser.enabled {
            builder = with_paths(builder, &config.allowed_paths)?;
        }
        if let Some(builtin) = &config.builtin {
            builder = with_builtin(builder, builtin, &config.sandbox);
        }
        for dir in &config.skills {
            builder = builder.with_builtin(Skills::new(dir).hot_reload(config.plugins.hot_reload));
        }
        if config.code_mode.enabled {
            builder = builder.with_builtin(config.code_mode.code_mode(&config.sandbox));
        }
        if config.tool_search.enabled {
            builder = builder.with_builtin(config.tool_search.tool_search()?);
        }
        if config.browser.enabled {
            builder = builder.with_builtin(config.browser.browser());
        }
        let server = builder.build()?;
        let manager = PluginManager::new(&server, config.plugins.clone());
        let loading = manager.clone();
        match plugins {
            Plugins::None => {}
            Plugins::All => {
                let spinner = Spinner::start("loading plugins");
                let report = tokio::task::spawn_blocking(move || loading.load_all()).await?;
                drop(spinner);
                for (dir, error) in report.failed {
                    eprintln!(
                        "warning: the plugin in `{}` is left out: {error}",
                        dir.display()
                    );
                }
            }
            Plugins::Only(id) => {
                let spinner = Spinner::start(format!("loading plugin `{id}`"));
                let id = id.to_owned();
                let loaded = tokio::task::spawn_blocking(move || load_one(&loading, &id)).await?;
                drop(spinner);
                loaded?;
            }
        }
        let connections = if wrap {
            connect_all(config, &server).await
        } else {
            Vec::new()
        };
        Ok(Self {
            server,
            manager,
            connections: Arc::new(Mutex::new(connections)),
        })
    }

    /// Connects to the configured MCP servers on a task of its own, so that serving starts at
    /// once: each server's tools join as it connects (clients hear `list_changed`), and one
    /// that hangs costs only its own time limits.
    pub fn wrap_in_background(&self, config: &Config) -> anyhow::Result<()> {
        check_depth(config)?;
        let (config, server) = (config.clone(), self.server.clone());
        let connections = Arc::clone(&self.connections);
        tokio::spawn(async move {
            let found = connect_all(&config, &server).await;
            connections
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .extend(found);
        });
        Ok(())
    }
}

/// Refuses a config that has wrapped itself too deep.
fn check_depth(config: &Config) -> anyhow::Result<()> {
    if !config.mcp_servers.is_empty() && depth() >= MAX_DEPTH {
        bail!(
            "aleph-tools is running {MAX_DEPTH} deep inside its own `[[mcp_servers]]`: an entry starts aleph-tools with a config that wraps it again; give that entry its own `--config`"
        );
    }
    Ok(())
}

/// Connects to every configured MCP server at once, each within its own time limits (the
/// library's connect timeout): one that hangs delays the result by that limit at most, never
/// by the sum of them, and is left out, with a warning, while the rest are served.
async fn connect_all(config: &Config, server: &AlephToolServer) -> Vec<McpConnection> {
    let mut attempts = tokio::task::JoinSet::new();
    for (index, section) in config.mcp_servers.iter().cloned().enumerate() {
        let server = server.clone();
        attempts.spawn(async move {
            let outcome = connect(&section, &server).await;
            (index, section.name, outcome)
        });
    }
    let spinner = (!attempts.is_empty()).then(|| {
        Spinner::start(match attempts.len() {
            1 => "connecting to 1 MCP server".to_owned(),
            n => format!("connecting to {n} MCP servers"),
        })
    });
    let mut outcomes = attempts.join_all().await;
    drop(spinner);
    outcomes.sort_by_key(|(index, ..)| *index);
    let mut connections = Vec::new();
    for (_, name, outcome) in outcomes {
        match outcome {
            Ok(connection) => {
                for skipped in connection.skipped() {
                    eprintln!("warning: {skipped}");
                }
                connections.push(connection);
            }
            Err(error) => {
                eprintln!("warning: the MCP server `{name}` is left out: {error:#}");
            }
        }
    }
    connections
}

/// Loads the plugin `id`, found by its manifest in the search paths, unless the config
/// disables it.
fn load_one(manager: &PluginManager, id: &str) -> anyhow::Result<PluginInfo> {
    if manager
        .config()
        .disabled
        .iter()
        .any(|disabled| disabled == id)
    {
        bail!(
            "plugin `{id}` is disabled in the config; `aleph-tools plugins enable {id}` runs it again"
        );
    }
    let dir = manager
        .discover()
        .into_iter()
        .find(|dir| PluginManifest::read_dir(dir).is_ok_and(|m| m.manifest.plugin.id == id));
    let Some(dir) = dir else {
        let paths: Vec<String> = manager
            .config()
            .resolved_search_paths()
            .iter()
            .map(|p| format!("`{}`", p.display()))
            .collect();
        bail!(
            "no plugin `{id}` in the search paths ({}); `aleph-tools plugins list` shows the plugins there are",
            paths.join(", ")
        );
    };
    Ok(manager.load(&dir)?)
}

async fn connect(
    section: &McpServerSection,
    server: &AlephToolServer,
) -> anyhow::Result<McpConnection> {
    let endpoint = match (&section.command, &section.url) {
        (Some(command), _) => {
            let mut endpoint = McpEndpoint::command(command)
                .args(section.args.iter())
                .env(DEPTH_VARIABLE, (depth() + 1).to_string());
            for (key, value) in &section.env {
                endpoint = endpoint.env(key, value);
            }
            if let Some(dir) = &section.cwd {
                endpoint = endpoint.current_dir(dir);
            }
            if let Some(policy) = &section.sandbox {
                endpoint = endpoint.sandbox(policy.clone());
            }
            endpoint
        }
        (None, Some(url)) => match &section.bearer_token_env {
            Some(name) => McpEndpoint::url(url).bearer_token(secret_from(name)?),
            None => McpEndpoint::url(url),
        },
        (None, None) => bail!("it has neither `command` nor `url`"),
    };
    let prefix = section.prefix.as_deref().unwrap_or(&section.name);
    let mut builder = McpConnection::builder(endpoint).defer_loading(section.defer_loading);
    if !prefix.is_empty() {
        builder = builder.prefix(prefix);
    }
    builder
        .connect(server)
        .await
        .with_context(|| format!("cannot connect to `{}`", section.name))
}

/// The value of the environment variable `name`, which holds a secret.
pub fn secret_from(name: &str) -> anyhow::Result<String> {
    match std::env::var(name) {
        Ok(value) if !value.trim().is_empty() => Ok(value.trim().to_owned()),
        _ => bail!(
            "the environment variable `{name}` is not set, or is empty; it must hold the token"
        ),
    }
}
