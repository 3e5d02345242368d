//! Log messages from running tools: `Progress::log`, and `tracing` events through
//! `ToolLogLayer`, heard by a server's progress handler. Its own binary: it installs the
//! process's `tracing` subscriber.

use std::sync::{Arc, Mutex};

use aleph_tools::middleware::{Listen, ToolProgressHandler};
use aleph_tools::prelude::*;
use aleph_tools::{LogLevel, ProgressEvent, ToolLogLayer};
use serde_json::{Value, json};
use tracing_subscriber::layer::SubscriberExt as _;

type Heard = Vec<(String, LogLevel, Option<String>, Value)>;

#[derive(Default)]
struct Logs(Mutex<Heard>);

impl ToolProgressHandler for Logs {
    fn on_tool_log(&self, tool_name: &str, level: LogLevel, logger: Option<&str>, data: &Value) {
        self.0.lock().unwrap().push((
            tool_name.to_owned(),
            level,
            logger.map(str::to_owned),
            data.clone(),
        ));
    }
}

/// Logs through its progress reporter and through `tracing`.
#[tool(register = false)]
async fn noisy(progress: Progress) -> &'static str {
    progress.log(LogLevel::Notice, "from the reporter");
    tracing::debug!("from tracing");
    tokio::task::yield_now().await;
    tracing::error!(code = 7, retry = false, "failed once");
    // Work on another task is not the call's.
    tokio::spawn(async { tracing::warn!("from a spawned task") })
        .await
        .unwrap();
    "done"
}

/// Logs from a plain function.
#[tool(register = false)]
fn plain() -> u8 {
    tracing::info!(answer = 42);
    1
}

/// Logs from an inline function, which runs in place.
#[tool(register = false, inline)]
fn quick() -> u8 {
    tracing::warn!(quick = true, "in place");
    2
}

fn install() {
    let _ = tracing::subscriber::set_global_default(
        tracing_subscriber::registry().with(ToolLogLayer::new()),
    );
}

#[tokio::test]
async fn tool_logs_reach_the_progress_handler_and_nothing_else_does() {
    install();
    let logs = Arc::new(Logs::default());
    let server = AlephToolServer::builder()
        .with_tool(NoisyTool)
        .with_tool(PlainTool)
        .with_middleware(Listen::new(Arc::clone(&logs)))
        .build()
        .unwrap();
    tracing::info!("outside any call");

    let result = server.call("noisy", json!({})).await;
    assert!(result.success, "{result:?}");
    let result = server.call("plain", json!({})).await;
    assert!(result.success, "{result:?}");

    let target = Some("tool_logs".to_owned());
    assert_eq!(
        *logs.0.lock().unwrap(),
        vec![
            (
                "noisy".to_owned(),
                LogLevel::Notice,
                None,
                json!("from the reporter")
            ),
            (
                "noisy".to_owned(),
                LogLevel::Debug,
                target.clone(),
                json!("from tracing")
            ),
            (
                "noisy".to_owned(),
                LogLevel::Error,
                target.clone(),
                json!({ "message": "failed once", "code": 7, "retry": false })
            ),
            (
                "plain".to_owned(),
                LogLevel::Info,
                target,
                json!({ "answer": 42 })
            ),
        ]
    );
}

/// An inline tool that takes no context runs in place even when its call carries a
/// cancellation token and a progress listener (as every MCP call does); what it logs still
/// reaches the listener, named for its tool.
#[tokio::test]
async fn an_inline_call_run_in_place_logs_to_its_listener() {
    use std::future::IntoFuture;

    install();
    let heard: Arc<Mutex<Vec<(String, ProgressEvent)>>> = Arc::default();
    let listener = {
        let heard = Arc::clone(&heard);
        move |tool: &str, event: ProgressEvent| heard.lock().unwrap().push((tool.to_owned(), event))
    };
    let server = AlephToolServer::builder()
        .with_tool(QuickTool)
        .build()
        .unwrap();
    let ctx = ToolContext::new()
        .with_cancellation(CancellationToken::new())
        .with_progress(listener);
    let made = server.call("quick", json!({})).context(ctx).into_future();
    assert!(
        format!("{made:?}").contains("ended"),
        "ran in place: {made:?}"
    );
    assert_eq!(made.await.output, json!(2));
    tracing::warn!("outside any call");

    let heard = heard.lock().unwrap();
    let [
        (
            tool,
            ProgressEvent::Log {
                level,
                logger,
                data,
            },
        ),
    ] = heard.as_slice()
    else {
        panic!("one log message from the call, and nothing else: {heard:?}");
    };
    assert_eq!(tool, "quick");
    assert_eq!(*level, LogLevel::Warning);
    assert_eq!(logger.as_deref(), Some("tool_logs"));
    assert_eq!(data, &json!({ "message": "in place", "quick": true }));
}

#[tokio::test]
async fn a_call_nobody_follows_logs_nowhere_and_succeeds() {
    install();
    let server = AlephToolServer::builder()
        .with_tool(NoisyTool)
        .build()
        .unwrap();
    let result = server.call("noisy", json!({})).await;
    assert!(result.success, "{result:?}");
}

#[test]
fn levels_order_by_severity_and_read_as_mcp_writes_them() {
    assert!(LogLevel::Debug < LogLevel::Info && LogLevel::Alert < LogLevel::Emergency);
    assert_eq!(
        serde_json::to_value(LogLevel::Warning).unwrap(),
        json!("warning")
    );
    assert_eq!(
        serde_json::from_value::<LogLevel>(json!("critical")).unwrap(),
        LogLevel::Critical
    );
    assert!(serde_json::from_value::<LogLevel>(json!("WARN")).is_err());
    assert_eq!(LogLevel::from(tracing::Level::TRACE), LogLevel::Debug);
    assert_eq!(LogLevel::from(tracing::Level::WARN), LogLevel::Warning);
    assert_eq!(LogLevel::Notice.to_string(), "notice");
}
