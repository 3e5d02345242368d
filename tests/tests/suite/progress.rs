//! Progress callbacks: `Listen` layers, given to the builder or added to a running server.

use std::sync::{Arc, Mutex};

use aleph_tools::middleware::{Layer, Listen, Priority, ToolProgressHandler};
use aleph_tools::prelude::*;
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
        .with_middleware(Listen::new(Arc::clone(&server_log)))
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

    // A second listener added to the running server hears calls too, and the context's own
    // listener still gets its events.
    let added = server.add_layer(Layer::new(
        Priority::Normal,
        Listen::new(Arc::clone(&global_log)),
    ));
    let own = Arc::new(Mutex::new(0));
    let seen = Arc::clone(&own);
    let ctx = ToolContext::new().with_progress(move |_, _| *seen.lock().unwrap() += 1);
    server.call("count", json!({ "to": 1 })).context(ctx).await;
    assert_eq!(*own.lock().unwrap(), 2, "one progress report and one chunk");
    assert_eq!(server_log.take().len(), 4);
    let global = global_log.take();
    assert_eq!(global.first().unwrap(), r#"start count {"to":1}"#);
    assert_eq!(global.last().unwrap(), "result count true 1");

    // Failures are reported with the model's message, refused arguments too; unknown tools
    // are not calls.
    server.call("broken", json!({})).await;
    assert_eq!(
        server_log.take(),
        ["start broken {}", "result broken false it broke"]
    );
    server.call("count", json!({ "to": "two" })).await;
    let refused = server_log.take();
    assert_eq!(refused[0], r#"start count {"to":"two"}"#);
    assert!(
        refused[1].starts_with("result count false invalid arguments"),
        "{refused:?}"
    );
    server.call("nope", json!({})).await;
    assert!(server_log.take().is_empty());

    // Long arguments are summarized.
    server
        .call("count", json!({ "to": 0, "padding": "x".repeat(10_000) }))
        .await;
    let start = &global_log.take()[0];
    assert!(start.chars().count() < 260, "{start}");

    server_log.take();
    assert!(server.remove_layer(added));
    server.call("count", json!({ "to": 1 })).await;
    assert!(global_log.take().is_empty(), "removed");
    assert_eq!(server_log.take().len(), 4);
}
