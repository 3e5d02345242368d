//! The "MCP" chapter, wrapping: starts an MCP server as a command (this program again, with
//! `--serve`), serves its tools beside a local one, calls them through the pipeline, sees a
//! tool appear through `list_changed`, and survives the server being killed.

use std::time::Duration;

use aleph_tools::mcp::{McpConnection, McpEndpoint, McpServer};
use aleph_tools::prelude::*;
use guide_examples::calculator;
use serde_json::json;

/// Greet someone by name.
#[tool(read_only)]
fn greet(
    /// Who to greet
    name: String,
) -> String {
    format!("Hello, {name}!")
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    if std::env::args().nth(1).as_deref() == Some("--serve") {
        McpServer::new(&calculator()).serve_stdio().await?;
        return Ok(());
    }

    let server = AlephToolServer::from_registry()?;
    let exe = std::env::current_exe()?.display().to_string();
    let calc = McpConnection::builder(McpEndpoint::command(exe).arg("--serve"))
        .prefix("calc")
        .connect(&server)
        .await?;
    println!("served: {}", server.tools().names().join(", "));
    show(&server, "calc_add", json!({ "a": 2, "b": 40 })).await;
    show(&server, "CalcAdd", json!({ "a": 1, "b": 2 })).await;
    show(&server, "calc_add", json!({ "a": "two", "b": 40 })).await;
    show(&server, "calc_divide", json!({ "a": 1, "b": 0 })).await;

    // The remote server adds a tool and says so; the connection lists again by itself.
    let mut changes = server.watch_tools();
    show(&server, "calc_unlock_power", json!({})).await;
    tokio::time::timeout(Duration::from_secs(10), async {
        while !server.contains("calc_power") {
            let _ = changes.changed().await;
        }
    })
    .await?;
    show(&server, "calc_power", json!({ "base": 2, "exponent": 10 })).await;

    // The server dies: its tools say so, the others are untouched, and reconnecting helps.
    let pid = calc.process_id().ok_or("a command has a process id")?;
    std::process::Command::new("kill")
        .arg(pid.to_string())
        .status()?;
    while calc.is_connected() {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    show(&server, "calc_add", json!({ "a": 1, "b": 1 })).await;
    show(&server, "greet", json!({ "name": "Ada" })).await;
    calc.reconnect().await?;
    show(&server, "calc_add", json!({ "a": 1, "b": 1 })).await;

    calc.close().await;
    println!("after close: {}", server.tools().names().join(", "));
    Ok(())
}

async fn show(server: &AlephToolServer, name: &str, args: serde_json::Value) {
    let result = server.call(name, args.clone()).await;
    let status = if result.success { "ok " } else { "err" };
    println!("{status} {name}({args}) -> {}", result.model_text());
}
