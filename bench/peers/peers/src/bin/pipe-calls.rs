//! `pipe-calls aleph|rmcp N TOOL`: N `tools/call` round trips of TOOL (`add` or `distance`)
//! from rmcp's client to one server over an in-memory pipe, client and server on one
//! thread. Run under `valgrind --tool=callgrind` at two values of N, the difference of the
//! instruction counts is what N round trips cost, start-up left out.

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let usage = "usage: pipe-calls aleph|rmcp N add|distance";
    let which = args.next().ok_or(usage)?;
    let count: u32 = args.next().ok_or(usage)?.parse()?;
    let tool = args.next().ok_or(usage)?;
    let arguments = peers::arguments().remove(tool.as_str()).ok_or(usage)?;
    let (client, server) = tokio::io::duplex(1 << 16);
    match which.as_str() {
        "aleph" => {
            let (read, write) = tokio::io::split(server);
            let served = aleph_tools::mcp::McpServer::new(&peers::aleph::server());
            tokio::spawn(served.serve(read, write));
        }
        "rmcp" => {
            tokio::spawn(async move {
                if let Ok(running) = peers::rmcp_server::Calculator::default()
                    .serve(tokio::io::split(server))
                    .await
                {
                    let _ = running.waiting().await;
                }
            });
        }
        _ => return Err(usage.into()),
    }
    let client = ().serve(tokio::io::split(client)).await?;
    for _ in 0..count {
        let call = CallToolRequestParams::new(tool.clone()).with_arguments(arguments.clone());
        let result = client.call_tool(call).await?;
        assert_ne!(result.is_error, Some(true));
    }
    client.cancel().await?;
    Ok(())
}
