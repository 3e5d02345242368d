//! MCP over HTTP behind bearer tokens: a request without a token is refused with `401` and
//! a challenge that points to the protected-resource metadata document; tools see who is
//! calling, and a token's scopes decide what it is listed and may call. A second server wraps the first,
//! sending its token.
//!
//! Run with `cargo run -p guide-examples --bin mcp_auth`.

use aleph_tools::Identity;
use aleph_tools::mcp::{McpAuth, McpConnection, McpEndpoint, McpServer, StaticTokens};
use aleph_tools::middleware::Permission;
use aleph_tools::prelude::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Says who is calling.
#[tool(register = false)]
fn whoami(who: Identity) -> String {
    let scopes: Vec<&str> = who.scopes().collect();
    if scopes.is_empty() {
        format!("{}, with no scopes", who.subject())
    } else {
        format!("{}, with {}", who.subject(), scopes.join(", "))
    }
}

/// Deletes a note; needs the `notes:delete` scope.
#[tool(register = false, destructive)]
fn delete_note(
    /// The note's title
    title: String,
    who: Identity,
) -> String {
    format!("{} deleted `{title}`", who.subject())
}

/// A bare HTTP request (`head` is its first line), to show what a client without a token
/// sees.
async fn raw(addr: std::net::SocketAddr, head: &str, body: &str) -> std::io::Result<String> {
    let mut stream = tokio::net::TcpStream::connect(addr).await?;
    let request = format!(
        "{head} HTTP/1.1\r\nhost: {addr}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await?;
    let mut response = String::new();
    stream.read_to_string(&mut response).await?;
    Ok(response)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let tools = AlephToolServer::builder()
        .with_tool(WhoamiTool)
        .with_tool(DeleteNoteTool)
        .with_middleware(Permission::new().require("notes:delete", ["delete_note"])?)
        .build()?;
    // Tokens would come from the environment or a secret store; an authorization server
    // issuing OAuth tokens would have an `Authorizer` of its own checking them.
    let tokens = StaticTokens::new()
        .with_token(
            "ops-token",
            Identity::new("ops").with_scopes(["notes:delete"]),
        )
        .with_token("bot-token", Identity::new("bot"));
    let auth = McpAuth::new(tokens)
        .with_authorization_server("https://auth.example.com")?
        .with_scopes_supported(["notes:delete"]);
    let http = McpServer::new(&tools)
        .with_auth(auth)
        .serve_http("127.0.0.1:0")
        .await?;
    let addr = http.local_addr();
    println!("serving at {} behind bearer tokens", http.url());

    let refused = raw(addr, "POST /mcp", "{}").await?;
    let status = refused.lines().next().unwrap_or_default();
    let challenge = refused
        .lines()
        .find(|line| line.to_ascii_lowercase().starts_with("www-authenticate"))
        .unwrap_or_default();
    println!("without a token: {status}\n  {challenge}");
    assert!(status.contains("401"));
    assert!(challenge.contains("/.well-known/oauth-protected-resource/mcp"));

    let document = raw(addr, "GET /.well-known/oauth-protected-resource/mcp", "").await?;
    let body = document.split("\r\n\r\n").nth(1).unwrap_or_default();
    println!("the metadata document: {body}");
    assert!(body.contains("https://auth.example.com"));

    // Another server wraps these tools, sending a token with every request. Each token is
    // listed only what its scopes let it call.
    for (token, listed) in [
        (
            "ops-token",
            ["notes_delete_note", "notes_whoami"].as_slice(),
        ),
        ("bot-token", ["notes_whoami"].as_slice()),
    ] {
        let host = AlephToolServer::new();
        let _remote = McpConnection::builder(McpEndpoint::url(http.url()).bearer_token(token))
            .prefix("notes")
            .connect(&host)
            .await?;
        let who = host.call("notes_whoami", serde_json::json!({})).await;
        println!(
            "as {token}: listed {:?}; whoami -> {}",
            host.tools().names(),
            who.model_text()
        );
        assert_eq!(host.tools().names(), listed);
        if host.contains("notes_delete_note") {
            let deleted = host
                .call("notes_delete_note", serde_json::json!({ "title": "draft" }))
                .await;
            println!("as {token}: delete_note -> {}", deleted.model_text());
            assert!(deleted.model_text().contains("ops deleted"));
        }
    }
    http.shutdown().await?;
    Ok(())
}
