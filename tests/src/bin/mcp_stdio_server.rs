//! The MCP test tools served over stdio, for clients that start their server as a command:
//! the tools of `mcp_test_server` and 250 echo tools, listed 100 to a page, and the
//! prompts of `mcp_test_prompts`.

use aleph_tools::mcp::McpServer;
use aleph_tools_tests::{PAGE_SIZE, add_echo_tools, mcp_test_prompts, mcp_test_server};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let server = mcp_test_server();
    add_echo_tools(&server);
    McpServer::new(&server)
        .with_page_size(PAGE_SIZE)
        .with_prompts(mcp_test_prompts())
        .serve_stdio()
        .await?;
    Ok(())
}
