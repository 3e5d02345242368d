//! An HTTP server run as a load balancer and Prometheus expect: `/healthz` and `/readyz`,
//! metrics per tool at `/metrics`, and a drain that lets a running call finish while new
//! requests are told to retry.
//!
//! Run with `cargo run -p guide-examples --bin production`.

use std::time::Duration;

use aleph_tools::mcp::{McpConnection, McpEndpoint, McpServer};
use aleph_tools::middleware::{CALL_DURATION, Metrics};
use aleph_tools::prelude::*;
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Counts the words in a text.
#[tool(register = false, read_only)]
fn word_count(
    /// The text
    text: String,
) -> usize {
    text.split_whitespace().count()
}

/// Takes its time: a report that is still being written when the server is told to stop.
#[tool(register = false)]
async fn write_report(
    /// How long it takes, in milliseconds
    millis: u64,
) -> String {
    tokio::time::sleep(Duration::from_millis(millis)).await;
    format!("the report, after {millis} ms")
}

/// `GET path` on `addr`: the status line and the body.
async fn get(addr: std::net::SocketAddr, path: &str) -> std::io::Result<(String, String)> {
    let mut stream = tokio::net::TcpStream::connect(addr).await?;
    let request = format!("GET {path} HTTP/1.1\r\nhost: {addr}\r\nconnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await?;
    let mut response = String::new();
    stream.read_to_string(&mut response).await?;
    let (head, body) = response.split_once("\r\n\r\n").unwrap_or_default();
    let status = head.lines().next().unwrap_or_default().to_owned();
    Ok((status, body.to_owned()))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The recorder first, then the layer, which describes its metrics to it.
    let prometheus = PrometheusBuilder::new()
        .set_buckets_for_metric(
            Matcher::Full(CALL_DURATION.to_owned()),
            &[0.001, 0.01, 0.1, 1.0, 10.0],
        )?
        .install_recorder()?;
    let tools = AlephToolServer::builder()
        .with_middleware(Metrics::new())
        .with_tool(WordCountTool)
        .with_tool(WriteReportTool)
        .build()?;
    let scrape = {
        let prometheus = prometheus.clone();
        axum::Router::new().route(
            "/metrics",
            axum::routing::get(move || std::future::ready(prometheus.render())),
        )
    };
    let http = McpServer::new(&tools)
        .with_router(scrape)
        .serve_http("127.0.0.1:0")
        .await?;
    let addr = http.local_addr();
    println!("serving at {}", http.url());
    for path in ["/healthz", "/readyz"] {
        let (status, body) = get(addr, path).await?;
        println!("GET {path}: {status}, {}", body.trim());
        assert!(status.contains("200"));
    }

    // A client calls over MCP; the calls show in the metrics.
    let client = AlephToolServer::new();
    let remote = McpConnection::builder(McpEndpoint::url(http.url()))
        .prefix("remote")
        .connect(&client)
        .await?;
    for text in ["one two three", "four five"] {
        let counted = client
            .call("remote_word_count", json!({ "text": text }))
            .await;
        println!("word_count({text:?}) -> {}", counted.model_text());
    }
    let (_, metrics) = get(addr, "/metrics").await?;
    println!("from /metrics:");
    for line in metrics.lines().filter(|line| {
        line.starts_with("aleph_tools_tool_calls_total")
            || line.starts_with("aleph_tools_tool_call_duration_seconds_count")
            || line.starts_with("aleph_tools_mcp_sessions")
    }) {
        println!("  {line}");
    }
    assert!(metrics.contains(r#"aleph_tools_tool_calls_total{tool="word_count",result="ok"} 2"#));

    // A report is being written when the server is told to stop: it drains. The report
    // finishes and reaches its client; the call after it is refused, with a retry.
    let report = tokio::spawn({
        let client = client.clone();
        async move {
            client
                .call("remote_write_report", json!({ "millis": 1500 }))
                .await
        }
    });
    // The running gauge says when it has started.
    let started = r#"aleph_tools_tool_calls_running{tool="write_report"} 1"#;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !get(addr, "/metrics").await?.1.contains(started) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the report never started"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let drained = tokio::spawn(http.drain(Duration::from_secs(10)));
    let (status, body) = loop {
        let (status, body) = get(addr, "/readyz").await?;
        if status.contains("503") {
            break (status, body);
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the drain never began"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    println!("while draining, GET /readyz: {status}, {}", body.trim());
    let refused = client
        .call("remote_word_count", json!({ "text": "too late" }))
        .await;
    println!("a new call: {}", refused.model_text());
    assert!(!refused.success);
    let report = report.await?;
    println!("the running call: {}", report.model_text());
    assert!(report.model_text().contains("the report"));
    let drained = drained.await??;
    println!(
        "drained in {:.1} s: {} call running, {} cut off",
        drained.took.as_secs_f64(),
        drained.running,
        drained.cut_off
    );
    assert_eq!((drained.running, drained.cut_off), (1, 0));
    drop(remote);
    Ok(())
}
