//! A long-running tool served as an MCP task: the client gets a handle at once, polls it
//! (the tool's progress is the task's status message) until the result is in, and cancels
//! a second one halfway.
//!
//! Run with `cargo run -p guide-examples --bin mcp_tasks`.

use std::time::Duration;

use aleph_tools::mcp::rmcp::ServiceExt;
use aleph_tools::mcp::rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, ClientCapabilities, ClientConfig,
    GetTaskParams, GetTaskResult, Implementation, TaskPayload,
};
use aleph_tools::mcp::rmcp::service::{RoleClient, RunningService};
use aleph_tools::mcp::{McpServer, McpTasks};
use aleph_tools::prelude::*;
use serde_json::json;

type Error = Box<dyn std::error::Error>;

/// Re-indexes a repository, a file every 20 ms.
#[tool(register = false, task)]
async fn reindex(
    /// How many files the repository holds
    files: u32,
    progress: Progress,
) -> String {
    for done in 1..=files {
        tokio::time::sleep(Duration::from_millis(20)).await;
        progress.report(
            f64::from(done),
            Some(f64::from(files)),
            Some(&format!("{done} of {files} files")),
        );
    }
    format!("reindexed {files} files")
}

/// Starts `reindex` over `files` files; returns the task's id.
async fn start(
    client: &RunningService<RoleClient, ClientConfig>,
    files: u32,
) -> Result<String, Error> {
    let arguments = json!({ "files": files })
        .as_object()
        .cloned()
        .unwrap_or_default();
    let call = CallToolRequestParams::new("reindex").with_arguments(arguments);
    match client.call_tool_once(call).await? {
        CallToolResponse::Task(handle) => {
            println!(
                "started task {}: {:?}, poll every {} ms",
                handle.task.task_id,
                handle.task.status,
                handle.task.poll_interval_ms.unwrap_or_default()
            );
            Ok(handle.task.task_id)
        }
        other => Err(format!("expected a task handle, got {other:?}").into()),
    }
}

/// Polls the task `id` until `done` says so.
async fn poll(
    client: &RunningService<RoleClient, ClientConfig>,
    id: &str,
    done: impl Fn(&GetTaskResult) -> bool,
) -> Result<GetTaskResult, Error> {
    loop {
        let state = client.get_task(GetTaskParams::new(id)).await?;
        println!(
            "  {:?}: {}",
            state.task.status(),
            state.task.task.status_message.as_deref().unwrap_or("-")
        );
        if done(&state) {
            return Ok(state);
        }
        let interval = state.task.task.poll_interval_ms.unwrap_or(100);
        tokio::time::sleep(Duration::from_millis(interval)).await;
    }
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let tools = AlephToolServer::builder().with_tool(ReindexTool).build()?;
    let server = McpServer::new(&tools)
        .with_tasks(McpTasks::new().with_poll_interval(Duration::from_millis(50)));
    let (client_end, server_end) = tokio::io::duplex(64 * 1024);
    let (read, write) = tokio::io::split(server_end);
    tokio::spawn(server.serve(read, write));

    // A client that takes task handles says so with the tasks extension.
    let capabilities = ClientCapabilities::builder().enable_tasks().build();
    let client = ClientConfig::new(capabilities, Implementation::new("guide-client", "1.0.0"))
        .serve(tokio::io::split(client_end))
        .await?;

    let id = start(&client, 10).await?;
    let done = poll(&client, &id, |state| state.task.status().is_terminal()).await?;
    let TaskPayload::Completed { result } = &done.task.payload else {
        return Err(format!("the task ended as {:?}", done.task.status()).into());
    };
    println!("result: {}", result["content"][0]["text"]);
    assert_eq!(result["content"][0]["text"], "reindexed 10 files");

    let id = start(&client, 1000).await?;
    poll(&client, &id, |state| {
        state.task.task.status_message.is_some()
    })
    .await?;
    client.cancel_task(CancelTaskParams::new(&id)).await?;
    println!("cancelled {id}");
    let ended = poll(&client, &id, |state| state.task.status().is_terminal()).await?;
    assert!(matches!(ended.task.payload, TaskPayload::Cancelled));

    client.cancel().await?;
    Ok(())
}
