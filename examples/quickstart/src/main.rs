//! The whole product on its defaults: tools collected at link time, called by name (with
//! the mistakes a model makes), offered to each model API, then served over MCP and used
//! from a second tool server that wraps them, example plugins included when built.
//!
//! `cargo run -p quickstart` runs the demo; `cargo run -p quickstart -- --stdio` serves the
//! tools to an MCP client over stdio, `-- --http 127.0.0.1:8080` over streamable HTTP.

use std::path::Path;
use std::time::Duration;

use aleph_tools::mcp::{McpConnection, McpEndpoint, McpServer};
use aleph_tools::plugin::{PluginManager, PluginsConfig};
use aleph_tools::prelude::*;
use aleph_tools::provider::Provider;
use serde::{Deserialize, Serialize};
use serde_json::json;

/// Temperature units.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Unit {
    /// Degrees Celsius
    Celsius,
    /// Degrees Fahrenheit
    Fahrenheit,
}

/// A weather report.
#[derive(Serialize, schemars::JsonSchema)]
struct Report {
    city: String,
    temperature: f64,
    unit: Unit,
}

/// Get the current weather for a city.
#[tool(read_only, open_world, tags = ["weather"], timeout = "5s")]
async fn get_weather(
    /// City name, such as "Lisbon"
    city: String,
    /// Unit for the temperature
    #[arg(default = Unit::Celsius)]
    unit: Unit,
) -> anyhow::Result<Report> {
    anyhow::ensure!(
        !city.trim().is_empty(),
        "the city is empty; give a city name"
    );
    // A real tool would ask a weather service here.
    tokio::time::sleep(Duration::from_millis(5)).await;
    let celsius = 21.5;
    let temperature = match unit {
        Unit::Celsius => celsius,
        Unit::Fahrenheit => celsius * 9.0 / 5.0 + 32.0,
    };
    Ok(Report {
        city,
        temperature,
        unit,
    })
}

/// Add two integers.
#[tool(read_only, idempotent)]
fn add(
    /// First addend
    a: i64,
    /// Second addend
    b: i64,
) -> Result<i64, String> {
    a.checked_add(b)
        .ok_or_else(|| format!("{a} + {b} overflows a 64-bit integer"))
}

/// Count the words of a text, streaming progress while it works.
#[tool]
fn count_words(
    /// The text to count
    text: String,
    progress: Progress,
) -> ToolOutput {
    let words = text.split_whitespace().count();
    progress.report(1.0, Some(1.0), Some("counted"));
    ToolOutput::new(format!("{words} words"), json!({ "words": words }))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let server = AlephToolServer::from_registry()?;
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        [] => {}
        ["--stdio"] => {
            let _plugins = load_plugins(&server);
            McpServer::new(&server).serve_stdio().await?;
            return Ok(());
        }
        ["--http", addr] => {
            let _plugins = load_plugins(&server);
            let http = McpServer::new(&server).serve_http(addr).await?;
            eprintln!("serving MCP at {}", http.url());
            http.wait().await?;
            return Ok(());
        }
        _ => anyhow::bail!("usage: quickstart [--stdio | --http ADDR]"),
    }

    println!(
        "== {} tools, collected at link time, as OpenAI's chat API is told of them ==",
        server.len()
    );
    if let serde_json::Value::Array(entries) = &*server.tools().for_provider(Provider::OpenAiChat) {
        for entry in entries {
            println!("{entry}");
        }
    }

    println!("\n== calls ==");
    let calls = [
        ("get_weather", json!({ "city": "Lisbon" })),
        (
            "get_weather",
            json!({ "city": "Oslo", "unit": "fahrenheit" }),
        ),
        ("add", json!({ "a": 2, "b": 40 })),
        ("count_words", json!({ "text": "the quick brown fox" })),
        // Mistakes come back as results the model can act on:
        ("add", json!({ "a": "two", "b": 40 })),
        ("get_weather", json!({ "unit": "kelvin" })),
        ("add", json!({ "a": i64::MAX, "b": 1 })),
        ("get_wether", json!({ "city": "Rome" })),
    ];
    for (name, args) in calls {
        let result = server.call(name, args.clone()).await;
        let status = if result.success { "ok " } else { "err" };
        println!("{status} {name}({args}) -> {}", result.model_text());
    }
    let repaired = server.call("GetWeather", json!({ "city": "Porto" })).await;
    if let Some(repair) = &repaired.repair {
        println!(
            "ok  {}(..) ran `{}` -> {}",
            repair.original_name,
            repair.repaired_name,
            repaired.model_text()
        );
    }

    println!("\n== the same tools for each model API ==");
    for size in server.tools().sizes() {
        println!(
            "{:<17} {} tools, {:>5} bytes, ~{} tokens",
            size.provider.name(),
            size.tools,
            size.bytes,
            size.tokens
        );
    }
    // One model turn, as Anthropic's API returns it, answered in Anthropic's format.
    let response = json!({
        "role": "assistant",
        "content": [
            { "type": "tool_use", "id": "toolu_1", "name": "GetWeather", "input": { "city": "Lisbon" } },
            { "type": "tool_use", "id": "toolu_2", "name": "add", "input": { "a": 1, "b": 2 } }
        ]
    });
    let round = server
        .run_tool_calls(Provider::Anthropic, &response)
        .await?;
    println!("{}", serde_json::to_string_pretty(&round.messages)?);

    mcp_demo(&server).await
}

/// Serves `server` over MCP (streamable HTTP on loopback) and uses it from a second tool
/// server that wraps its tools, as an agent talking to a remote tool server would.
async fn mcp_demo(server: &AlephToolServer) -> anyhow::Result<()> {
    println!("\n== the same tools over MCP ==");
    let _plugins = load_plugins(server);
    let http = McpServer::new(server).serve_http("127.0.0.1:0").await?;
    println!("serving {} tools at {}", server.len(), http.url());

    let agent = AlephToolServer::new();
    let remote = McpConnection::builder(McpEndpoint::url(http.url()))
        .prefix("remote")
        .connect(&agent)
        .await?;
    println!("wrapped: {}", remote.tools().join(", "));
    for (name, args) in [
        ("remote_get_weather", json!({ "city": "Lisbon" })),
        ("remote_add", json!({ "a": 2, "b": 40 })),
        ("Remote_Add", json!({ "a": 1, "b": 1 })),
        ("remote_add", json!({ "a": "two", "b": 40 })),
    ] {
        let result = agent.call(name, args.clone()).await;
        let status = if result.success { "ok " } else { "err" };
        println!("{status} {name}({args}) -> {}", result.model_text());
    }

    // A tool added to the served server reaches the wrapping side through list_changed.
    if agent.contains("remote_word_count") {
        let args = json!({ "text": "plugins are served over MCP too" });
        let result = agent.call("remote_word_count", args).await;
        println!("plugin remote_word_count -> {}", result.model_text());
    }

    let mut changes = agent.watch_tools();
    server.add(SubtractTool)?;
    tokio::time::timeout(Duration::from_secs(10), async {
        while !agent.contains("remote_subtract") {
            let _ = changes.changed().await;
        }
    })
    .await?;
    let result = agent
        .call("remote_subtract", json!({ "a": 50, "b": 8 }))
        .await;
    println!("hot-added remote_subtract -> {}", result.model_text());

    remote.close().await;
    http.shutdown().await?;
    Ok(())
}

/// Subtract one integer from another. Added while the server runs.
#[tool(read_only, register = false)]
fn subtract(
    /// The number to subtract from
    a: i64,
    /// The number to subtract
    b: i64,
) -> i64 {
    a - b
}

/// Loads the example plugins (`examples/plugins`) when they are built, so their tools are
/// served too; the manager must live as long as they are served.
fn load_plugins(server: &AlephToolServer) -> Option<PluginManager> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../plugins");
    if !dir.join("text-tools/text_tools.wasm").exists() {
        eprintln!("(example plugins not built: `bash examples/plugins/build.sh` adds their tools)");
        return None;
    }
    let manager = PluginManager::new(server, PluginsConfig::with_search_paths([dir]));
    let report = manager.load_all();
    for (path, error) in &report.failed {
        eprintln!("plugin {} not loaded: {error}", path.display());
    }
    Some(manager)
}
