//! The MCP test endpoint (`mcp_test_endpoint`) served over stdio, for clients that start
//! their server as a command.

use aleph_tools_tests::mcp_test_endpoint;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let (_tools, mcp) = mcp_test_endpoint();
    mcp.serve_stdio().await?;
    Ok(())
}
