//! `aleph-tools plugins`: list, check, install, uninstall, enable, disable and reload
//! plugins, run their commands, and list, start and stop their services: here, or with
//! `--server` in a running `serve --http`, through its management API.
//!
//! Both ways go through the management API's methods (here, [`PluginAdmin::call`] on a
//! manager of this process's own), so they answer alike.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use aleph_tools::plugin::{PluginAdmin, PluginManifest};
use anyhow::{Context as _, bail};
use clap::{Args, Subcommand};
use serde_json::{Value, json};

use crate::approval::Approval;
use crate::config::{self, Config};
use crate::host::{Host, Plugins};
use crate::progress::Spinner;
use crate::table::Table;

mod remote;

pub use self::remote::Remote;

#[derive(Args)]
#[allow(
    clippy::doc_markdown,
    reason = "doc comments here are --help text, shown as written"
)]
pub struct PluginsArgs {
    /// Act on the running `serve --http` at URL (such as http://127.0.0.1:8080) through its
    /// management API, sending the bearer token in $ALEPH_TOOLS_TOKEN, which needs the scope
    /// `admin`
    #[arg(long, value_name = "URL", global = true, env = "ALEPH_TOOLS_SERVER")]
    server: Option<String>,
    #[command(subcommand)]
    pub command: PluginsCommand,
}

#[derive(Subcommand)]
#[allow(
    clippy::doc_markdown,
    reason = "doc comments here are --help text, shown as written"
)]
pub enum PluginsCommand {
    /// Show every plugin with its status and tools
    List {
        /// Print them as a JSON array
        #[arg(long)]
        json: bool,
    },
    /// Check the plugin in DIR: read its manifest, apply the permission policy, and load it
    Check {
        /// The plugin's directory
        dir: PathBuf,
    },
    /// Install a plugin from a directory, a .tar.gz, .tgz or .zip archive, or an https URL
    /// to one, into the first search path (URLs are held to `[admin] download_hosts`)
    Install {
        /// The directory, archive or https URL; with --server, a path is on the server's
        /// machine
        source: String,
        /// The archive's SHA-256 in hex: the install is refused when the archive differs
        #[arg(long, value_name = "HEX")]
        sha256: Option<String>,
    },
    /// Delete an installed plugin
    Uninstall {
        /// The plugin's id
        id: String,
    },
    /// Run a disabled plugin again (removes it from `disabled` in the config file; with
    /// --server, runs it in the server until it stops)
    Enable {
        /// The plugin's id
        id: String,
    },
    /// Keep a plugin from running without removing it (adds it to `disabled` in the config
    /// file; with --server, stops it in the server until it restarts)
    Disable {
        /// The plugin's id
        id: String,
    },
    /// Load a plugin again from its directory in a running server (needs --server)
    Reload {
        /// The plugin's id
        id: String,
    },
    /// Run one of a plugin's direct commands and print its JSON answer
    Command {
        /// The plugin's id
        id: String,
        /// The command's name
        name: String,
        /// Its input, as JSON [default: {}]
        input: Option<String>,
    },
    /// Show the plugins' background services, or report, start or stop one
    Services {
        /// Print them as a JSON array
        #[arg(long)]
        json: bool,
        #[command(subcommand)]
        change: Option<ServiceCommand>,
    },
    /// Write a new plugin into ./NAME (or --dir): a Node.js program on @aleph/plugin-sdk or
    /// a Rust crate built to WebAssembly, with its manifest, one example tool and a README
    /// saying how to build and load it
    New(crate::scaffold::New),
}

#[derive(Subcommand)]
pub enum ServiceCommand {
    /// Show one service's state
    Status(ServiceName),
    /// Start a service and wait for its start handler (needs --server)
    Start(ServiceName),
    /// Stop a service and wait for its stop handler (needs --server)
    Stop(ServiceName),
}

#[derive(Args)]
pub struct ServiceName {
    /// The plugin's id
    plugin: String,
    /// The service's name
    service: String,
}

/// `aleph-tools plugins …`, here or in the server `--server` names.
pub async fn run(config: &Config, args: PluginsArgs) -> anyhow::Result<()> {
    let PluginsArgs {
        server,
        command: run,
    } = args;
    let remote = server.as_deref().map(Remote::new).transpose()?;
    let remote = remote.as_ref();
    match run {
        PluginsCommand::List { json } => list(config, remote, json).await,
        PluginsCommand::Check { dir } => check(config, remote, &dir).await,
        PluginsCommand::Install { source, sha256 } => {
            install(config, remote, &source, sha256.as_deref()).await
        }
        PluginsCommand::Uninstall { id } => uninstall(config, remote, &id).await,
        PluginsCommand::Enable { id } => set_enabled(config, remote, &id, true).await,
        PluginsCommand::Disable { id } => set_enabled(config, remote, &id, false).await,
        PluginsCommand::Reload { id } => reload(remote, &id).await,
        PluginsCommand::Command { id, name, input } => {
            command(config, remote, &id, &name, input.as_deref()).await
        }
        PluginsCommand::Services { json, change } => match change {
            None => services(config, remote, json).await,
            Some(change) => {
                let (change, name) = match change {
                    ServiceCommand::Status(name) => (ServiceChange::Status, name),
                    ServiceCommand::Start(name) => (ServiceChange::Start, name),
                    ServiceCommand::Stop(name) => (ServiceChange::Stop, name),
                };
                service(config, remote, change, &name.plugin, &name.service).await
            }
        },
        PluginsCommand::New(_) => {
            unreachable!("answered before the configuration is read")
        }
    }
}

/// The management API of this process: a manager started with `plugins`.
async fn local(config: &Config, plugins: Plugins<'_>) -> anyhow::Result<(Host, PluginAdmin)> {
    let host = Host::start(config, plugins, false, Approval::Refuse).await?;
    let admin = config.admin.admin(&host.manager)?;
    Ok((host, admin))
}

/// Runs `method` here, on a manager started with `plugins`, or on `remote`.
async fn call(
    config: &Config,
    remote: Option<&Remote>,
    plugins: Plugins<'_>,
    method: &str,
    params: Value,
) -> anyhow::Result<Value> {
    if let Some(remote) = remote {
        return remote.call(method, params).await;
    }
    let (_host, admin) = local(config, plugins).await?;
    Ok(admin.call(method, params).await?)
}

/// Refuses a command that has only a meaning in a running server.
fn needs_server<'a>(remote: Option<&'a Remote>, what: &str) -> anyhow::Result<&'a Remote> {
    remote.with_context(|| {
        format!(
            "{what} acts on a running server: give its URL with --server (a command without it loads the plugins afresh and stops)"
        )
    })
}

/// Prints every plugin with its status.
pub async fn list(config: &Config, remote: Option<&Remote>, json: bool) -> anyhow::Result<()> {
    let listed = call(config, remote, Plugins::All, "plugins.list", Value::Null).await?;
    let plugins = &listed["plugins"];
    if json {
        println!("{}", serde_json::to_string_pretty(plugins)?);
        return Ok(());
    }
    let mut table = Table::new(["ID", "VERSION", "KIND", "STATUS", "TOOLS"]);
    for plugin in plugins.as_array().into_iter().flatten() {
        let status = match plugin["error"].as_str() {
            Some(error) => format!("error: {}", error.lines().next().unwrap_or_default()),
            None => text(&plugin["status"]),
        };
        table.row([
            text(&plugin["id"]),
            text(&plugin["version"]),
            text(&plugin["kind"]),
            status,
            names(&plugin["tools"]).join(", "),
        ]);
    }
    table.print();
    Ok(())
}

/// Reads and checks the manifest in `dir`, then loads the plugin to be sure it runs.
pub async fn check(config: &Config, remote: Option<&Remote>, dir: &Path) -> anyhow::Result<()> {
    if remote.is_some() {
        bail!(
            "`plugins check` reads a plugin directory on this machine; it does not take --server"
        );
    }
    PluginManifest::read_dir(dir)?;
    let host = Host::start(config, Plugins::None, false, Approval::Refuse).await?;
    let manager = host.manager.clone();
    let dir = dir.to_path_buf();
    let info = tokio::task::spawn_blocking(move || manager.load(&dir)).await??;
    let plugin = json!({
        "id": info.id,
        "version": info.version.map(|version| version.to_string()),
        "kind": info.kind.map(|kind| kind.to_string()),
        "tools": info.tools,
        "commands": info.commands,
    });
    println!("ok: {}", describe(&plugin));
    if let Some(sandbox) = &info.sandbox {
        println!("sandbox: {sandbox}");
    }
    host.manager.plugin(&info.id).unload()?;
    Ok(())
}

/// Installs the plugin at `source` (a directory, an archive, or an https URL to an archive)
/// into the first search path, checking the archive against `sha256` when given.
pub async fn install(
    config: &Config,
    remote: Option<&Remote>,
    source: &str,
    sha256: Option<&str>,
) -> anyhow::Result<()> {
    let url = source.contains("://");
    if remote.is_some() && !url && Path::new(source).is_relative() {
        bail!(
            "with --server, `{source}` would be read on the server's machine, relative to wherever it runs: give an https URL, or an absolute path there"
        );
    }
    let mut params = json!({ "source": source });
    if let Some(sha256) = sha256 {
        params["sha256"] = json!(sha256);
    }
    let spinner = Spinner::start(format!("installing `{source}`"));
    let installed = call(config, remote, Plugins::None, "plugins.install", params).await;
    drop(spinner);
    let plugin = installed?;
    println!(
        "installed {} into `{}`",
        describe(&plugin),
        text(&plugin["dir"])
    );
    Ok(())
}

/// Deletes the plugin `id` from its search path.
pub async fn uninstall(config: &Config, remote: Option<&Remote>, id: &str) -> anyhow::Result<()> {
    let removed = call(
        config,
        remote,
        Plugins::None,
        "plugins.uninstall",
        json!({ "id": id }),
    )
    .await?;
    println!("removed `{}`", text(&removed["removed"]));
    Ok(())
}

/// Marks the plugin `id` disabled, or enabled again: here in the config file, or in the
/// running server until it stops.
pub async fn set_enabled(
    config: &Config,
    remote: Option<&Remote>,
    id: &str,
    enabled: bool,
) -> anyhow::Result<()> {
    let state = if enabled { "enabled" } else { "disabled" };
    if let Some(remote) = remote {
        let method = if enabled {
            "plugins.enable"
        } else {
            "plugins.disable"
        };
        let plugin = remote.call(method, json!({ "id": id })).await?;
        println!(
            "plugin `{id}` is {state} in the server at `{}` until it stops: {}",
            remote.url,
            describe(&plugin)
        );
        return Ok(());
    }
    let host = Host::start(config, Plugins::None, false, Approval::Refuse).await?;
    let known = host
        .manager
        .discover()
        .iter()
        .any(|dir| PluginManifest::read_dir(dir).is_ok_and(|m| m.manifest.plugin.id == id));
    if !known {
        bail!(
            "no plugin `{id}` in the search paths; `aleph-tools plugins list` shows the plugins there are"
        );
    }
    let file = match &config.file {
        Some(file) => file.clone(),
        None => config::user_file()
            .context("there is no config file to write, and no home directory to put one in")?,
    };
    let changed = config::set_disabled(&file, id, !enabled)?;
    if !changed {
        println!("plugin `{id}` is {state} already");
        return Ok(());
    }
    println!("plugin `{id}` is {state} (in `{}`)", file.display());
    if enabled {
        let mut config = config.clone();
        config.plugins.disabled.retain(|disabled| disabled != id);
        let (_host, admin) = local(&config, Plugins::Only(id)).await?;
        let listed = admin.call("plugins.list", Value::Null).await?;
        let plugins = listed["plugins"].as_array().into_iter().flatten();
        if let Some(plugin) = plugins.into_iter().find(|p| p["id"] == id) {
            println!("it loads: {}", describe(plugin));
        }
    }
    Ok(())
}

/// Loads the plugin `id` again in the running server.
pub async fn reload(remote: Option<&Remote>, id: &str) -> anyhow::Result<()> {
    let remote = needs_server(remote, "`plugins reload`")?;
    let plugin = remote.call("plugins.reload", json!({ "id": id })).await?;
    println!("reloaded {}", describe(&plugin));
    Ok(())
}

/// Runs the command `name` of plugin `id` with `input` (JSON text, `{}` when left out).
pub async fn command(
    config: &Config,
    remote: Option<&Remote>,
    id: &str,
    name: &str,
    input: Option<&str>,
) -> anyhow::Result<()> {
    let input: Value = match input {
        Some(text) => serde_json::from_str(text)
            .with_context(|| format!("the input is not JSON: `{text}`"))?,
        None => json!({}),
    };
    let params = json!({ "id": id, "command": name, "input": input });
    let output = call(
        config,
        remote,
        Plugins::Only(id),
        "plugins.executeCommand",
        params,
    )
    .await?;
    println!("{}", serde_json::to_string_pretty(&output)?);
    Ok(())
}

/// What `plugins services` does beside listing.
pub enum ServiceChange {
    /// Report one service.
    Status,
    /// Start it.
    Start,
    /// Stop it.
    Stop,
}

/// Prints the plugins' services.
pub async fn services(config: &Config, remote: Option<&Remote>, json: bool) -> anyhow::Result<()> {
    let listed = call(config, remote, Plugins::All, "services.list", Value::Null).await?;
    let services = &listed["services"];
    if json {
        println!("{}", serde_json::to_string_pretty(services)?);
        return Ok(());
    }
    let mut table = Table::new(["PLUGIN", "SERVICE", "AUTO START", "STATE", "DESCRIPTION"]);
    for service in services.as_array().into_iter().flatten() {
        table.row(service_row(service));
    }
    table.print();
    Ok(())
}

/// Reports, starts or stops the service `service` of plugin `plugin`.
pub async fn service(
    config: &Config,
    remote: Option<&Remote>,
    change: ServiceChange,
    plugin: &str,
    service: &str,
) -> anyhow::Result<()> {
    let params = json!({ "plugin": plugin, "service": service });
    let answer = match change {
        ServiceChange::Status => {
            call(config, remote, Plugins::All, "services.status", params).await?
        }
        ServiceChange::Start => {
            let remote = needs_server(remote, "`plugins services start`")?;
            remote.call("services.start", params).await?
        }
        ServiceChange::Stop => {
            let remote = needs_server(remote, "`plugins services stop`")?;
            remote.call("services.stop", params).await?
        }
    };
    let mut table = Table::new(["PLUGIN", "SERVICE", "AUTO START", "STATE", "DESCRIPTION"]);
    table.row(service_row(&answer));
    table.print();
    Ok(())
}

fn service_row(service: &Value) -> [String; 5] {
    let state = match service["error"].as_str() {
        Some(error) => format!("failed: {error}"),
        None => text(&service["state"]),
    };
    [
        text(&service["plugin"]),
        text(&service["service"]),
        if service["autoStart"] == true {
            "yes"
        } else {
            "no"
        }
        .to_owned(),
        state,
        text(&service["description"]),
    ]
}

/// A JSON string's text; empty for anything else.
fn text(value: &Value) -> String {
    value.as_str().unwrap_or_default().to_owned()
}

/// The strings of a JSON array.
fn names(value: &Value) -> Vec<String> {
    value
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|name| name.as_str().map(str::to_owned))
        .collect()
}

/// `` `id` 1.0.0 (wasm): 2 tools: a, b; 1 command: version ``, from a plugin as the
/// management API reports it.
fn describe(plugin: &Value) -> String {
    let mut line = format!("`{}`", text(&plugin["id"]));
    if let Some(version) = plugin["version"].as_str() {
        let _ = write!(line, " {version}");
    }
    if let Some(kind) = plugin["kind"].as_str() {
        let _ = write!(line, " ({kind})");
    }
    let counted = |what: &str, names: &[String]| match names.len() {
        0 => String::new(),
        1 => format!("; 1 {what}: {}", names[0]),
        n => format!("; {n} {what}s: {}", names.join(", ")),
    };
    line.push_str(&counted("tool", &names(&plugin["tools"])));
    line.push_str(&counted("command", &names(&plugin["commands"])));
    if let Some(error) = plugin["error"].as_str() {
        let _ = write!(line, "; error: {error}");
    } else if let Some(status) = plugin["status"].as_str()
        && status != "running"
    {
        let _ = write!(line, "; {status}");
    }
    line.replacen("; ", ": ", 1)
}
