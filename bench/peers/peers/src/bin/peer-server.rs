//! Serves `add` and `distance` over MCP on stdio: `peer-server aleph` with aleph-tools'
//! `McpServer`, `peer-server rmcp` with an rmcp `#[tool_router]` server (`rmcp-structured`:
//! its tools answering with structured content).

use aleph_tools::mcp::McpServer;
use rmcp::ServiceExt;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    match std::env::args().nth(1).as_deref() {
        Some("aleph") => {
            McpServer::new(&peers::aleph::server())
                .serve_stdio()
                .await?
        }
        Some("rmcp") => {
            let running = peers::rmcp_server::Calculator::default()
                .serve(rmcp::transport::stdio())
                .await?;
            running.waiting().await?;
        }
        Some("rmcp-structured") => {
            let running = peers::rmcp_server::StructuredCalculator::default()
                .serve(rmcp::transport::stdio())
                .await?;
            running.waiting().await?;
        }
        _ => return Err("usage: peer-server aleph|rmcp|rmcp-structured".into()),
    }
    Ok(())
}
