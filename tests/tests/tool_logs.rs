//! Log messages from running tools: `Progress::log`, and `tracing` events through
//! `ToolLogLayer`, heard by a server's progress handler. Its own binary: it installs the
//! process's `tracing` subscriber.

use std::sync::{Arc, Mutex};

use aleph_tools::middleware::{Listen, ToolProgressHandler};
use aleph_tools::prelude::*;
use aleph_tools::{LogLevel, ToolLogLayer};
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
