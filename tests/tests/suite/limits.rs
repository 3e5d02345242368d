//! The limits a call promises: a sync tool's timeout holds and its body never stalls the
//! async workers; cancellation ends the call at once, whatever the tool does; a change of
//! filter is a change of the tool set.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::ThreadId;
use std::time::{Duration, Instant};

use aleph_tools::prelude::*;
use aleph_tools_tests::logs::Captured;
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

/// Calls `tool`, cancels the call 100 ms in, and returns its result and how long it took.
async fn cancelled_after_100ms(
    server: &AlephToolServer,
    tool: &'static str,
) -> (ToolResult, Duration) {
    let token = CancellationToken::new();
    let ctx = ToolContext::new().with_cancellation(token.clone());
    let started = tokio::time::Instant::now();
    let call = tokio::spawn({
        let server = server.clone();
        async move { server.call(tool, json!({})).context(ctx).await }
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    token.cancel();
    (call.await.unwrap(), started.elapsed())
}

#[tokio::test(start_paused = true)]
async fn a_cancelled_call_ends_at_once_and_drops_the_tool() {
    let dropped = Arc::new(AtomicBool::new(false));
    let server = server(&dropped);
    let (result, took) = cancelled_after_100ms(&server, "stubborn").await;
    assert_eq!(
        result.error_kind,
        Some(ToolErrorKind::Cancelled),
        "{result:?}"
    );
    assert_eq!(result.error.as_deref(), Some("`stubborn` was cancelled"));
    assert!(took < Duration::from_secs(1), "{took:?}");
    assert!(
        dropped.load(Ordering::SeqCst),
        "the tool's future was not dropped"
    );
}

#[tokio::test(start_paused = true)]
async fn cancellation_also_ends_a_wait_for_approval() {
    let server = server(&Arc::new(AtomicBool::new(false)));
    let (result, _) = cancelled_after_100ms(&server, "guarded").await;
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
    assert_eq!(server.tools().names(), ["guarded"]);
}

/// Work for `ms` milliseconds without yielding, as sync code does.
#[tool(register = false, timeout = "100ms")]
fn grind(ms: u64) -> &'static str {
    std::thread::sleep(Duration::from_millis(ms));
    "ground"
}

/// The thread the body ran on.
#[tool(register = false)]
fn where_sync() -> String {
    format!("{:?}", std::thread::current().id())
}

/// The thread the body ran on, run in place.
#[tool(register = false, inline)]
fn where_inline() -> String {
    format!("{:?}", std::thread::current().id())
}

/// Work in place for `ms` milliseconds: an inline tool that may not keep its promise.
#[tool(register = false, inline)]
fn grind_in_place(ms: u64) -> u64 {
    std::thread::sleep(Duration::from_millis(ms));
    ms
}

/// [`grind_in_place`], reading its context: it runs in place with the call's.
#[tool(register = false, inline)]
fn grind_in_place_named(ctx: &ToolContext, ms: u64) -> String {
    std::thread::sleep(Duration::from_millis(ms));
    ctx.tool_name().unwrap_or_default().to_owned()
}

/// Read the context from a sync body.
#[tool(register = false)]
fn sync_context(ctx: &ToolContext, progress: Progress) -> String {
    progress.chunk("from a blocking thread");
    ctx.tool_name().unwrap_or_default().to_owned()
}

/// Fail badly, off the async workers.
#[tool(register = false)]
fn sync_explode() -> u8 {
    panic!("the sync body broke")
}

fn sync_server() -> AlephToolServer {
    AlephToolServer::builder()
        .with_tool(GrindTool)
        .with_tool(WhereSyncTool)
        .with_tool(WhereInlineTool)
        .with_tool(SyncContextTool)
        .with_tool(SyncExplodeTool)
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_sync_tool_past_its_timeout_is_timed_out() {
    let started = Instant::now();
    let result = sync_server().call("grind", json!({ "ms": 2000 })).await;
    assert_eq!(
        result.error_kind,
        Some(ToolErrorKind::Timeout),
        "{result:?}"
    );
    assert_eq!(
        result.error.as_deref(),
        Some("`grind` did not finish within 100ms")
    );
    // The call ends at its limit; the thread finishes its two seconds in the background.
    assert!(
        started.elapsed() < Duration::from_millis(1500),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(
        sync_server().call("grind", json!({ "ms": 1 })).await.output,
        json!("ground")
    );
}

#[tokio::test(flavor = "current_thread")]
async fn a_sync_tool_never_stalls_the_runtime() {
    let order = Arc::new(Mutex::new(Vec::new()));
    let timer = tokio::spawn({
        let order = Arc::clone(&order);
        async move {
            tokio::time::sleep(Duration::from_millis(50)).await;
            order.lock().unwrap().push("timer");
        }
    });
    // One worker thread: a body run in place would hold it for the whole 300 ms.
    let server = sync_server();
    let call = server.call("grind", json!({ "ms": 90 }));
    let slow = tokio::spawn({
        let server = server.clone();
        async move {
            let result = server.call("grind", json!({ "ms": 300 })).await;
            result.error_kind
        }
    });
    assert!(call.await.success);
    order.lock().unwrap().push("tool");
    timer.await.unwrap();
    assert_eq!(slow.await.unwrap(), Some(ToolErrorKind::Timeout));
    assert_eq!(*order.lock().unwrap(), ["timer", "tool"]);
}

#[tokio::test]
async fn sync_bodies_run_off_the_worker_unless_inline() {
    let server = sync_server();
    let here: ThreadId = std::thread::current().id();
    let pooled = server.call("where_sync", json!({})).await.output;
    let inline = server.call("where_inline", json!({})).await.output;
    assert_eq!(inline, json!(format!("{here:?}")));
    assert_ne!(pooled, json!(format!("{here:?}")));
}

#[tokio::test]
async fn a_sync_body_keeps_its_context_and_its_panics() {
    let server = sync_server();
    let chunks = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&chunks);
    let ctx = ToolContext::new().with_progress(move |_, event| sink.lock().unwrap().push(event));
    let result = server.call("sync_context", json!({})).context(ctx).await;
    assert_eq!(result.output, json!("sync_context"));
    assert_eq!(chunks.lock().unwrap().len(), 1);
    let boom = server.call("sync_explode", json!({})).await;
    assert_eq!(boom.error_kind, Some(ToolErrorKind::Panicked));
    assert_eq!(
        boom.error.as_deref(),
        Some("`sync_explode` failed unexpectedly: the sync body broke")
    );
}

#[test]
fn outside_a_runtime_a_sync_body_runs_in_place() {
    use std::future::{Future, IntoFuture};
    use std::task::{Context, Poll, Waker};

    let server = sync_server();
    let mut call = std::pin::pin!(server.call("where_sync", json!({})).into_future());
    let Poll::Ready(result) = call.as_mut().poll(&mut Context::from_waker(Waker::noop())) else {
        panic!("no runtime: the body runs in place and the call is ready at once");
    };
    assert_eq!(
        result.output,
        json!(format!("{:?}", std::thread::current().id()))
    );
}

/// Blocks the thread polling it instead of awaiting, then answers.
#[tool(timeout = "50ms", register = false)]
#[allow(clippy::unused_async, reason = "the mistake this test is about")]
async fn blocks_its_worker() -> &'static str {
    std::thread::sleep(Duration::from_millis(400));
    "done late"
}

/// Waits as it should, past its limit.
#[tool(timeout = "50ms", register = false)]
async fn awaits_past_its_limit() -> &'static str {
    tokio::time::sleep(Duration::from_secs(5)).await;
    "never"
}

/// An async tool that blocks its worker cannot be stopped at its limit, but it does not go
/// unnoticed: the server logs a warning naming the tool and the fix. A tool that awaits
/// times out on time, without a warning.
#[tokio::test]
async fn a_blocking_async_tool_is_reported() {
    let (captured, _guard) = Captured::capture();
    let server = AlephToolServer::builder()
        .with_tool(BlocksItsWorkerTool)
        .with_tool(AwaitsPastItsLimitTool)
        .build()
        .unwrap();
    let log = || captured.text();

    let on_time = server.call("awaits_past_its_limit", json!({})).await;
    assert_eq!(
        on_time.error_kind,
        Some(ToolErrorKind::Timeout),
        "{on_time:?}"
    );
    assert!(!log().contains("blocked"), "{}", log());

    let late = server.call("blocks_its_worker", json!({})).await;
    assert!(late.duration_ms >= 400, "{late:?}");
    let log = log();
    assert!(
        log.contains("WARN")
            && log.contains("`blocks_its_worker` ended")
            && log.contains("blocked the thread"),
        "{log}"
    );
}

/// A call of an inline tool with nothing around it runs in place, untimed, whether the tool
/// reads its context or not: an inline tool ends within microseconds, so its `duration_ms`
/// is 0 without reading a clock. One that runs for a millisecond or more is reported in
/// debug builds, naming the tool and the fix; a quick one is not. A call with a time limit
/// does not run in place and is timed.
#[tokio::test]
async fn an_inline_call_runs_untimed_and_a_slow_one_is_reported_in_debug_builds() {
    let (captured, _guard) = Captured::capture();
    let server = AlephToolServer::builder()
        .with_tool(GrindInPlaceTool)
        .with_tool(GrindInPlaceNamedTool)
        .build()
        .unwrap();

    let quick = server.call("grind_in_place", json!({ "ms": 0 })).await;
    assert_eq!(
        (quick.output.clone(), quick.duration_ms),
        (json!(0), 0),
        "{quick:?}"
    );
    assert!(
        !captured.text().contains("is inline but"),
        "{}",
        captured.text()
    );

    let slow = server.call("grind_in_place", json!({ "ms": 20 })).await;
    assert_eq!(
        (slow.output.clone(), slow.duration_ms),
        (json!(20), 0),
        "{slow:?}"
    );
    let log = captured.text();
    if cfg!(debug_assertions) {
        assert!(
            log.contains("WARN")
                && log.contains("`grind_in_place` is inline but its call ran in place for")
                && log.contains("drop `inline`"),
            "{log}"
        );
    } else {
        assert!(!log.contains("is inline but"), "{log}");
    }
    let named = server
        .call("grind_in_place_named", json!({ "ms": 20 }))
        .await;
    assert_eq!(
        (named.output.clone(), named.duration_ms),
        (json!("grind_in_place_named"), 0),
        "{named:?}"
    );
    let reported = captured
        .text()
        .contains("`grind_in_place_named` is inline but");
    assert_eq!(reported, cfg!(debug_assertions), "{}", captured.text());

    let limited = AlephToolServer::builder()
        .with_tool(GrindInPlaceTool)
        .with_default_timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    let timed = limited.call("grind_in_place", json!({ "ms": 20 })).await;
    assert!(timed.success && timed.duration_ms >= 20, "{timed:?}");
}
