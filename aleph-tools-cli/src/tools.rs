//! `aleph-tools tools`: the tools offered, as a table or as a provider's exact tools array,
//! and calling one.

use aleph_tools::ToolErrorKind;
use aleph_tools::provider::Provider;
use anyhow::{Context as _, bail};
use serde_json::Value;

use crate::approval::Approval;
use crate::config::Config;
use crate::host::{Host, Plugins};
use crate::table::Table;

/// Lists the tools: a table, or with `provider` the tools array that provider is sent.
pub async fn list(config: &Config, provider: Option<Provider>, json: bool) -> anyhow::Result<()> {
    let host = Host::start(config, Plugins::All, true, Approval::Refuse).await?;
    if let Some(provider) = provider {
        println!(
            "{}",
            serde_json::to_string_pretty(&host.server.tools().for_provider(provider))?
        );
        return Ok(());
    }
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&host.server.tools().definitions())?
        );
        return Ok(());
    }
    let mut table = Table::new(["NAME", "CATEGORY", "DESCRIPTION"]);
    for tool in host.server.tools().definitions() {
        let summary = tool
            .description
            .lines()
            .next()
            .unwrap_or_default()
            .to_owned();
        table.row([tool.name.clone(), format!("{:?}", tool.category), summary]);
    }
    table.print();
    Ok(())
}

/// Calls tool `name` with `args` (JSON text, `{}` when left out) through the whole pipeline
/// and prints its output.
pub async fn call(
    config: &Config,
    name: &str,
    args: Option<&str>,
    yes: bool,
) -> anyhow::Result<()> {
    let args: Value = match args {
        Some(text) => serde_json::from_str(text)
            .with_context(|| format!("the arguments are not JSON: `{text}`"))?,
        None => Value::Object(serde_json::Map::new()),
    };
    let host = Host::start(config, Plugins::All, true, Approval::when(yes)).await?;
    let result = host.server.call(name, args).await;
    if let Some(repair) = &result.repair {
        eprintln!(
            "note: called `{}` for `{}`",
            repair.repaired_name, repair.original_name
        );
    }
    if !result.success {
        let called = result
            .repair
            .as_ref()
            .map_or(name, |r| r.repaired_name.as_str());
        let needs_approval = config.tools.requires_confirmation(called)
            || host
                .server
                .tools()
                .definitions()
                .iter()
                .any(|tool| tool.name == called && tool.requires_confirmation);
        if !yes && result.error_kind == Some(ToolErrorKind::PermissionDenied) && needs_approval {
            bail!("`{called}` needs a person's approval; pass --yes to approve this call");
        }
        bail!(
            "{}",
            result
                .error
                .as_deref()
                .unwrap_or("the call failed without a message")
        );
    }
    match &result.output {
        Value::String(text) => println!("{text}"),
        // Content without data (an image, a resource): what a text-only model would read.
        Value::Null if !result.content.is_empty() => println!("{}", result.model_text()),
        output => println!("{}", serde_json::to_string_pretty(output)?),
    }
    Ok(())
}
