//! Over MCP: one `tools/call` round trip from rmcp's client to each server (aleph-tools'
//! `McpServer`, rmcp's own `#[tool_router]` server) on three transports: an in-memory pipe,
//! stdio to a child process (`peer-server`), and streamable HTTP on loopback; and the
//! throughput of 64 clients over HTTP, each in a session of its own, calling at once.
//!
//! `cargo bench --bench mcp` in `bench/peers`.

#![allow(missing_docs)]

use std::hint::black_box;
use std::sync::Arc;

use aleph_tools::mcp::{McpHttpServer, McpServer};
use criterion::{Criterion, Throughput};
use futures_util::future::join_all;
use peers::{aleph, rmcp_server::Calculator};
use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{
    StreamableHttpClientTransport, StreamableHttpServerConfig, StreamableHttpService,
    TokioChildProcess,
};
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Map, Value};

type Client = RunningService<RoleClient, ()>;

/// A client connected to each server over an in-memory pipe.
async fn piped() -> [Client; 2] {
    let (client, server) = tokio::io::duplex(1 << 16);
    let (read, write) = tokio::io::split(server);
    tokio::spawn(McpServer::new(&aleph::server()).serve(read, write));
    let to_aleph = ().serve(tokio::io::split(client)).await.expect("aleph answers");

    let (client, server) = tokio::io::duplex(1 << 16);
    tokio::spawn(async move {
        let running = Calculator::default()
            .serve(tokio::io::split(server))
            .await
            .expect("rmcp serves");
        let _ = running.waiting().await;
    });
    let to_rmcp = ().serve(tokio::io::split(client)).await.expect("rmcp answers");
    [to_aleph, to_rmcp]
}

/// A client connected to each server in a child process over stdio.
async fn stdio() -> [Client; 2] {
    let connect = |which: &str| {
        let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_peer-server"));
        command.arg(which);
        TokioChildProcess::new(command).expect("peer-server starts")
    };
    let to_aleph = ().serve(connect("aleph")).await.expect("aleph answers");
    let to_rmcp = ().serve(connect("rmcp")).await.expect("rmcp answers");
    [to_aleph, to_rmcp]
}

/// Each server over streamable HTTP on loopback: their URLs, and the aleph server's handle,
/// which stops it when dropped.
async fn http() -> ([String; 2], McpHttpServer) {
    let served = McpServer::new(&aleph::server())
        .serve_http("127.0.0.1:0")
        .await
        .expect("aleph binds");

    let service = StreamableHttpService::new(
        || Ok(Calculator::default()),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    let router = axum::Router::new().route_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("rmcp binds");
    let url = format!("http://{}/mcp", listener.local_addr().expect("an address"));
    tokio::spawn(async move { axum::serve(listener, router).await });
    ([served.url().to_owned(), url], served)
}

/// `n` clients of the server at `url` over streamable HTTP, each in a session of its own.
async fn http_clients(url: &str, n: usize) -> Vec<Client> {
    let connect = || async {
        ().serve(StreamableHttpClientTransport::from_uri(url.to_owned()))
            .await
            .expect("the server answers")
    };
    join_all((0..n).map(|_| connect())).await
}

/// How many clients call at once in the throughput rows.
const CLIENTS: usize = 64;

async fn call(client: &Client, name: &'static str, args: &Map<String, Value>) -> String {
    let result = client
        .call_tool(CallToolRequestParams::new(name).with_arguments(args.clone()))
        .await
        .expect("a result");
    assert_ne!(result.is_error, Some(true), "{result:?}");
    let text = result.content[0].as_text().expect("text");
    text.text.clone()
}

fn bench(c: &mut Criterion) {
    // Over the pipe on one thread, a round trip is the work client and server do and nothing
    // else: no thread wakes another. The other rows run on tokio's default multi-threaded
    // runtime, as an application runs them.
    let one_thread = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    let arguments = peers::arguments();
    let piped_one_thread = one_thread.block_on(piped());
    let (piped, stdio, (urls, _served)) =
        runtime.block_on(async { (piped().await, stdio().await, http().await) });
    let (http, crowds) = runtime.block_on(async {
        let mut one = Vec::new();
        let mut crowds = Vec::new();
        for url in &urls {
            one.extend(http_clients(url, 1).await);
            crowds.push(http_clients(url, CLIENTS).await);
        }
        let one: [Client; 2] = one.try_into().unwrap_or_else(|_| unreachable!());
        (one, crowds)
    });
    for (transport, clients, runtime) in [
        ("pipe, one thread", &piped_one_thread, &one_thread),
        ("pipe", &piped, &runtime),
        ("stdio", &stdio, &runtime),
        ("http", &http, &runtime),
    ] {
        for name in ["add", "distance"] {
            let args = &arguments[name];
            // Both servers give the same answer before they are timed.
            let [aleph_text, rmcp_text] = runtime.block_on(async {
                [
                    call(&clients[0], name, args).await,
                    call(&clients[1], name, args).await,
                ]
            });
            assert_eq!(aleph_text, rmcp_text, "{name} over {transport}");

            let mut group = c.benchmark_group(format!("{transport}/{name}"));
            for (server, client) in ["aleph-tools", "rmcp"].into_iter().zip(clients) {
                group.bench_function(server, |b| {
                    b.to_async(runtime)
                        .iter(|| async { black_box(call(client, name, args).await) });
                });
            }
            group.finish();
        }
    }
    // Throughput: every client of one server calls once, all at once; a round of them is
    // one iteration, and criterion reports calls per second.
    for name in ["add", "distance"] {
        let args = &arguments[name];
        let mut group = c.benchmark_group(format!("http, {CLIENTS} clients/{name}"));
        group.throughput(Throughput::Elements(CLIENTS as u64));
        for (server, crowd) in ["aleph-tools", "rmcp"].into_iter().zip(&crowds) {
            group.bench_function(server, |b| {
                b.to_async(&runtime).iter(|| async {
                    black_box(join_all(crowd.iter().map(|client| call(client, name, args))).await)
                });
            });
        }
        group.finish();
    }
}

fn main() {
    let mut criterion = Criterion::default().configure_from_args();
    bench(&mut criterion);
    criterion.final_summary();
}
