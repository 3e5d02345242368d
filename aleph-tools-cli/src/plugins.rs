//! `aleph-tools plugins`: list, check, install, uninstall, enable and disable plugins, run
//! their commands and list their services.

use std::fmt::Write as _;
use std::path::Path;

use aleph_tools::plugin::{PluginInfo, PluginManifest};
use anyhow::{Context as _, bail};
use serde_json::Value;

use crate::approval::Approval;
use crate::config::{self, Config};
use crate::host::{Host, Plugins};
use crate::progress::Spinner;
use crate::table::Table;

/// Loads every plugin and prints each with its status.
pub async fn list(config: &Config, json: bool) -> anyhow::Result<()> {
    let host = Host::start(config, Plugins::All, false, Approval::Refuse).await?;
    if json {
        let plugins: Vec<Value> = host
            .manager
            .list()
            .into_iter()
            .map(|info| {
                serde_json::json!({
                    "id": info.id,
                    "version": info.version.map(|version| version.to_string()),
                    "kind": info.kind.map(|kind| kind.to_string()),
                    "status": info.status.to_string(),
                    "tools": info.tools,
                    "commands": info.commands,
                })
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&plugins)?);
        return Ok(());
    }
    let mut table = Table::new(["ID", "VERSION", "KIND", "STATUS", "TOOLS"]);
    for info in host.manager.list() {
        let status = info.status.to_string();
        table.row([
            info.id,
            info.version.map(|v| v.to_string()).unwrap_or_default(),
            info.kind.map(|k| k.to_string()).unwrap_or_default(),
            status.lines().next().unwrap_or_default().to_owned(),
            info.tools.join(", "),
        ]);
    }
    table.print();
    Ok(())
}

/// Reads and checks the manifest in `dir`, then loads the plugin to be sure it runs.
pub async fn check(config: &Config, dir: &Path) -> anyhow::Result<()> {
    PluginManifest::read_dir(dir)?;
    let host = Host::start(config, Plugins::None, false, Approval::Refuse).await?;
    let manager = host.manager.clone();
    let dir = dir.to_path_buf();
    let info = tokio::task::spawn_blocking(move || manager.load(&dir)).await??;
    println!("ok: {}", describe(&info));
    if let Some(sandbox) = &info.sandbox {
        println!("sandbox: {sandbox}");
    }
    host.manager.unload(&info.id)?;
    Ok(())
}

/// Installs the plugin at `source` (a directory or an archive) into the first search path.
pub async fn install(config: &Config, source: &Path) -> anyhow::Result<()> {
    let host = Host::start(config, Plugins::None, false, Approval::Refuse).await?;
    let manager = host.manager.clone();
    let spinner = Spinner::start(format!("installing `{}`", source.display()));
    let source = source.to_path_buf();
    let installed = tokio::task::spawn_blocking(move || manager.install(&source)).await?;
    drop(spinner);
    let info = installed?;
    println!(
        "installed {} into `{}`",
        describe(&info),
        info.dir.display()
    );
    Ok(())
}

/// Deletes the plugin `id` from its search path.
pub async fn uninstall(config: &Config, id: &str) -> anyhow::Result<()> {
    let host = Host::start(config, Plugins::None, false, Approval::Refuse).await?;
    let removed = host.manager.uninstall(id)?;
    println!("removed `{}`", removed.display());
    Ok(())
}

/// Marks the plugin `id` disabled, or enabled again, in the config file.
pub async fn set_enabled(config: &Config, id: &str, enabled: bool) -> anyhow::Result<()> {
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
    let state = if enabled { "enabled" } else { "disabled" };
    if !changed {
        println!("plugin `{id}` is {state} already");
        return Ok(());
    }
    println!("plugin `{id}` is {state} (in `{}`)", file.display());
    if enabled {
        let mut config = config.clone();
        config.plugins.disabled.retain(|disabled| disabled != id);
        let host = Host::start(&config, Plugins::Only(id), false, Approval::Refuse).await?;
        if let Some(info) = host.manager.get(id) {
            println!("it loads: {}", describe(&info));
        }
    }
    Ok(())
}

/// Runs the command `name` of plugin `id` with `input` (JSON text, `{}` when left out).
pub async fn command(
    config: &Config,
    id: &str,
    name: &str,
    input: Option<&str>,
) -> anyhow::Result<()> {
    let input: Value = match input {
        Some(text) => serde_json::from_str(text)
            .with_context(|| format!("the input is not JSON: `{text}`"))?,
        None => Value::Object(serde_json::Map::new()),
    };
    let host = Host::start(config, Plugins::Only(id), false, Approval::Refuse).await?;
    let output = host.manager.execute_command(id, name, &input).await?;
    println!("{}", serde_json::to_string_pretty(&output)?);
    Ok(())
}

/// Loads every plugin and prints their services.
pub async fn services(config: &Config, json: bool) -> anyhow::Result<()> {
    let host = Host::start(config, Plugins::All, false, Approval::Refuse).await?;
    if json {
        let services: Vec<Value> = host
            .manager
            .services()
            .into_iter()
            .map(|service| {
                serde_json::json!({
                    "plugin": service.plugin,
                    "service": service.name,
                    "auto_start": service.auto_start,
                    "state": service.state.to_string(),
                    "description": service.description,
                })
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&services)?);
        return Ok(());
    }
    let mut table = Table::new(["PLUGIN", "SERVICE", "AUTO START", "STATE", "DESCRIPTION"]);
    for service in host.manager.services() {
        table.row([
            service.plugin,
            service.name,
            if service.auto_start { "yes" } else { "no" }.to_owned(),
            service.state.to_string(),
            service.description,
        ]);
    }
    table.print();
    Ok(())
}

/// `` `id` 1.0.0 (wasm): 2 tools: a, b; 1 command: version ``.
fn describe(info: &PluginInfo) -> String {
    let mut text = format!("`{}`", info.id);
    if let Some(version) = &info.version {
        let _ = write!(text, " {version}");
    }
    if let Some(kind) = &info.kind {
        let _ = write!(text, " ({kind})");
    }
    let counted = |what: &str, names: &[String]| match names.len() {
        0 => String::new(),
        1 => format!("; 1 {what}: {}", names[0]),
        n => format!("; {n} {what}s: {}", names.join(", ")),
    };
    text.push_str(&counted("tool", &info.tools));
    text.push_str(&counted("command", &info.commands));
    text.replacen("; ", ": ", 1)
}
