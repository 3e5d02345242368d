//! Tools that run as MCP tasks (`io.modelcontextprotocol/tasks`), driven by hand by a
//! 2026-07-28 client over a pipe: started, polled, asked, answered, cancelled, expired, and
//! the mistakes a client can make on the way. (The official SDKs' clients run tasks in
//! `mcp_serve`.)

use std::time::Duration;

use aleph_tools::Elicitation;
use aleph_tools::mcp::{McpServer, McpTasks};
use aleph_tools::prelude::*;
use aleph_tools_tests::RawMcp;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

/// Adds two numbers, as a task.
#[tool(register = false, task)]
fn slow_add(a: i64, b: i64) -> i64 {
    a + b
}

/// Adds two numbers at once.
#[tool(register = false)]
fn quick_add(a: i64, b: i64) -> i64 {
    a + b
}

/// Reports that it is halfway, then waits for a minute.
#[tool(register = false, task)]
async fn crawl(progress: Progress) -> &'static str {
    progress.report(1.0, Some(2.0), Some("halfway there"));
    tokio::time::sleep(Duration::from_mins(1)).await;
    "arrived"
}

#[derive(Deserialize, JsonSchema)]
struct Name {
    /// Your name
    name: String,
}

/// Asks for a name, as a task.
#[tool(register = false, task)]
async fn greet(ctx: &ToolContext) -> Result<String, ToolError> {
    Ok(match ctx.elicit::<Name>("Who are you?").await? {
        Elicitation::Accept(Name { name }) => format!("hello {name}"),
        other => other.action().to_owned(),
    })
}

/// Always fails.
#[tool(register = false, task)]
fn broken() -> Result<String, ToolError> {
    Err(ToolError::Execution("the disk is full".into()))
}

fn server() -> McpServer {
    let tools = AlephToolServer::builder()
        .with_tool(SlowAddTool)
        .with_tool(QuickAddTool)
        .with_tool(CrawlTool)
        .with_tool(GreetTool)
        .with_tool(BrokenTool)
        .build()
        .unwrap();
    McpServer::new(&tools).with_tasks(McpTasks::new().with_poll_interval(Duration::from_millis(20)))
}

const TASKS: &str = "io.modelcontextprotocol/tasks";

/// A client that takes tasks and answers questions.
fn client() -> RawMcp {
    RawMcp::start(
        server(),
        json!({ "elicitation": {}, "extensions": { TASKS: {} } }),
    )
}

async fn get(raw: &mut RawMcp, task: &str) -> Value {
    raw.request("tasks/get", json!({ "taskId": task })).await
}

/// Polls `task` until `done` holds for its state, which it returns.
async fn poll_until(raw: &mut RawMcp, task: &str, done: impl Fn(&Value) -> bool) -> Value {
    for _ in 0..500 {
        let state = get(raw, task).await;
        if done(&state) {
            return state;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("task {task} never got there: {}", get(raw, task).await);
}

/// Polls `task` until its status is not `working`.
async fn settle(raw: &mut RawMcp, task: &str) -> Value {
    poll_until(raw, task, |state| state["status"] != "working").await
}

fn task_id(handle: &Value) -> String {
    handle["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("not a task handle: {handle}"))
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_is_started_polled_and_completed_with_the_tools_result() {
    let mut raw = client();
    let handle = raw
        .call("slow_add", json!({ "arguments": { "a": 2, "b": 3 } }))
        .await;
    assert_eq!(handle["resultType"], "task", "{handle}");
    assert_eq!(handle["status"], "working", "{handle}");
    assert_eq!(handle["ttlMs"], 3_600_000, "{handle}");
    assert_eq!(handle["pollIntervalMs"], 20, "{handle}");
    for stamp in ["createdAt", "lastUpdatedAt"] {
        let text = handle[stamp].as_str().unwrap();
        assert!(text.ends_with('Z') && text.contains('T'), "{stamp}: {text}");
    }
    let id = task_id(&handle);

    let done = settle(&mut raw, &id).await;
    assert_eq!(done["resultType"], "complete", "{done}");
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["taskId"], id.as_str());
    // A 2026-07-28 client's output shape: the number as it is.
    assert_eq!(done["result"]["structuredContent"], 5, "{done}");
    assert_eq!(done["result"]["content"][0]["text"], "5", "{done}");

    // Cancelling a finished task changes nothing.
    let ack = raw.request("tasks/cancel", json!({ "taskId": id })).await;
    assert_eq!(ack, json!({ "resultType": "complete" }));
    assert_eq!(get(&mut raw, &id).await["status"], "completed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_run_at_once_for_clients_without_the_extension_and_for_other_tools() {
    let mut without = RawMcp::start(server(), json!({}));
    let result = without
        .call("slow_add", json!({ "arguments": { "a": 1, "b": 1 } }))
        .await;
    assert_eq!(result["structuredContent"], 2, "{result}");
    assert!(result.get("taskId").is_none(), "{result}");
    // Nor may such a client poll.
    let refused = get(&mut without, "anything").await;
    assert_eq!(refused["code"], -32021, "{refused}");

    let mut with = client();
    let result = with
        .call("quick_add", json!({ "arguments": { "a": 1, "b": 2 } }))
        .await;
    assert_eq!(result["structuredContent"], 3, "{result}");
    assert!(result.get("taskId").is_none(), "{result}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_is_the_status_message_and_cancel_stops_the_tool() {
    let mut raw = client();
    let id = task_id(&raw.call("crawl", json!({})).await);
    let state = poll_until(&mut raw, &id, |state| {
        state["statusMessage"] == "halfway there"
    })
    .await;
    assert_eq!(state["status"], "working", "{state}");
    assert_eq!(state["statusMessage"], "halfway there", "{state}");

    let ack = raw.request("tasks/cancel", json!({ "taskId": id })).await;
    assert_eq!(ack["resultType"], "complete", "{ack}");
    let ended = settle(&mut raw, &id).await;
    assert_eq!(ended["status"], "cancelled", "{ended}");
    assert!(ended.get("result").is_none(), "{ended}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tasks_question_is_answered_with_tasks_update() {
    let mut raw = client();
    let id = task_id(&raw.call("greet", json!({})).await);
    let asked = settle(&mut raw, &id).await;
    assert_eq!(asked["status"], "input_required", "{asked}");
    let ask = &asked["inputRequests"]["elicitation-1"];
    assert_eq!(ask["method"], "elicitation/create", "{asked}");
    assert_eq!(ask["params"]["message"], "Who are you?");

    // Answers to questions not asked are ignored; the question stays open.
    let ack = raw
        .request(
            "tasks/update",
            json!({ "taskId": id, "inputResponses": { "elicitation-9": { "action": "decline" } } }),
        )
        .await;
    assert_eq!(ack["resultType"], "complete", "{ack}");
    tokio::time::sleep(Duration::from_millis(50)).await;
    let still = get(&mut raw, &id).await;
    assert_eq!(still["status"], "input_required", "{still}");
    assert!(
        still["inputRequests"]["elicitation-1"].is_object(),
        "{still}"
    );

    let answer = json!({ "action": "accept", "content": { "name": "Ada" } });
    raw.request(
        "tasks/update",
        json!({ "taskId": id, "inputResponses": { "elicitation-1": answer } }),
    )
    .await;
    let done = poll_until(&mut raw, &id, |state| state["status"] == "completed").await;
    assert_eq!(done["result"]["structuredContent"], "hello Ada", "{done}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_a_task_that_waits_for_an_answer_ends_it() {
    let mut raw = client();
    let id = task_id(&raw.call("greet", json!({})).await);
    assert_eq!(settle(&mut raw, &id).await["status"], "input_required");
    raw.request("tasks/cancel", json!({ "taskId": id })).await;
    let ended = poll_until(&mut raw, &id, |state| {
        state["status"] != "input_required" && state["status"] != "working"
    })
    .await;
    assert_eq!(ended["status"], "cancelled", "{ended}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_tool_completes_its_task_with_an_error_result() {
    let mut raw = client();
    let id = task_id(&raw.call("broken", json!({})).await);
    let done = settle(&mut raw, &id).await;
    // The tool's failure is a result (`isError`), not a failed task: `failed` is for
    // protocol errors.
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["result"]["isError"], true, "{done}");
    assert!(
        done["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("the disk is full"),
        "{done}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_tasks_and_bad_params_are_invalid_params() {
    let mut raw = client();
    for method in ["tasks/get", "tasks/cancel"] {
        let unknown = raw.request(method, json!({ "taskId": "nope" })).await;
        assert_eq!(unknown["code"], -32602, "{method}: {unknown}");
        assert!(
            unknown["message"]
                .as_str()
                .unwrap()
                .contains("no task `nope`"),
            "{unknown}"
        );
    }
    let unknown = raw
        .request(
            "tasks/update",
            json!({ "taskId": "nope", "inputResponses": {} }),
        )
        .await;
    assert_eq!(unknown["code"], -32602, "{unknown}");
    // Params that do not parse are refused by the protocol layer before they reach tasks.
    let missing = raw.request("tasks/get", json!({})).await;
    assert!(missing["code"].is_i64(), "{missing}");
    let wrong = raw.request("tasks/get", json!({ "taskId": 7 })).await;
    assert!(wrong["code"].is_i64(), "{wrong}");
    // The server serves on.
    let id = task_id(
        &raw.call("slow_add", json!({ "arguments": { "a": 4, "b": 4 } }))
            .await,
    );
    assert_eq!(
        settle(&mut raw, &id).await["result"]["structuredContent"],
        8
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_expire_after_their_ttl_and_their_number_is_bounded() {
    let server = server().with_tasks(
        McpTasks::new()
            .with_ttl(Duration::from_millis(300))
            .with_most_tasks(1),
    );
    let mut raw = RawMcp::start(server, json!({ "extensions": { TASKS: {} } }));
    let first = task_id(&raw.call("crawl", json!({})).await);
    assert_eq!(get(&mut raw, &first).await["ttlMs"], 300);

    // One task is all the server keeps: the next call is refused, and says why.
    let refused = raw.call("crawl", json!({})).await;
    assert_eq!(refused["code"], -32603, "{refused}");
    assert!(
        refused["message"]
            .as_str()
            .unwrap()
            .contains("keeps 1 tasks already"),
        "{refused}"
    );

    // After its TTL the task is gone, and room is made.
    tokio::time::sleep(Duration::from_millis(400)).await;
    let gone = get(&mut raw, &first).await;
    assert_eq!(gone["code"], -32602, "{gone}");
    assert!(
        gone["message"].as_str().unwrap().contains("expired"),
        "{gone}"
    );
    let second = raw
        .call("slow_add", json!({ "arguments": { "a": 1, "b": 2 } }))
        .await;
    assert_eq!(second["resultType"], "task", "{second}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_declares_the_extension_and_marked_tools_say_so_in_their_definition() {
    let mut raw = client();
    let discovered = raw.request("server/discover", json!({})).await;
    assert!(
        discovered["capabilities"]["extensions"][TASKS].is_object(),
        "{discovered}"
    );
    let tools = AlephToolServer::builder()
        .with_tool(SlowAddTool)
        .with_tool(QuickAddTool)
        .build()
        .unwrap();
    assert!(tools.tools().get("slow_add").unwrap().task);
    assert!(!tools.tools().get("quick_add").unwrap().task);
    assert_eq!(
        serde_json::to_value(&*tools.tools().get("slow_add").unwrap()).unwrap()["task"],
        true
    );
}
