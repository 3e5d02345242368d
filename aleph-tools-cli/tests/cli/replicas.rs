//! Three `aleph-tools serve --http` replicas sharing Redis, behind haproxy sending each
//! request to the next replica (round robin, no stickiness), as a deployment runs them:
//! driven with the official Python and TypeScript clients through the balancer; a broken
//! stream resumed on another replica; then one replica killed in the middle of a task and of
//! a call, which are reported failed through the others.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use aleph_tools_tests::mcp_http::{
    bearer_client, open_session_with, post_in_session, request_in_session, try_request_in_session,
};
use aleph_tools_tests::redis::RedisServer;
use aleph_tools_tests::replicas::{Haproxy, Replica};
use aleph_tools_tests::sse::{Event, answer, events, events_until, last_id, progress, resume};
use aleph_tools_tests::{assert_client_passed, interop_peers, node_plugin};
use serde_json::{Value, json};

const ANN: &str = "ann-5c1d";
const BOB: &str = "bob-93e0";
const TASKS: &str = "io.modelcontextprotocol/tasks";

const MANIFEST: &str = r#"
[plugin]
id = "desk"
version = "1.0.0"
kind = "nodejs"
entry = "index.js"

[[tools]]
name = "echo"
description = "Says the text back."
handler = "echo"
input_schema = { type = "object", properties = { text = { type = "string" } }, required = ["text"] }

[[tools]]
name = "wait"
description = "Waits a minute, as a task."
handler = "wait"
task = true

[[tools]]
name = "count"
description = "Counts to `steps`, one step every 100 ms, reporting each."
handler = "count"
input_schema = { type = "object", properties = { steps = { type = "integer" } }, required = ["steps"] }
"#;

const SOURCE: &str = r#"
require("@aleph/plugin-sdk").createServer({
  name: "desk",
  tools: {
    echo: ({ text }) => `echo: ${text}`,
    wait: () => new Promise((done) => setTimeout(() => done("waited"), 60000)),
    count: async ({ steps }, { progress }) => {
      for (let step = 1; step <= steps; step++) {
        await new Promise((done) => setTimeout(done, 100));
        progress(step, steps);
      }
      return `counted to ${steps}`;
    },
  },
}).start();
"#;

fn config(root: &Path, redis: &RedisServer) -> PathBuf {
    let plugins = root.join("plugins");
    node_plugin(&plugins, "desk", MANIFEST, SOURCE);
    let file = root.join("aleph-tools.toml");
    std::fs::write(
        &file,
        format!(
            "[plugins]\nsearch_paths = [\"plugins\"]\n\n[server]\nredis_url = \"{}\"\n\n[[server.tokens]]\nsubject = \"ann\"\nenv = \"ANN_TOKEN\"\n\n[[server.tokens]]\nsubject = \"bob\"\nenv = \"BOB_TOKEN\"\n",
            redis.url()
        ),
    )
    .expect("the config is written");
    file
}

fn count_call(id: u64, steps: u32) -> Value {
    json!({
        "jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {
            "name": "count", "arguments": { "steps": steps },
            "_meta": { "progressToken": format!("count-{id}") }
        }
    })
}

fn reports_progress(event: &Event) -> bool {
    event
        .message()
        .is_some_and(|message| message["method"] == "notifications/progress")
}

/// A call's stream, broken on the second replica, resumed on the third: every progress
/// report once, then the answer.
async fn a_broken_stream_resumes_on_another_replica(
    ann: &reqwest::Client,
    direct: &[String],
    session: &str,
) {
    let call = post_in_session(ann, &direct[1], session, &count_call(7, 10)).await;
    let seen = events_until(call, reports_progress).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let rest = events(resume(ann, &direct[2], session, &last_id(&seen)).await).await;
    let counted = answer(&rest, 7).unwrap_or_else(|| panic!("no answer: {rest:?}"));
    assert_eq!(counted["result"]["content"][0]["text"], "counted to 10");
    let reports: Vec<f64> = progress(&seen).into_iter().chain(progress(&rest)).collect();
    assert_eq!(reports, (1..=10).map(f64::from).collect::<Vec<_>>());
}

/// Runs `command` to its end off the async threads; what it printed.
async fn run(mut command: Command) -> std::process::Output {
    let shown = format!("{command:?}");
    tokio::task::spawn_blocking(move || command.output())
        .await
        .expect("the client's thread ends")
        .unwrap_or_else(|error| panic!("{shown} cannot run: {error}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_behind_a_balancer_share_sessions_and_tasks_and_outlive_one_of_them() {
    let redis = RedisServer::start();
    let root = tempfile::tempdir().unwrap();
    let file = config(root.path(), &redis);
    let program = Path::new(env!("CARGO_BIN_EXE_aleph-tools"));
    let tokens = [("ANN_TOKEN", ANN), ("BOB_TOKEN", BOB)];
    let mut replicas: Vec<Replica> = (0..3)
        .map(|_| Replica::start(program, root.path(), &file, &tokens))
        .collect();
    let addrs: Vec<String> = replicas.iter().map(|r| r.addr().to_owned()).collect();
    let haproxy = Haproxy::start(root.path(), &[&addrs[0], &addrs[1], &addrs[2]]);
    let url = haproxy.url();

    // The official Python client, through the balancer.
    let peers = interop_peers();
    let mut python = Command::new(peers.join(".venv/bin/python"));
    python.arg(peers.join("replicas_client.py")).args([
        "--url",
        &url,
        "--token",
        ANN,
        "--other-token",
        BOB,
    ]);
    assert_client_passed(&run(python).await, "Python (replicas)", 5);
    // And the official TypeScript client.
    let mut node = Command::new(peers.join(".venv/bin/node24"));
    node.arg(peers.join("replicas_client.mjs"))
        .args([&url, ANN]);
    let output = run(node).await;
    assert_client_passed(&output, "TypeScript (replicas)", 1);

    // A session of Ann's is no session for Bob, on any replica.
    let ann = bearer_client(ANN);
    let session = open_session_with(&ann, &url, &json!({ "extensions": { TASKS: {} } })).await;
    let bob = bearer_client(BOB);
    let list = json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/list" });
    for _ in 0..3 {
        let stolen = post_in_session(&bob, &url, &session, &list).await;
        assert!(
            stolen.status() == 403 || stolen.status() == 404,
            "{}",
            stolen.status()
        );
    }

    let direct: Vec<String> = addrs
        .iter()
        .map(|addr| format!("http://{addr}/mcp"))
        .collect();
    a_broken_stream_resumes_on_another_replica(&ann, &direct, &session).await;

    // A call running on the first replica, its stream broken; then that replica is killed.
    let long = post_in_session(&ann, &direct[0], &session, &count_call(8, 600)).await;
    let seen = events_until(long, reports_progress).await;
    let (http, second, resumed_session) = (ann.clone(), direct[1].clone(), session.clone());
    let resume_after = last_id(&seen);

    // A task started on the first replica; that replica is killed; the task is reported
    // failed through the others once its lease runs out, never left working.
    let first = &direct[0];
    let started = request_in_session(
        &ann,
        first,
        &session,
        "tools/call",
        json!({ "name": "wait", "arguments": {} }),
    )
    .await;
    let task = started["result"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("a task handle: {started}"))
        .to_owned();
    replicas[0].kill();
    // The call's stream, resumed on the second replica, ends with an error answer.
    let resumed = tokio::spawn(async move {
        events(resume(&http, &second, &resumed_session, &resume_after).await).await
    });
    let since = Instant::now();
    let ended = loop {
        // Until haproxy's health check leaves the killed replica out, a request it sends
        // there is lost; the next goes to a survivor.
        let state =
            try_request_in_session(&ann, &url, &session, "tasks/get", json!({ "taskId": task }))
                .await;
        if let Some(state) = state.filter(|state| state["result"]["status"] != "working") {
            break state;
        }
        assert!(
            since.elapsed() < Duration::from_secs(30),
            "the task still works, or no survivor answers"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    assert_eq!(ended["result"]["status"], "failed", "{ended}");
    assert!(
        ended["result"]["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("stopped before the task ended")),
        "{ended}"
    );
    let rest = resumed.await.unwrap();
    let failed = answer(&rest, 8).unwrap_or_else(|| panic!("no answer: {rest:?}"));
    assert_eq!(failed["error"]["code"], -32603, "{failed}");
    // The survivors go on serving the session.
    let answer = request_in_session(
        &ann,
        &url,
        &session,
        "tools/call",
        json!({ "name": "echo", "arguments": { "text": "still here" } }),
    )
    .await;
    assert_eq!(answer["result"]["isError"], false, "{answer}");
}
