//! Progress callbacks, per server and process-wide. One test in its own binary: the
//! process-wide handler hears every call in the process.

use std::sync::{Arc, Mutex};

use aleph_tools::prelude::*;
use aleph_tools::{ToolProgressHandler, set_tool_progress_handler};
use serde_json::json;

#[derive(Default)]
struct Recorder(Mutex<Vec<String>>);

impl Recorder {
    fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}

impl ToolProgressHandler for Recorder {
    fn on_tool_start(&self, tool_name: &str, args_summary: &str) {
        self.0
            .lock()
            .unwrap()
            .push(format!("start {tool_name} {args_summary}"));
    }
    fn on_tool_result(&self, tool_name: &str, result_summary: &str, success: bool) {
        self.0
            .lock()
            .unwrap()
            .push(format!("result {tool_name} {success} {result_summary}"));
    }
    fn on_tool_streaming_chunk(&self, tool_name: &str, chunk: &str) {
        self.0
            .lock()
            .unwrap()
            .push(format!("chunk {tool_name} {chunk}"));
    }
    fn on_tool_progress(
        &self,
        tool_name: &str,
        progress: f64,
        total: Option<f64>,
        message: Option<&str>,
    ) {
        self.0.lock().unwrap().push(format!(
            "progress {tool_name} {progress}/{total:?} {message:?}"
        ));
    }
}

/// Stream a count.
#[tool(register = false)]
async fn count(to: u32, progress: Progress) -> u32 {
    for i in 1..=to {
        progress.report(f64::from(i), Some(f64::from(to)), None);
        progress.chunk(i.to_string());
        tokio::task::yield_now().await;
    }
    to
}

/// Fail.
#[tool(register = false)]
fn broken() -> Result<(), String> {
    Err("it broke".into())
}

#[tokio::test]
async fn callbacks_hear_start_chunks_progress_and_result() {
    let server_log = Arc::new(Recorder::default());
    let global_log = Arc::new(Recorder::default());
    let server = AlephToolServer::builder()
        .with_tool(CountTool)
        .with_tool(BrokenTool)
        .with_progress_handler(Arc::clone(&server_log))
        .build()
        .unwrap();

    // The server's handler alone.
    assert_eq!(
        server.call("count", json!({ "to": 2 })).await.output,
        json!(2)
    );
    assert_eq!(
        server_log.take(),
        [
            r#"start count {"to":2}"#,
            "progress count 1/Some(2.0) None",
            "chunk count 1",
            "progress count 2/Some(2.0) None",
            "chunk count 2",
            "result count true 2",
        ]
    );

    // The process-wide handler too, and the context's own listener still gets its events.
    set_tool_progress_handler(Some(global_log.clone()));
    let own = Arc::new(Mutex::new(0));
    let seen = Arc::clone(&own);
    let ctx = ToolContext::new().with_progress(move |_, _| *seen.lock().unwrap() += 1);
    server.call("count", json!({ "to": 1 })).context(ctx).await;
    assert_eq!(*own.lock().unwrap(), 2, "one progress report and one chunk");
    assert_eq!(server_log.take().len(), 4);
    let global = global_log.take();
    assert_eq!(global.first().unwrap(), r#"start count {"to":1}"#);
    assert_eq!(global.last().unwrap(), "result count true 1");

    // Failures are reported with the model's message; unknown tools are not calls.
    server.call("broken", json!({})).await;
    assert_eq!(
        server_log.take(),
        ["start broken {}", "result broken false it broke"]
    );
    server.call("nope", json!({})).await;
    assert!(server_log.take().is_empty());

    // Long arguments are summarized.
    server
        .call("count", json!({ "to": 0, "padding": "x".repeat(10_000) }))
        .await;
    let start = &global_log.take()[0];
    assert!(start.chars().count() < 260, "{start}");

    set_tool_progress_handler(None);
    server.call("count", json!({ "to": 1 })).await;
    assert!(global_log.take().is_empty(), "cleared");
}
