//! Two replicas of one MCP server sharing Redis, as replicas behind a load balancer share
//! it: a client of the first starts a task, and a client of the second follows it to its
//! result; then a second task is cancelled through the second replica.
//!
//! Uses the Redis that `REDIS_URL` names, or starts `redis-server` (Debian's package
//! `redis-server`) on a free loopback port for the run.
//!
//! Run with `cargo run -p guide-examples --bin replicas`.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use aleph_tools::mcp::rmcp::ServiceExt;
use aleph_tools::mcp::rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, ClientCapabilities, ClientConfig,
    GetTaskParams, Implementation, TaskPayload,
};
use aleph_tools::mcp::rmcp::service::{RoleClient, RunningService};
use aleph_tools::mcp::rmcp::transport::StreamableHttpClientTransport;
use aleph_tools::mcp::{McpHttpServer, McpServer, McpTasks, RedisStore};
use aleph_tools::prelude::*;
use serde_json::json;

type Error = Box<dyn std::error::Error>;
type Client = RunningService<RoleClient, ClientConfig>;

/// Packs a release, a step every 50 ms.
#[tool(register = false, task)]
async fn pack_release(
    /// How many steps the packing takes
    steps: u32,
    progress: Progress,
) -> String {
    for step in 1..=steps {
        tokio::time::sleep(Duration::from_millis(50)).await;
        progress.report(f64::from(step), Some(f64::from(steps)), None);
    }
    format!("packed in {steps} steps")
}

/// A throwaway `redis-server`, stopped when dropped.
struct LocalRedis(Child);

impl Drop for LocalRedis {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The Redis to use: `REDIS_URL`, or a `redis-server` started here.
fn redis() -> Result<(String, Option<LocalRedis>), Error> {
    if let Ok(url) = std::env::var("REDIS_URL") {
        return Ok((url, None));
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let child = Command::new("redis-server")
        .args(["--bind", "127.0.0.1", "--port", &port.to_string()])
        .args(["--save", "", "--appendonly", "no"])
        .stdout(Stdio::null())
        .spawn()
        .map_err(|e| format!("set REDIS_URL, or install redis-server: {e}"))?;
    let local = LocalRedis(child);
    for _ in 0..200 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return Ok((format!("redis://127.0.0.1:{port}/"), Some(local)));
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    Err("redis-server did not start".into())
}

/// A replica: the tools, sessions and tasks shared through `store`.
async fn replica(tools: &AlephToolServer, store: &RedisStore) -> Result<McpHttpServer, Error> {
    let tasks = McpTasks::new()
        .with_poll_interval(Duration::from_millis(50))
        .with_store(store.clone());
    Ok(McpServer::new(tools)
        .with_session_store(store.clone())
        .with_tasks(tasks)
        .serve_http("127.0.0.1:0")
        .await?)
}

/// A client of the replica at `url`, taking task handles.
async fn client(url: &str) -> Result<Client, Error> {
    let capabilities = ClientCapabilities::builder().enable_tasks().build();
    let transport = StreamableHttpClientTransport::from_uri(url);
    Ok(
        ClientConfig::new(capabilities, Implementation::new("guide-client", "1.0.0"))
            .serve(transport)
            .await?,
    )
}

async fn start(client: &Client, steps: u32) -> Result<String, Error> {
    let arguments = json!({ "steps": steps })
        .as_object()
        .cloned()
        .unwrap_or_default();
    let call = CallToolRequestParams::new("pack_release").with_arguments(arguments);
    match client.call_tool_once(call).await? {
        CallToolResponse::Task(handle) => Ok(handle.task.task_id),
        other => Err(format!("expected a task handle, got {other:?}").into()),
    }
}

/// Polls task `id` through `client` until it ends; how it ended.
async fn follow(client: &Client, id: &str) -> Result<TaskPayload, Error> {
    loop {
        let state = client.get_task(GetTaskParams::new(id)).await?;
        if state.task.status().is_terminal() {
            return Ok(state.task.payload);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let (url, _local) = redis()?;
    let store = RedisStore::connect(&url).await?;
    let tools = AlephToolServer::builder()
        .with_tool(PackReleaseTool)
        .build()?;
    let first = replica(&tools, &store).await?;
    let second = replica(&tools, &store).await?;
    println!("replicas at {} and {}", first.url(), second.url());
    let on_first = client(&first.url()).await?;
    let on_second = client(&second.url()).await?;

    let id = start(&on_first, 10).await?;
    println!("started task {id} on the first replica");
    let TaskPayload::Completed { result } = follow(&on_second, &id).await? else {
        return Err("the task did not complete".into());
    };
    println!(
        "the second replica reports its result: {}",
        result["content"][0]["text"]
    );
    assert_eq!(result["content"][0]["text"], "packed in 10 steps");

    let id = start(&on_first, 1000).await?;
    on_second.cancel_task(CancelTaskParams::new(&id)).await?;
    let ended = follow(&on_first, &id).await?;
    println!("cancelled through the second replica: {ended:?}");
    assert!(matches!(ended, TaskPayload::Cancelled));

    on_first.cancel().await?;
    on_second.cancel().await?;
    first.shutdown().await?;
    second.shutdown().await?;
    Ok(())
}
