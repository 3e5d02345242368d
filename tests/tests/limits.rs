//! The limits a call promises: cancellation ends the call at once, whatever the tool does;
//! a change of filter is a change of the tool set.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use aleph_tools::prelude::*;
use serde_json::json;

/// Sets its flag when dropped: proof that a call's future was dropped.
struct DropFlag(Arc<AtomicBool>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// Work for two seconds, paying no attention to cancellation.
#[tool(register = false)]
async fn stubborn(flag: State<Arc<AtomicBool>>) -> &'static str {
    let _guard = DropFlag(Arc::clone(&flag));
    tokio::time::sleep(Duration::from_secs(2)).await;
    "finished anyway"
}

/// Needs approval, which never comes.
#[tool(register = false, confirm)]
fn guarded() -> &'static str {
    "ran"
}

fn server(dropped: &Arc<AtomicBool>) -> AlephToolServer {
    AlephToolServer::builder()
        .with_tool(StubbornTool)
        .with_tool(GuardedTool)
        .with_state(Arc::clone(dropped))
        .with_confirmation_handler(|_: ConfirmationRequest| std::future::pending())
        .build()
        .unwrap()
}

#[tokio::test(start_paused = true)]
async fn a_cancelled_call_ends_at_once_and_drops_the_tool() {
    let dropped = Arc::new(AtomicBool::new(false));
    let server = server(&dropped);
    let token = CancellationToken::new();
    let ctx = ToolContext::new().with_cancellation(token.clone());
    let started = tokio::time::Instant::now();
    let call = tokio::spawn({
        let server = server.clone();
        async move { server.call("stubborn", json!({})).context(ctx).await }
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    token.cancel();
    let result = call.await.unwrap();
    assert_eq!(
        result.error_kind,
        Some(ToolErrorKind::Cancelled),
        "{result:?}"
    );
    assert_eq!(result.error.as_deref(), Some("`stubborn` was cancelled"));
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
    assert!(
        dropped.load(Ordering::SeqCst),
        "the tool's future was not dropped"
    );
}

#[tokio::test(start_paused = true)]
async fn cancellation_also_ends_a_wait_for_approval() {
    let server = server(&Arc::new(AtomicBool::new(false)));
    let token = CancellationToken::new();
    let ctx = ToolContext::new().with_cancellation(token.clone());
    let call = tokio::spawn({
        let server = server.clone();
        async move { server.call("guarded", json!({})).context(ctx).await }
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    token.cancel();
    let result = call.await.unwrap();
    assert_eq!(
        result.error_kind,
        Some(ToolErrorKind::Cancelled),
        "{result:?}"
    );
}

#[tokio::test]
async fn a_call_cancelled_before_it_starts_never_runs() {
    let dropped = Arc::new(AtomicBool::new(false));
    let server = server(&dropped);
    let token = CancellationToken::new();
    token.cancel();
    let ctx = ToolContext::new().with_cancellation(token);
    let result = server.call("stubborn", json!({})).context(ctx).await;
    assert_eq!(result.error_kind, Some(ToolErrorKind::Cancelled));
    // Unknown tools and bad arguments still say so: cancellation only stops what would run.
    let token = CancellationToken::new();
    token.cancel();
    let ctx = ToolContext::new().with_cancellation(token);
    let unknown = server.call("nothing", json!({})).context(ctx).await;
    assert_eq!(unknown.error_kind, Some(ToolErrorKind::NotFound));
}

#[test]
fn the_cancelled_error_has_a_constructor() {
    let error = ToolError::cancelled("stubborn");
    assert_eq!(error.kind(), ToolErrorKind::Cancelled);
    assert_eq!(error.to_string(), "`stubborn` was cancelled");
}

#[tokio::test]
async fn a_filter_change_is_a_change_of_the_tool_set() {
    let server = server(&Arc::new(AtomicBool::new(false)));
    let mut changes = server.watch_tools();
    server
        .set_filter(ToolFilter::new().block("stubborn"))
        .unwrap();
    assert!(changes.has_changed().unwrap(), "set_filter sent no change");
    changes.mark_unchanged();
    // A refused filter changes nothing.
    server.set_filter(ToolFilter::new().block("[")).unwrap_err();
    assert!(!changes.has_changed().unwrap());
    assert_eq!(server.tool_names(), ["guarded"]);
}
