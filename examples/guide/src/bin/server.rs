//! The server: building it with state, and the guards around every call — time limits,
//! cancellation, contained panics — while it keeps serving.
//!
//! Run with `cargo run -p guide-examples --bin server`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use aleph_tools::prelude::*;
use serde_json::json;

/// Requests served so far.
#[derive(Default)]
struct Stats {
    calls: AtomicU64,
}

/// Count a visit.
#[tool(register = false)]
fn visit(stats: State<Stats>) -> u64 {
    stats.calls.fetch_add(1, Ordering::Relaxed) + 1
}

/// Think for a long time.
#[tool(register = false, timeout = "100ms")]
async fn ponder() -> &'static str {
    tokio::time::sleep(Duration::from_secs(10)).await;
    "done"
}

/// Work until cancelled.
#[tool(register = false)]
async fn crunch(cancel: CancellationToken) -> Result<&'static str, ToolError> {
    cancel.cancelled().await;
    Err(ToolError::Cancelled {
        tool: "crunch".to_owned(),
    })
}

/// Fail badly.
#[tool(register = false)]
fn explode() -> u32 {
    panic!("the flux capacitor broke")
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // `build` checks that every `State<T>` a tool takes has its `T`.
    let missing = AlephToolServer::builder().with_tool(VisitTool).build();
    println!("without state: {}", missing.unwrap_err());

    let server = AlephToolServer::builder()
        .with_tool(VisitTool)
        .with_tool(PonderTool)
        .with_tool(CrunchTool)
        .with_tool(ExplodeTool)
        .with_state(Stats::default())
        .with_default_timeout(Duration::from_secs(5))
        .build()?;

    let slow = server.call("ponder", json!({})).await;
    println!("ponder: {}", slow.model_text());

    let token = CancellationToken::new();
    let ctx = ToolContext::new().with_cancellation(token.clone());
    let running = tokio::spawn({
        let server = server.clone();
        async move { server.call("crunch", json!({})).context(ctx).await }
    });
    tokio::time::sleep(Duration::from_millis(20)).await;
    token.cancel();
    println!("crunch: {}", running.await?.model_text());

    let boom = server.call("explode", json!({})).await;
    println!("explode: {}", boom.model_text());

    let mut last = 0;
    for _ in 0..1_000 {
        last = server
            .call("visit", json!({}))
            .await
            .output
            .as_u64()
            .unwrap_or(0);
    }
    println!("after all that, visit still counts: {last}");
    assert_eq!(last, 1_000);
    Ok(())
}
