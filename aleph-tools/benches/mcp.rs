//! The cost of MCP: one call to a trivial tool (`add`)
//!
//! - `in_process`: `AlephToolServer::call` on the server that holds the tool;
//! - `stdio`: the same tool wrapped by an `McpConnection` to a child process that serves it
//!   with `McpServer::serve_stdio` (this bench binary again): the calling server's pipeline,
//!   a `tools/call` round trip over pipes, the serving server's pipeline;
//! - `http`: the same over streamable HTTP on loopback, in this process.
//!
//! Run with `cargo bench -p aleph-tools --features mcp-http --bench mcp`.

#![allow(missing_docs)]

use std::hint::black_box;

use aleph_tools::mcp::{McpConnection, McpEndpoint, McpServer};
use aleph_tools::prelude::*;
use criterion::Criterion;
use serde_json::json;

/// Add two integers.
#[tool(register = false, inline)]
fn add(
    /// First addend
    a: i64,
    /// Second addend
    b: i64,
) -> i64 {
    a + b
}

/// Set in the child: serve `add` over stdio instead of benchmarking.
const SERVE: &str = "ALEPH_BENCH_SERVE_MCP";

fn server() -> AlephToolServer {
    AlephToolServer::builder()
        .with_tool(AddTool)
        .build()
        .expect("add is a valid tool")
}

fn bench(c: &mut Criterion) {
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    let local = server();
    let (agent, connections, _http) = runtime.block_on(async {
        let agent = AlephToolServer::new();
        let exe = std::env::current_exe().expect("this binary");
        let stdio =
            McpConnection::builder(McpEndpoint::command(exe.display().to_string()).env(SERVE, "1"))
                .prefix("stdio")
                .connect(&agent)
                .await
                .expect("connect over stdio");
        let http = McpServer::new(&local)
            .serve_http("127.0.0.1:0")
            .await
            .expect("bind");
        let web = McpConnection::builder(McpEndpoint::url(http.url()))
            .prefix("http")
            .connect(&agent)
            .await
            .expect("connect over HTTP");
        (agent, [stdio, web], http)
    });
    let args = json!({ "a": 2, "b": 40 });

    let mut group = c.benchmark_group("mcp_add");
    group.bench_function("in_process", |b| {
        b.to_async(&runtime)
            .iter(|| async { black_box(local.call("add", args.clone()).await) });
    });
    for (id, name) in [("stdio", "stdio_add"), ("http", "http_add")] {
        group.bench_function(id, |b| {
            b.to_async(&runtime).iter(|| async {
                let result = agent.call(name, args.clone()).await;
                assert!(result.success, "{result:?}");
                black_box(result)
            });
        });
    }
    group.finish();
    drop(connections);
}

fn main() {
    if std::env::var_os(SERVE).is_some() {
        let runtime = tokio::runtime::Runtime::new().expect("a runtime");
        runtime
            .block_on(McpServer::new(&server()).serve_stdio())
            .expect("serve over stdio");
        return;
    }
    let mut criterion = Criterion::default().configure_from_args();
    bench(&mut criterion);
    criterion.final_summary();
}
