//! `round-trips pipe|http|stdio aleph|rmcp|rmcp-structured N TOOL`: N `tools/call` round
//! trips of TOOL (`add` or `distance`) from rmcp's client to one server (`rmcp-structured`:
//! rmcp's tools answering with structured content, as aleph-tools' do), over an in-memory
//! pipe, streamable HTTP on loopback, or stdio to a child process (`peer-server`), after ten
//! uncounted ones; client and server on one thread but for the child. Under
//! `valgrind --tool=callgrind --toggle-collect='round_trips::measured*'`, the instructions
//! collected are what the N round trips cost, start-up left out; a child's own are counted
//! by `stdio_instructions.sh`.

use std::sync::Arc;

use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{
    StreamableHttpClientTransport, StreamableHttpServerConfig, StreamableHttpService,
};
use rmcp::{RoleClient, ServerHandler, ServiceExt};

type Error = Box<dyn std::error::Error>;

/// A client of `server` over an in-memory pipe.
async fn piped(server: &str) -> Result<RunningService<RoleClient, ()>, Error> {
    let (client, end) = tokio::io::duplex(1 << 16);
    match server {
        "aleph" => {
            let (read, write) = tokio::io::split(end);
            let served = aleph_tools::mcp::McpServer::new(&peers::aleph::server());
            tokio::spawn(served.serve(read, write));
        }
        "rmcp" => serve_piped(peers::rmcp_server::Calculator::default(), end),
        _ => serve_piped(peers::rmcp_server::StructuredCalculator::default(), end),
    }
    Ok(().serve(tokio::io::split(client)).await?)
}

/// Serves `handler` on one end of a pipe.
fn serve_piped<H: ServerHandler>(handler: H, end: tokio::io::DuplexStream) {
    tokio::spawn(async move {
        if let Ok(running) = handler.serve(tokio::io::split(end)).await {
            let _ = running.waiting().await;
        }
    });
}

/// Serves `handler` over streamable HTTP on loopback, one handler for each session; its URL.
async fn serve_http<H: ServerHandler + Clone + Default>() -> Result<String, Error> {
    let service = StreamableHttpService::new(
        || Ok(H::default()),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    let router = axum::Router::new().route_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/mcp", listener.local_addr()?);
    tokio::spawn(async move { axum::serve(listener, router).await });
    Ok(url)
}

/// A client of `server` run as a child process (`peer-server`, beside this binary), over its
/// stdin and stdout. Its own instructions are counted apart: see `stdio_instructions.sh`.
async fn over_stdio(server: &str) -> Result<RunningService<RoleClient, ()>, Error> {
    let mut command =
        tokio::process::Command::new(std::env::current_exe()?.with_file_name("peer-server"));
    command.arg(server);
    Ok(
        ().serve(rmcp::transport::TokioChildProcess::new(command)?)
            .await?,
    )
}

/// A client of `server` over streamable HTTP on loopback.
async fn over_http(server: &str) -> Result<RunningService<RoleClient, ()>, Error> {
    let url = match server {
        "aleph" => {
            let served = aleph_tools::mcp::McpServer::new(&peers::aleph::server())
                .serve_http("127.0.0.1:0")
                .await?;
            let url = served.url();
            // Serves until the process ends.
            std::mem::forget(served);
            url
        }
        "rmcp" => serve_http::<peers::rmcp_server::Calculator>().await?,
        _ => serve_http::<peers::rmcp_server::StructuredCalculator>().await?,
    };
    Ok(
        ().serve(StreamableHttpClientTransport::from_uri(url))
            .await?,
    )
}

fn main() -> Result<(), Error> {
    let usage = "usage: round-trips pipe|http|stdio aleph|rmcp|rmcp-structured N add|distance";
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [transport, server, count, tool] = args.as_slice() else {
        return Err(usage.into());
    };
    let count: u32 = count.parse()?;
    let arguments = peers::arguments().remove(tool.as_str()).ok_or(usage)?;
    if !matches!(server.as_str(), "aleph" | "rmcp" | "rmcp-structured") {
        return Err(usage.into());
    }
    // One thread runs client and server alike, so `measured` sees all of their work.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let client = runtime.block_on(async {
        match transport.as_str() {
            "pipe" => piped(server).await,
            "http" => over_http(server).await,
            "stdio" => over_stdio(server).await,
            _ => Err(usage.into()),
        }
    })?;
    let round_trips = |count: u32| {
        runtime.block_on(async {
            for _ in 0..count {
                let call =
                    CallToolRequestParams::new(tool.clone()).with_arguments(arguments.clone());
                let result = client.call_tool(call).await?;
                assert_ne!(result.is_error, Some(true));
            }
            Ok::<(), Error>(())
        })
    };
    // What a first call sets up once is not a round trip's cost.
    round_trips(10)?;
    measured(|| round_trips(count))?;
    runtime.block_on(client.cancel())?;
    Ok(())
}

/// Runs `work`: the only function `--toggle-collect=round_trips::measured*` counts.
#[inline(never)]
fn measured<T>(work: impl FnOnce() -> T) -> T {
    work()
}
