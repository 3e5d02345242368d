//! Two servers sharing Redis, as replicas behind a load balancer without sticky sessions
//! share it: a session opened on one is served by the other (for its owner only); a task
//! started through one is polled, answered and cancelled through the other; a task whose
//! process stopped is reported failed; the limit counts both. Each test runs a real
//! `redis-server` of its own.

use std::time::Duration;

use aleph_tools::Elicitation;
use aleph_tools::mcp::{
    McpAuth, McpServer, McpTasks, RedisStore, StaticTokens, TaskRecord, TaskStore,
};
use aleph_tools::prelude::*;
use aleph_tools_tests::mcp_http::{
    bearer_client, open_session, open_session_with, post_in_session, request_in_session,
};
use aleph_tools_tests::redis::RedisServer;
use aleph_tools_tests::{RawMcp, http_answer};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

/// Adds two numbers, as a task.
#[tool(register = false, task)]
fn shared_add(a: i64, b: i64) -> i64 {
    a + b
}

/// Reports that it is halfway, then waits for a minute.
#[tool(register = false, task)]
async fn long_walk(progress: Progress) -> &'static str {
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
async fn ask_name(ctx: &ToolContext) -> Result<String, ToolError> {
    Ok(match ctx.elicit::<Name>("Who are you?").await? {
        Elicitation::Accept(Name { name }) => format!("hello {name}"),
        other => other.action().to_owned(),
    })
}

const TASKS: &str = "io.modelcontextprotocol/tasks";

/// A replica: its own tools and server, tasks kept in `store`.
fn replica(store: &RedisStore, tasks: McpTasks) -> RawMcp {
    let tools = AlephToolServer::builder()
        .with_tool(SharedAddTool)
        .with_tool(LongWalkTool)
        .with_tool(AskNameTool)
        .build()
        .unwrap();
    let server = McpServer::new(&tools).with_tasks(
        tasks
            .with_poll_interval(Duration::from_millis(20))
            .with_store(store.clone()),
    );
    RawMcp::start(
        server,
        json!({ "elicitation": {}, "extensions": { TASKS: {} } }),
    )
}

async fn store_of(redis: &RedisServer) -> RedisStore {
    RedisStore::connect(&redis.url())
        .await
        .unwrap()
        .with_prefix(format!("test-{}:", uuid_like()))
}

/// A prefix of this test's own, so tests sharing a server never see each other's tasks.
fn uuid_like() -> String {
    format!(
        "{:x}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    )
}

async fn poll_until(raw: &mut RawMcp, task: &str, done: impl Fn(&Value) -> bool) -> Value {
    for _ in 0..500 {
        let state = raw.request("tasks/get", json!({ "taskId": task })).await;
        if done(&state) {
            return state;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let last = raw.request("tasks/get", json!({ "taskId": task })).await;
    panic!("task {task} never got there: {last}");
}

fn task_id(handle: &Value) -> String {
    handle["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("not a task handle: {handle}"))
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_started_on_one_replica_is_polled_answered_and_cancelled_on_another() {
    let redis = RedisServer::start();
    let store = store_of(&redis).await;
    let mut a = replica(&store, McpTasks::new());
    let mut b = replica(&store, McpTasks::new());

    // Polled on the other replica to its result.
    let id = task_id(
        &a.call("shared_add", json!({ "arguments": { "a": 2, "b": 3 } }))
            .await,
    );
    let done = poll_until(&mut b, &id, |state| state["status"] == "completed").await;
    assert_eq!(done["result"]["structuredContent"], 5, "{done}");

    // Its question answered on the other replica.
    let id = task_id(&a.call("ask_name", json!({})).await);
    let asked = poll_until(&mut b, &id, |state| state["status"] == "input_required").await;
    assert_eq!(
        asked["inputRequests"]["elicitation-1"]["params"]["message"], "Who are you?",
        "{asked}"
    );
    let answer = json!({ "action": "accept", "content": { "name": "Ada" } });
    let ack = b
        .request(
            "tasks/update",
            json!({ "taskId": id, "inputResponses": { "elicitation-1": answer } }),
        )
        .await;
    assert_eq!(ack["resultType"], "complete", "{ack}");
    let done = poll_until(&mut b, &id, |state| state["status"] == "completed").await;
    assert_eq!(done["result"]["structuredContent"], "hello Ada", "{done}");

    // Its progress seen, and cancelled, on the other replica; the tool stops where it runs.
    let id = task_id(&a.call("long_walk", json!({})).await);
    poll_until(&mut b, &id, |state| {
        state["statusMessage"] == "halfway there"
    })
    .await;
    let ack = b.request("tasks/cancel", json!({ "taskId": id })).await;
    assert_eq!(ack["resultType"], "complete", "{ack}");
    let ended = poll_until(&mut a, &id, |state| state["status"] != "working").await;
    assert_eq!(ended["status"], "cancelled", "{ended}");
    let seen = poll_until(&mut b, &id, |state| state["status"] != "working").await;
    assert_eq!(seen["status"], "cancelled", "{seen}");

    // A task no replica started is unknown to both; so are ids no server makes, which
    // would name other keys (another task's input list) or be huge.
    let hostile = [
        "no-such-task".to_owned(),
        format!("{id}:input"),
        format!("{id}\r\nDEL *"),
        "x".repeat(100_000),
    ];
    for raw in [&mut a, &mut b] {
        for task in &hostile {
            let unknown = raw.request("tasks/get", json!({ "taskId": task })).await;
            assert_eq!(unknown["code"], -32602, "{unknown}");
            assert!(
                unknown["message"]
                    .as_str()
                    .is_some_and(|m| m.contains("no task")),
                "{unknown}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_whose_process_stopped_is_reported_failed_and_the_limit_counts_every_replica() {
    let redis = RedisServer::start();
    let store = store_of(&redis).await;
    // What a process that stopped mid-task leaves behind: a working task whose lease ran out.
    let mut orphan = TaskRecord::new(
        "orphaned-task",
        json!({
            "taskId": "orphaned-task",
            "status": "working",
            "createdAt": "1970-01-01T00:00:00.001Z",
            "lastUpdatedAt": "1970-01-01T00:00:00.001Z",
        }),
    );
    orphan.created_ms = 1;
    orphan.updated_ms = 1;
    orphan.lease_until_ms = 2;
    store
        .create(&orphan, Duration::from_mins(1), 100)
        .await
        .unwrap();
    let mut b = replica(&store, McpTasks::new().with_most_tasks(2));
    let state = b
        .request("tasks/get", json!({ "taskId": "orphaned-task" }))
        .await;
    assert_eq!(state["status"], "failed", "{state}");
    assert!(
        state["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("stopped before the task ended")),
        "{state}"
    );
    // The failure is written: should the process come back, its state is refused, and it
    // stops the tool.
    orphan.lease_until_ms = u64::MAX;
    assert!(!store.save(&orphan).await.unwrap());
    let again = b
        .request("tasks/get", json!({ "taskId": "orphaned-task" }))
        .await;
    assert_eq!(again["status"], "failed", "{again}");

    // The orphan and one task on `a` make two: the limit, across replicas.
    let mut a = replica(&store, McpTasks::new().with_most_tasks(2));
    let first = a.call("long_walk", json!({})).await;
    assert_eq!(first["resultType"], "task", "{first}");
    let refused = b.call("long_walk", json!({})).await;
    assert_eq!(refused["code"], -32603, "{refused}");
    assert!(
        refused["message"]
            .as_str()
            .is_some_and(|m| m.contains("keeps 2 tasks already")),
        "{refused}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_store_refuses_when_redis_is_gone_and_the_server_keeps_serving() {
    let redis = RedisServer::start();
    let store = store_of(&redis).await;
    let mut a = replica(&store, McpTasks::new());
    drop(redis);
    let refused = a.call("long_walk", json!({})).await;
    assert_eq!(refused["code"], -32603, "{refused}");
    assert!(
        refused["message"]
            .as_str()
            .is_some_and(|m| m.contains("task store cannot be reached")),
        "{refused}"
    );
    // Other calls are answered as ever.
    let listed = a.request("tools/list", json!({})).await;
    assert_eq!(
        listed["tools"].as_array().map(Vec::len),
        Some(3),
        "{listed}"
    );
}

/// A replica over HTTP: sessions and tasks in `store`, tokens for `ann` and `bob`.
async fn http_replica(store: &RedisStore) -> (aleph_tools::mcp::McpHttpServer, String) {
    let tools = AlephToolServer::builder()
        .with_tool(SharedAddTool)
        .with_tool(LongWalkTool)
        .build()
        .unwrap();
    let tokens = StaticTokens::new()
        .with_token("ann-token", Identity::new("ann"))
        .with_token("bob-token", Identity::new("bob"));
    let http = McpServer::new(&tools)
        .with_auth(McpAuth::new(tokens))
        .with_session_store(store.clone())
        .with_tasks(McpTasks::new().with_store(store.clone()))
        .serve_http("127.0.0.1:0")
        .await
        .unwrap();
    let url = http.url().clone();
    (http, url)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_opened_on_one_replica_is_served_by_another_for_its_owner_only() {
    let redis = RedisServer::start();
    let store = store_of(&redis).await;
    let (_a, url_a) = http_replica(&store).await;
    let (_b, url_b) = http_replica(&store).await;
    let ann = bearer_client("ann-token");
    let session = open_session(&ann, &url_a).await;

    // The handshake is shared before the client hears the session's id: its very next
    // request, on the other replica, wakes it there.
    let call = json!({
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": { "name": "shared_add", "arguments": { "a": 20, "b": 22 } }
    });
    let response = post_in_session(&ann, &url_b, &session, &call).await;
    assert_eq!(response.status(), 200);
    let answer = http_answer(response).await;
    assert_eq!(
        answer["result"]["structuredContent"]["result"], 42,
        "{answer}"
    );
    // Both replicas go on serving it.
    let list = json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/list" });
    for url in [&url_a, &url_b] {
        let response = post_in_session(&ann, url, &session, &list).await;
        assert_eq!(response.status(), 200);
        let listed = http_answer(response).await;
        assert_eq!(listed["result"]["tools"].as_array().map(Vec::len), Some(2));
    }

    // Another identity's token does not wake it, on either replica.
    let bob = bearer_client("bob-token");
    let session_b = open_session(&bob, &url_b).await;
    let (_c, url_c) = http_replica(&store).await;
    for url in [&url_a, &url_c] {
        let response = post_in_session(&bob, url, &session, &list).await;
        assert!(
            response.status() == 403 || response.status() == 404,
            "{}",
            response.status()
        );
    }
    // A session nobody opened is unknown everywhere.
    let response = post_in_session(&ann, &url_c, "no-such-session", &list).await;
    assert_eq!(response.status(), 404);
    // Bob's own session is served by the third replica.
    let response = post_in_session(&bob, &url_c, &session_b, &list).await;
    assert_eq!(response.status(), 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_identity_finds_no_task_and_ends_no_session_on_any_replica() {
    let redis = RedisServer::start();
    let store = store_of(&redis).await;
    let (_a, url_a) = http_replica(&store).await;
    let (_b, url_b) = http_replica(&store).await;
    let tasks = json!({ "extensions": { "io.modelcontextprotocol/tasks": {} } });
    let ann = bearer_client("ann-token");
    let bob = bearer_client("bob-token");
    let ann_session = open_session_with(&ann, &url_a, &tasks).await;
    let bob_session = open_session_with(&bob, &url_b, &tasks).await;
    let started = request_in_session(
        &ann,
        &url_a,
        &ann_session,
        "tools/call",
        json!({ "name": "long_walk", "arguments": {} }),
    )
    .await;
    let task = started["result"]["taskId"].as_str().unwrap().to_owned();

    // Bob, on the other replica: the task is unknown to him, whatever he asks.
    for (method, params) in [
        ("tasks/get", json!({ "taskId": task })),
        ("tasks/cancel", json!({ "taskId": task })),
        (
            "tasks/update",
            json!({ "taskId": task, "inputResponses": {} }),
        ),
    ] {
        let answer = request_in_session(&bob, &url_b, &bob_session, method, params).await;
        assert_eq!(answer["error"]["code"], -32602, "{method}: {answer}");
    }
    // Ann, there, sees it working: Bob's cancel did nothing.
    let seen = request_in_session(
        &ann,
        &url_b,
        &ann_session,
        "tasks/get",
        json!({ "taskId": task }),
    )
    .await;
    assert_eq!(seen["result"]["status"], "working", "{seen}");

    // Bob's DELETE of Ann's session ends nothing; Ann's own ends it for every replica.
    let delete = |http: &reqwest::Client, url: &str| {
        http.delete(url)
            .header("mcp-session-id", &ann_session)
            .header("mcp-protocol-version", "2025-11-25")
            .send()
    };
    let _ = delete(&bob, &url_b).await.unwrap();
    let (_c, url_c) = http_replica(&store).await;
    let list = json!({ "jsonrpc": "2.0", "id": 3, "method": "tools/list" });
    let still = post_in_session(&ann, &url_c, &ann_session, &list).await;
    assert_eq!(still.status(), 200, "Bob's DELETE ended Ann's session");
    let ended = delete(&ann, &url_a).await.unwrap();
    assert!(ended.status().is_success(), "{}", ended.status());
    let (_d, url_d) = http_replica(&store).await;
    let gone = post_in_session(&ann, &url_d, &ann_session, &list).await;
    assert_eq!(gone.status(), 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_task_renews_its_lease_and_stays_working_past_it() {
    let redis = RedisServer::start();
    let store = store_of(&redis).await;
    let mut a = replica(&store, McpTasks::new());
    let mut b = replica(&store, McpTasks::new());
    let id = task_id(&a.call("long_walk", json!({})).await);
    // Longer than the lease (10 s): only its renewals keep the task from being failed.
    tokio::time::sleep(Duration::from_secs(12)).await;
    let state = b.request("tasks/get", json!({ "taskId": id })).await;
    assert_eq!(state["status"], "working", "{state}");
    let record = store.load(&id).await.unwrap().unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis();
    assert!(u128::from(record.lease_until_ms) > now, "{record:?}");
    b.request("tasks/cancel", json!({ "taskId": id })).await;
    let ended = poll_until(&mut a, &id, |state| state["status"] != "working").await;
    assert_eq!(ended["status"], "cancelled", "{ended}");
}
