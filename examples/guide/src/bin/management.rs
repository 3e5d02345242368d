//! The management API of a running server: an operator's token installs a plugin, lists it,
//! disables and enables it and uninstalls it over JSON-RPC at `/admin`, while the agent's
//! token, which lacks the `admin` scope, is refused.
//!
//! Run with `cargo run -p guide-examples --bin management`.

use aleph_tools::mcp::{McpAuth, McpServer, StaticTokens};
use aleph_tools::plugin::{PluginAdmin, PluginManager, PluginsConfig};
use aleph_tools::prelude::*;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// `POST /admin` on `addr` with `token`: the status line and the body, as JSON when it is.
async fn post(
    addr: std::net::SocketAddr,
    token: &str,
    body: &Value,
) -> std::io::Result<(String, Value)> {
    let body = body.to_string();
    let mut stream = tokio::net::TcpStream::connect(addr).await?;
    let request = format!(
        "POST /admin HTTP/1.1\r\nhost: {addr}\r\nauthorization: Bearer {token}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await?;
    let mut response = String::new();
    stream.read_to_string(&mut response).await?;
    let (head, body) = response.split_once("\r\n\r\n").unwrap_or_default();
    let status = head.lines().next().unwrap_or_default().to_owned();
    Ok((status, serde_json::from_str(body).unwrap_or(Value::Null)))
}

fn request(method: &str, params: Value) -> Value {
    let mut request = json!({ "jsonrpc": "2.0", "id": 1, "method": method });
    request["params"] = params;
    request
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // A plugin to install: a manifest and the prompt it adds, in a directory of its own.
    let scratch = tempfile::tempdir()?;
    let source = scratch.path().join("house-style");
    std::fs::create_dir_all(&source)?;
    std::fs::write(
        source.join("aleph_plugin.toml"),
        "[plugin]\nid = \"house-style\"\nversion = \"1.0.0\"\nkind = \"static\"\n\n[prompt]\nfile = \"PROMPT.md\"\nscope = \"system\"\n",
    )?;
    std::fs::write(source.join("PROMPT.md"), "Answer in plain words.")?;

    let tools = AlephToolServer::new();
    let plugins = PluginManager::new(
        &tools,
        PluginsConfig::with_search_paths([scratch.path().join("plugins")]),
    );
    let admin = PluginAdmin::new(&plugins);
    let tokens = StaticTokens::new()
        .with_token(
            "operator-token",
            Identity::new("ops").with_scopes(["admin"]),
        )
        .with_token("agent-token", Identity::new("agent"));
    let http = McpServer::new(&tools)
        .with_auth(McpAuth::new(tokens))
        .with_router(admin.router())
        .serve_http("127.0.0.1:0")
        .await?;
    let addr = http.local_addr();
    println!("management API at http://{addr}/admin");

    let (status, answer) = post(addr, "agent-token", &request("plugins.list", Value::Null)).await?;
    println!(
        "the agent lists the plugins: {status}: {}",
        answer["error"]["message"]
    );
    assert!(status.contains("403"));

    let install = request("plugins.install", json!({ "source": source }));
    let (status, answer) = post(addr, "operator-token", &install).await?;
    let plugin = &answer["result"];
    println!(
        "the operator installs it: {status}: `{}` {} is {}",
        plugin["id"].as_str().unwrap_or_default(),
        plugin["version"].as_str().unwrap_or_default(),
        plugin["status"].as_str().unwrap_or_default()
    );
    assert_eq!(plugin["status"], "running");

    for (method, then) in [
        ("plugins.disable", "stopped"),
        ("plugins.enable", "running"),
    ] {
        let call = request(method, json!({ "id": "house-style" }));
        let (_, answer) = post(addr, "operator-token", &call).await?;
        println!("{method}: {}", answer["result"]["status"]);
        assert_eq!(answer["result"]["status"], then);
    }

    let (_, answer) = post(
        addr,
        "operator-token",
        &request("plugins.reload", json!({ "name": "house-style" })),
    )
    .await?;
    println!(
        "a mistake is told what to fix: {}",
        answer["error"]["message"]
    );
    assert_eq!(answer["error"]["code"], -32602);

    let uninstall = request("plugins.uninstall", json!({ "id": "house-style" }));
    let (_, answer) = post(addr, "operator-token", &uninstall).await?;
    println!("uninstalled: removed {}", answer["result"]["removed"]);
    assert!(plugins.list().is_empty());
    http.shutdown().await?;
    Ok(())
}
