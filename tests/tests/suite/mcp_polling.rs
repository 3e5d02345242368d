//! SSE polling over streamable HTTP (`McpServer::with_sse_polling`): a request's event
//! stream is closed while the call runs, and the client gets the rest, answer included, by
//! reconnecting with `Last-Event-ID`. Driven by hand over HTTP, and by the official Python
//! and TypeScript SDK clients, which reconnect by themselves.

use std::time::Duration;

use aleph_tools_tests::mcp_http::{open_session, post_in_session};
use aleph_tools_tests::sse::{Event, answer, events, last_id, resume};
use aleph_tools_tests::{assert_client_passed, interop_peers, mcp_test_endpoint};
use serde_json::{Value, json};

/// How long a request's stream stays open, and how long clients wait to reconnect.
const POLLING: Duration = Duration::from_millis(300);
const RETRY: Duration = Duration::from_millis(100);

async fn polling_server() -> aleph_tools::mcp::McpHttpServer {
    let (_tools, mcp) = mcp_test_endpoint();
    mcp.with_sse_polling(POLLING)
        .with_sse_retry(RETRY)
        .serve_http("127.0.0.1:0")
        .await
        .expect("bind a loopback port")
}

fn slow_call(id: u64, steps: u32) -> Value {
    json!({
        "jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {
            "name": "slow", "arguments": { "steps": steps },
            "_meta": { "progressToken": format!("slow-{id}") }
        }
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_call_is_cut_and_its_answer_reaches_the_client_that_reconnects() {
    let server = polling_server().await;
    let url = server.url();
    let http = reqwest::Client::new();
    let session = open_session(&http, &url).await;

    // 30 steps of 50 ms: five times as long as a stream may stay open.
    let first = post_in_session(&http, &url, &session, &slow_call(1, 30)).await;
    assert_eq!(first.status(), 200);
    let mut streams = vec![events(first).await];
    let opening = &streams[0][0];
    assert!(
        opening.id.is_some() && opening.data.is_empty(),
        "a stream opens with a priming event: {opening:?}"
    );
    assert_eq!(
        opening.retry,
        Some(u64::try_from(RETRY.as_millis()).unwrap())
    );
    while answer(streams.last().unwrap(), 1).is_none() {
        let stream = streams.last().unwrap();
        let last = stream.last().expect("a cut stream ends with an event");
        assert!(
            last.data.is_empty() && last.retry == Some(100) && last.id.is_some(),
            "a stream cut for polling ends with a retry hint: {last:?}"
        );
        assert!(streams.len() < 20, "the answer never came");
        let again = resume(&http, &url, &session, &last_id(stream)).await;
        assert_eq!(again.status(), 200);
        streams.push(events(again).await);
    }
    assert!(
        streams.len() >= 3,
        "a 1.5 s call outlives at least two 300 ms streams: {}",
        streams.len()
    );
    let result = answer(streams.last().unwrap(), 1).unwrap();
    assert_eq!(
        result["result"]["content"][0]["text"], "counted to 30",
        "{result}"
    );

    // No progress report was lost between streams, and none came twice.
    let mut ids = std::collections::HashSet::new();
    let steps: Vec<f64> = streams
        .iter()
        .flatten()
        .filter(|event| event.id.as_ref().is_none_or(|id| ids.insert(id.clone())))
        .filter_map(Event::message)
        .filter(|message| message["method"] == "notifications/progress")
        .map(|message| message["params"]["progress"].as_f64().unwrap())
        .collect();
    assert_eq!(steps, (1..=30).map(f64::from).collect::<Vec<_>>());

    // A quick call on the same session is answered on its own stream, uncut.
    let quick = post_in_session(
        &http,
        &url,
        &session,
        &json!({
            "jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": { "name": "add", "arguments": { "a": 2, "b": 3 } }
        }),
    )
    .await;
    let quick = events(quick).await;
    let added = answer(&quick, 2).expect("the quick call answers at once");
    assert_eq!(added["result"]["structuredContent"]["result"], 5, "{added}");
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_that_came_while_the_client_was_away_waits_for_it() {
    let server = polling_server().await;
    let url = server.url();
    let http = reqwest::Client::new();
    let session = open_session(&http, &url).await;
    // 10 steps: the call ends 200 ms after its stream was cut.
    let cut = events(post_in_session(&http, &url, &session, &slow_call(7, 10)).await).await;
    assert!(answer(&cut, 7).is_none(), "{cut:?}");
    tokio::time::sleep(Duration::from_millis(800)).await;
    let resumed = resume(&http, &url, &session, &last_id(&cut)).await;
    let status = resumed.status();
    let rest = events(resumed).await;
    let result = answer(&rest, 7)
        .unwrap_or_else(|| panic!("the kept answer is replayed: {status} {cut:?} {rest:?}"));
    assert_eq!(result["result"]["content"][0]["text"], "counted to 10");
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_event_ids_are_refused_and_the_session_serves_on() {
    let server = polling_server().await;
    let url = server.url();
    let http = reqwest::Client::new();
    let session = open_session(&http, &url).await;
    for bad in ["not an id", "3/x", "0/999999", "-1/0", ""] {
        let refused = resume(&http, &url, &session, bad).await;
        let status = refused.status();
        let body = refused.text().await.unwrap();
        assert!(
            status.is_client_error() || body.is_empty(),
            "`{bad}` was not refused: {status} {body}"
        );
    }
    let unknown = resume(&http, &url, "no-such-session", "0/0").await;
    assert!(unknown.status().is_client_error(), "{}", unknown.status());
    let listed = events(
        post_in_session(
            &http,
            &url,
            &session,
            &json!({ "jsonrpc": "2.0", "id": 3, "method": "tools/list" }),
        )
        .await,
    )
    .await;
    assert!(answer(&listed, 3).is_some(), "{listed:?}");
    server.shutdown().await.unwrap();
}

/// Runs an official SDK's polling client (`program` in the interop venv, `script` beside it)
/// against a polling server: two checks, each a call cut at least once.
async fn sdk_client(program: &str, script: &str, client: &str) {
    let server = polling_server().await;
    let peers = interop_peers();
    let output = tokio::process::Command::new(peers.join(program))
        .arg(peers.join(script))
        .arg(server.url())
        .output()
        .await
        .unwrap();
    assert_client_passed(&output, client, 2);
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_sdk_reconnects_by_itself() {
    sdk_client(".venv/bin/python", "polling_client.py", "Python").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_typescript_sdk_reconnects_by_itself() {
    sdk_client(".venv/bin/node24", "polling_client.mjs", "TypeScript").await;
}
