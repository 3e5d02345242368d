//! The stack of layers: order (the builder's, then those added at run time), changing and
//! refusing calls, the argument check after the last layer, and the built-in permission,
//! rate-limit and concurrency layers.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use aleph_tools::ToolErrorKind;
use aleph_tools::middleware::{
    self, ConcurrencyLimit, Layer, Middleware, Next, ObservedCall, Permission, Priority, Rate,
    RateLimit, ToolCall,
};
use aleph_tools::prelude::*;
use serde_json::{Value, json};

/// Echo the text back.
#[tool(register = false)]
fn echo(text: String) -> String {
    text
}

/// Delete a file (pretend).
#[tool(register = false, tags = ["fs"])]
fn delete_file(path: String) -> String {
    format!("deleted {path}")
}

/// Wait a while, counting how many run at once.
#[tool(register = false)]
async fn slow(ms: u64, gauge: State<Gauge>) -> usize {
    let now = gauge.running.fetch_add(1, Ordering::SeqCst) + 1;
    gauge.peak.fetch_max(now, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(ms)).await;
    gauge.running.fetch_sub(1, Ordering::SeqCst);
    now
}

#[derive(Default)]
struct Gauge {
    running: AtomicUsize,
    peak: AtomicUsize,
}

type Log = Arc<Mutex<Vec<String>>>;

/// A layer that writes `name>` on the way in and `<name` on the way out.
fn recorder(name: &'static str, log: &Log) -> impl Middleware {
    let log = Arc::clone(log);
    middleware::from_fn(move |call: ToolCall, next: Next| {
        let log = Arc::clone(&log);
        async move {
            log.lock().unwrap().push(format!("{name}>"));
            let outcome = next.run(call).await;
            log.lock().unwrap().push(format!("<{name}"));
            outcome
        }
    })
}

fn entries(log: &Log) -> Vec<String> {
    log.lock().unwrap().clone()
}

#[tokio::test]
async fn layers_run_in_the_order_added_and_unwind_in_reverse() {
    let log = Log::default();
    let tool_log = Arc::clone(&log);
    let s = AlephToolServer::builder()
        .with_tool(EchoTool)
        .with_middleware(recorder("a", &log))
        .with_middleware(recorder("b", &log))
        .with_middleware(recorder("c", &log))
        .build()
        .unwrap();
    s.add_layer(Layer::interceptor(
        Priority::Normal,
        move |call: ToolCall| {
            let log = Arc::clone(&tool_log);
            async move {
                log.lock().unwrap().push("hook".to_owned());
                Ok(call)
            }
        },
    ));
    let result = s.call("echo", json!({ "text": "hi" })).await;
    assert!(result.success);
    assert_eq!(entries(&log), ["a>", "b>", "c>", "hook", "<c", "<b", "<a"]);
}

#[tokio::test]
async fn a_layer_can_change_the_arguments_or_answer_itself() {
    let s = AlephToolServer::builder()
        .with_tool(EchoTool)
        .with_middleware(middleware::from_fn(
            |mut call: ToolCall, next: Next| async move {
                if call.arguments()["text"] == "secret" {
                    return Ok(ToolOutput::text("[withheld]"));
                }
                let shouted = call.arguments()["text"]
                    .as_str()
                    .unwrap_or_default()
                    .to_uppercase();
                call.arguments_mut()["text"] = Value::String(shouted);
                next.run(call).await
            },
        ))
        .build()
        .unwrap();
    assert_eq!(
        s.call("echo", json!({ "text": "hi" })).await.output,
        json!("HI")
    );
    assert_eq!(
        s.call("echo", json!({ "text": "secret" })).await.output,
        json!("[withheld]")
    );
}

#[tokio::test]
async fn unknown_tools_reach_no_layer_and_bad_arguments_are_refused_after_the_last() {
    let seen = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&seen);
    let s = AlephToolServer::builder()
        .with_tool(EchoTool)
        .with_middleware(middleware::from_fn(move |call: ToolCall, next: Next| {
            counter.fetch_add(1, Ordering::SeqCst);
            next.run(call)
        }))
        .build()
        .unwrap();
    let unknown = s.call("nope", json!({})).await;
    assert_eq!(unknown.error_kind, Some(ToolErrorKind::NotFound));
    assert_eq!(
        seen.load(Ordering::SeqCst),
        0,
        "not admitted, so no layer ran"
    );
    // Text that is not JSON has no arguments for a layer to look at.
    let garbled = s.call_str("echo", r#"{"text": "#).await;
    assert_eq!(garbled.error_kind, Some(ToolErrorKind::InvalidArgs));
    assert_eq!(seen.load(Ordering::SeqCst), 0);
    // Arguments of the wrong type pass the layers and are refused at the check after them.
    let bad = s.call("echo", json!({ "text": 5 })).await;
    assert_eq!(bad.error_kind, Some(ToolErrorKind::InvalidArgs));
    assert!(bad.error.unwrap().contains("text"));
    assert_eq!(seen.load(Ordering::SeqCst), 1);
    assert!(s.call("echo", json!({ "text": "ok" })).await.success);
    assert_eq!(seen.load(Ordering::SeqCst), 2);
}

/// Take a step of 1 to 10.
#[tool(register = false)]
fn step(
    /// How far.
    #[schemars(range(min = 1, max = 10))]
    by: u32,
) -> u32 {
    by
}

#[tokio::test]
async fn what_a_layer_changes_is_checked_against_the_schema_like_what_the_caller_sent() {
    let s = AlephToolServer::builder()
        .with_tool(StepTool)
        .build()
        .unwrap();
    // Serde alone takes 500 for a `u32`; the schema says at most 10.
    let id = s.add_layer(Layer::interceptor(
        Priority::Normal,
        |mut call: ToolCall| async move {
            call.arguments_mut()["by"] = json!(500);
            Ok(call)
        },
    ));
    let changed = s.call("step", json!({ "by": 2 })).await;
    assert_eq!(
        changed.error_kind,
        Some(ToolErrorKind::InvalidArgs),
        "{changed:?}"
    );
    assert!(changed.error.unwrap().contains("by"));
    assert!(s.remove_layer(id));
    assert_eq!(s.call("step", json!({ "by": 2 })).await.output, json!(2));
}

#[tokio::test]
async fn middleware_added_at_run_time_runs_after_the_builders_by_kind_then_priority() {
    let log = Log::default();
    let s = AlephToolServer::builder()
        .with_tool(EchoTool)
        .with_middleware(recorder("built", &log))
        .build()
        .unwrap();
    let resolver_log = Arc::clone(&log);
    s.add_layer(Layer::resolver(Priority::System, move |_: &ToolCall| {
        resolver_log.lock().unwrap().push("resolver".to_owned());
        async { None }
    }));
    let low = s.add_layer(Layer::new(Priority::Low, recorder("low", &log)));
    s.add_layer(Layer::new(Priority::High, recorder("high", &log)));
    let observer_log = Arc::clone(&log);
    s.add_layer(Layer::observer(
        Priority::Low,
        move |_: Arc<ObservedCall>| {
            observer_log.lock().unwrap().push("observed".to_owned());
            async { Ok(()) }
        },
    ));
    assert!(s.call("echo", json!({ "text": "hi" })).await.success);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !entries(&log).contains(&"observed".to_owned()) {
        assert!(std::time::Instant::now() < deadline, "{:?}", entries(&log));
        tokio::task::yield_now().await;
    }
    // The observer hears the outcome on a task of its own, so at no fixed place.
    let ran: Vec<String> = entries(&log)
        .into_iter()
        .filter(|entry| entry != "observed")
        .collect();
    assert_eq!(
        ran,
        [
            "built>", "high>", "low>", "resolver", "<low", "<high", "<built"
        ]
    );
    log.lock().unwrap().clear();
    assert!(s.remove_layer(low));
    assert!(!s.remove_layer(low));
    assert!(s.call("echo", json!({ "text": "hi" })).await.success);
    assert_eq!(entries(&log)[..4], ["built>", "high>", "resolver", "<high"]);
}

#[tokio::test]
async fn a_layer_added_at_run_time_changes_what_callers_are_offered() {
    let s = AlephToolServer::builder()
        .with_tool(EchoTool)
        .with_tool(DeleteFileTool)
        .build()
        .unwrap();
    let changes = s.watch_tools();
    let guest = ToolContext::new();
    assert_eq!(s.tools().context(&guest).names(), ["delete_file", "echo"]);
    let id = s.add_layer(Layer::new(
        Priority::System,
        Permission::new().require_for_tag("fs:write", "fs"),
    ));
    assert!(
        changes.has_changed().unwrap(),
        "listings may differ: watchers hear of it"
    );
    assert_eq!(s.tools().context(&guest).names(), ["echo"]);
    let refused = s.call("delete_file", json!({ "path": "a" })).await;
    assert_eq!(refused.error_kind, Some(ToolErrorKind::PermissionDenied));
    s.remove_layer(id);
    assert_eq!(s.tools().context(&guest).names(), ["delete_file", "echo"]);
    assert!(s.call("delete_file", json!({ "path": "a" })).await.success);
}

#[tokio::test]
async fn a_panicking_layer_costs_only_its_call() {
    let s = AlephToolServer::builder()
        .with_tool(EchoTool)
        .with_middleware(middleware::from_fn(
            |call: ToolCall, next: Next| async move {
                assert_ne!(call.arguments()["text"], "boom", "layer gave up");
                next.run(call).await
            },
        ))
        .build()
        .unwrap();
    let result = s.call("echo", json!({ "text": "boom" })).await;
    assert_eq!(result.error_kind, Some(ToolErrorKind::Panicked));
    assert!(result.error.unwrap().contains("layer gave up"));
    for _ in 0..100 {
        assert!(s.call("echo", json!({ "text": "fine" })).await.success);
    }
}

#[tokio::test]
async fn permission_requires_capabilities_by_name_and_by_tag() {
    let s = AlephToolServer::builder()
        .with_tool(EchoTool)
        .with_tool(DeleteFileTool)
        .with_middleware(
            Permission::new()
                .require("audit:echo", ["ec*"])
                .unwrap()
                .require_for_tag("fs:write", "fs"),
        )
        .build()
        .unwrap();
    let denied = s.call("delete_file", json!({ "path": "x" })).await;
    assert_eq!(denied.error_kind, Some(ToolErrorKind::PermissionDenied));
    assert_eq!(
        denied.error.as_deref(),
        Some(
            "permission denied for `delete_file`: it needs the capability `fs:write`, which this call was not granted"
        )
    );
    let granted = ToolContext::new().with_capabilities(["fs:write"]);
    let ok = s
        .call("delete_file", json!({ "path": "x" }))
        .context(granted.clone())
        .await;
    assert!(ok.success, "{ok:?}");
    let echo = s
        .call("echo", json!({ "text": "x" }))
        .context(granted)
        .await;
    assert!(echo.error.unwrap().contains("`audit:echo`"));
    let both = ToolContext::new().with_capabilities(["fs:write", "audit:echo"]);
    assert!(
        s.call("echo", json!({ "text": "x" }))
            .context(both)
            .await
            .success
    );
}

#[test]
fn permission_patterns_are_checked_when_built() {
    let err = Permission::new().require("x", ["[unclosed"]).unwrap_err();
    assert!(err.to_string().contains("`[unclosed`"), "{err}");
}

#[tokio::test]
async fn the_rate_limit_refuses_past_the_limit_with_a_clear_error() {
    let s = AlephToolServer::builder()
        .with_tool(EchoTool)
        .with_tool(DeleteFileTool)
        .with_middleware(RateLimit::new().tool("echo", Rate::per_minute(3)))
        .build()
        .unwrap();
    for _ in 0..3 {
        assert!(s.call("echo", json!({ "text": "x" })).await.success);
    }
    let refused = s.call("echo", json!({ "text": "x" })).await;
    assert_eq!(refused.error_kind, Some(ToolErrorKind::RateLimited));
    let message = refused.error.unwrap();
    assert!(
        message.starts_with(
            "`echo` was called too often (the limit is 3 calls per minute for this tool); wait "
        ),
        "{message}"
    );
    assert!(message.ends_with(" before calling it again"), "{message}");
    // Other tools have their own allowance.
    for _ in 0..10 {
        assert!(s.call("delete_file", json!({ "path": "x" })).await.success);
    }
}

#[tokio::test]
async fn per_tool_and_global_rates_count_separately() {
    let s = AlephToolServer::builder()
        .with_tool(EchoTool)
        .with_tool(DeleteFileTool)
        .with_middleware(
            RateLimit::new()
                .per_tool(Rate::per_hour(2))
                .global(Rate::per_hour(3)),
        )
        .build()
        .unwrap();
    assert!(s.call("echo", json!({ "text": "1" })).await.success);
    assert!(s.call("echo", json!({ "text": "2" })).await.success);
    let third = s.call("echo", json!({ "text": "3" })).await;
    assert!(third.error.unwrap().contains("for each tool"));
    assert!(s.call("delete_file", json!({ "path": "a" })).await.success);
    let fourth = s.call("delete_file", json!({ "path": "b" })).await;
    assert!(
        fourth
            .error
            .unwrap()
            .contains("(the limit is 3 calls per hour across all tools)")
    );
}

#[tokio::test]
async fn a_huge_rate_never_refuses() {
    let s = AlephToolServer::builder()
        .with_tool(EchoTool)
        .with_middleware(
            RateLimit::new()
                .global(Rate::per_second(u32::MAX))
                .per_tool(Rate::new(u32::MAX, Duration::from_nanos(1))),
        )
        .build()
        .unwrap();
    for _ in 0..1_000 {
        assert!(s.call("echo", json!({ "text": "x" })).await.success);
    }
}

#[tokio::test]
async fn a_zero_rate_allows_no_calls() {
    let s = AlephToolServer::builder()
        .with_tool(EchoTool)
        .with_middleware(RateLimit::new().tool("echo", Rate::per_second(0)))
        .build()
        .unwrap();
    let refused = s.call("echo", json!({ "text": "x" })).await;
    assert_eq!(refused.error_kind, Some(ToolErrorKind::RateLimited));
    assert!(
        refused
            .error
            .unwrap()
            .ends_with("it allows no calls at all, so do not call it again")
    );
}

fn gauged(limit: ConcurrencyLimit) -> AlephToolServer {
    AlephToolServer::builder()
        .with_tool(SlowTool)
        .with_tool(EchoTool)
        .with_state(Gauge::default())
        .with_middleware(limit)
        .build()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_concurrency_limit_bounds_calls_at_once() {
    let s = gauged(ConcurrencyLimit::new().tool("slow", 2));
    let calls: Vec<_> = (0..8)
        .map(|_| {
            let s = s.clone();
            tokio::spawn(async move { s.call("slow", json!({ "ms": 30 })).await })
        })
        .collect();
    for call in calls {
        let result = call.await.unwrap();
        assert!(result.success, "{result:?}");
        assert!(result.output.as_u64().unwrap() <= 2, "{result:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_global_limit_covers_every_tool() {
    let s = gauged(ConcurrencyLimit::new().global(1));
    let slow = {
        let s = s.clone();
        tokio::spawn(async move { s.call("slow", json!({ "ms": 200 })).await })
    };
    tokio::time::sleep(Duration::from_millis(50)).await;
    // The one place is taken: a cancelled waiter gives up without running.
    let token = CancellationToken::new();
    let waiter = {
        let s = s.clone();
        let ctx = ToolContext::new().with_cancellation(token.clone());
        tokio::spawn(async move { s.call("echo", json!({ "text": "x" })).context(ctx).await })
    };
    tokio::time::sleep(Duration::from_millis(20)).await;
    token.cancel();
    let cancelled = waiter.await.unwrap();
    assert_eq!(
        cancelled.error_kind,
        Some(ToolErrorKind::Cancelled),
        "{cancelled:?}"
    );
    assert!(slow.await.unwrap().success);
    assert!(s.call("echo", json!({ "text": "x" })).await.success);
}

#[tokio::test]
async fn a_zero_concurrency_limit_refuses() {
    let s = gauged(ConcurrencyLimit::new().per_tool(0));
    let refused = s.call("echo", json!({ "text": "x" })).await;
    assert_eq!(refused.error_kind, Some(ToolErrorKind::PermissionDenied));
    assert!(
        refused
            .error
            .unwrap()
            .contains("the concurrency limit for each tool allows no calls")
    );
}

#[tokio::test]
async fn interceptors_run_by_priority_then_in_order_added_and_may_refuse() {
    let s = AlephToolServer::builder()
        .with_tool(EchoTool)
        .build()
        .unwrap();
    for (priority, tag) in [
        (Priority::Low, "low"),
        (Priority::Normal, "normal-1"),
        (Priority::System, "system"),
        (Priority::Normal, "normal-2"),
        (Priority::High, "high"),
    ] {
        s.add_layer(Layer::interceptor(
            priority,
            move |mut call: ToolCall| async move {
                let text = format!("{} {tag}", call.arguments()["text"].as_str().unwrap());
                call.arguments_mut()["text"] = Value::String(text);
                Ok(call)
            },
        ));
    }
    let result = s.call("echo", json!({ "text": "start" })).await;
    assert_eq!(
        result.output,
        json!("start system high normal-1 normal-2 low")
    );

    let blocker = s.add_layer(Layer::interceptor(
        Priority::System,
        |call: ToolCall| async move {
            if call.arguments()["text"]
                .as_str()
                .is_some_and(|t| t.starts_with("forbidden"))
            {
                Err(ToolError::permission_denied(
                    call.name(),
                    "a hook refused it",
                ))
            } else {
                Ok(call)
            }
        },
    ));
    let refused = s.call("echo", json!({ "text": "forbidden" })).await;
    assert_eq!(
        refused.error.as_deref(),
        Some("permission denied for `echo`: a hook refused it")
    );
    assert!(s.remove_layer(blocker));
    assert!(!s.remove_layer(blocker));
    assert!(s.call("echo", json!({ "text": "forbidden" })).await.success);
}

#[tokio::test]
async fn the_first_resolver_with_an_answer_wins_and_the_tool_does_not_run() {
    let s = AlephToolServer::builder()
        .with_tool(EchoTool)
        .build()
        .unwrap();
    s.add_layer(Layer::resolver(Priority::Normal, |call: &ToolCall| {
        let hit = call.arguments()["text"] == "cached";
        async move { hit.then(|| ToolOutput::text("from normal")) }
    }));
    s.add_layer(Layer::resolver(Priority::High, |call: &ToolCall| {
        let hit = call.arguments()["text"] == "cached";
        async move { hit.then(|| ToolOutput::text("from high")) }
    }));
    s.add_layer(Layer::resolver(Priority::System, |_: &ToolCall| async {
        None
    }));
    assert_eq!(
        s.call("echo", json!({ "text": "cached" })).await.output,
        json!("from high")
    );
    assert_eq!(
        s.call("echo", json!({ "text": "fresh" })).await.output,
        json!("fresh")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn observers_hear_every_outcome_and_their_failures_go_nowhere() {
    let heard: Arc<Mutex<Vec<(String, bool)>>> = Arc::default();
    let sink = Arc::clone(&heard);
    let s = AlephToolServer::builder()
        .with_tool(EchoTool)
        .with_tool(DeleteFileTool)
        .build()
        .unwrap();
    s.add_layer(Layer::observer(
        Priority::Normal,
        move |call: Arc<ObservedCall>| {
            let sink = Arc::clone(&sink);
            async move {
                sink.lock()
                    .unwrap()
                    .push((call.tool.clone(), call.outcome.is_ok()));
                Ok(())
            }
        },
    ));
    s.add_layer(Layer::observer(
        Priority::Normal,
        |_: Arc<ObservedCall>| async { Err("the observer's backend is down".into()) },
    ));
    s.add_layer(Layer::observer(
        Priority::Low,
        |_: Arc<ObservedCall>| async {
            panic!("an observer that panics");
        },
    ));
    s.add_layer(Layer::interceptor(
        Priority::Normal,
        |call: ToolCall| async move {
            if call.name() == "delete_file" {
                Err(ToolError::permission_denied(call.name(), "not today"))
            } else {
                Ok(call)
            }
        },
    ));
    assert!(s.call("echo", json!({ "text": "a" })).await.success);
    assert!(!s.call("delete_file", json!({ "path": "a" })).await.success);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while heard.lock().unwrap().len() < 2 {
        assert!(
            std::time::Instant::now() < deadline,
            "observers were not called"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let mut got = heard.lock().unwrap().clone();
    got.sort();
    assert_eq!(
        got,
        [("delete_file".to_owned(), false), ("echo".to_owned(), true)]
    );
}
