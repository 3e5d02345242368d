//! The "MCP" chapter, serving: the calculator over stdio, for any MCP client that starts it
//! as a command, or over streamable HTTP with `--http 127.0.0.1:8080`.

use aleph_tools::mcp::McpServer;
use guide_examples::calculator;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = calculator();
    let mcp = McpServer::new(&server)
        .with_name("calculator", env!("CARGO_PKG_VERSION"))
        .with_instructions("Integer arithmetic. Call unlock_power before raising to a power.");
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.as_slice() {
        [] => mcp.serve_stdio().await?,
        [flag, addr] if flag == "--http" => {
            let http = mcp.serve_http(addr.as_str()).await?;
            eprintln!("serving MCP at {}", http.url());
            http.wait().await?;
        }
        _ => return Err("usage: mcp_serve [--http ADDR]".into()),
    }
    Ok(())
}
