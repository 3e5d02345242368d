//! The MCP test tools served over stdio, for clients that start their server as a command.

use aleph_tools::mcp::McpServer;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let server = aleph_tools_tests::mcp_test_server();
    McpServer::new(&server).serve_stdio().await?;
    Ok(())
}
