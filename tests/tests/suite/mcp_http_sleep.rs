//! An HTTP session gives up its service (and the memory it holds) once nothing in it is left
//! for a client to resume: a stream that ran to its end handed on every event it carried, so
//! its session sleeps after a few quiet seconds, where a session with a stream cut short
//! stays awake, its call running, for a client that resumes the stream.

use std::time::Duration;

use aleph_tools_tests::mcp_http::{ACCEPT, VERSION, open_session};
use aleph_tools_tests::mcp_test_endpoint;
use serde_json::json;

/// How long a test waits for what must come; never a measure of speed.
const PATIENCE: Duration = Duration::from_mins(1);

/// A call of `slow` that reports its progress, as request 2 in `session`.
fn slow_call(
    http: &reqwest::Client,
    url: &str,
    session: &str,
    steps: u32,
) -> reqwest::RequestBuilder {
    http.post(url)
        .header("accept", ACCEPT)
        .header("mcp-protocol-version", VERSION)
        .header("mcp-session-id", session)
        .json(&json!({
            "jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {
                "name": "slow", "arguments": { "steps": steps },
                "_meta": { "progressToken": "p" },
            },
        }))
}

/// Reads `stream` until its text holds `wanted`; the text read.
async fn read_until(stream: &mut reqwest::Response, wanted: &str) -> String {
    let mut seen = String::new();
    while !seen.contains(wanted) {
        let chunk = tokio::time::timeout(PATIENCE, stream.chunk())
            .await
            .unwrap_or_else(|_| panic!("no {wanted} in {seen}"))
            .expect("the stream reads")
            .unwrap_or_else(|| panic!("the stream ended without {wanted}: {seen}"));
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
    seen
}

/// The session's stream after event `last`.
async fn resume(http: &reqwest::Client, url: &str, session: &str, last: &str) -> reqwest::Response {
    let replay = http
        .get(url)
        .header("accept", "text/event-stream")
        .header("mcp-protocol-version", VERSION)
        .header("mcp-session-id", session)
        .header("last-event-id", last)
        .send()
        .await
        .expect("the stream reopens");
    assert_eq!(replay.status(), 200);
    replay
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_sleeps_once_nothing_is_left_to_resume() {
    let (_tools, mcp) = mcp_test_endpoint();
    // Asleep five to ten seconds after its last request, or a minute after a stream of it
    // was cut short.
    let server = mcp
        .with_session_idle_timeout(Duration::from_mins(5))
        .serve_http("127.0.0.1:0")
        .await
        .expect("bind");
    let url = server.url();
    let http = reqwest::Client::new();
    let (answered, cut) = (
        open_session(&http, &url).await,
        open_session(&http, &url).await,
    );
    assert_eq!(server.sessions().held, 2);

    // One call's stream read to its end.
    let mut whole = slow_call(&http, &url, &answered, 2).send().await.unwrap();
    read_until(&mut whole, "counted to 2").await;
    assert!(whole.chunk().await.unwrap().is_none(), "the stream ends");
    drop(whole);
    // One call's stream dropped after its first events, while the tool goes on.
    let mut stream = slow_call(&http, &url, &cut, 1000).send().await.unwrap();
    let seen = read_until(&mut stream, "step 2").await;
    let cut_at = seen
        .lines()
        .rev()
        .find_map(|line| line.strip_prefix("id:"))
        .map(|id| id.trim().to_owned())
        .expect("the events have ids");
    drop(stream);
    assert_eq!(server.sessions().awake, 2);

    // The session whose stream ended falls asleep; the one whose stream was cut stays
    // awake, its call running, for a client that resumes the stream.
    let mut waited = Duration::ZERO;
    while server.sessions().awake == 2 {
        assert!(
            waited < Duration::from_secs(30),
            "no session slept: {:?}",
            server.sessions()
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
        waited += Duration::from_millis(250);
    }
    assert_eq!(server.sessions().awake, 1);
    assert_eq!(server.sessions().held, 2);
    let mut resumed = resume(&http, &url, &cut, &cut_at).await;
    let replayed = read_until(&mut resumed, r#""method":"notifications/progress""#).await;
    assert!(
        !replayed.contains(r#""step 1""#),
        "events up to the cut are not sent again: {replayed}"
    );
    drop(resumed);

    // The session that slept wakes at its next request and serves it.
    let mut again = slow_call(&http, &url, &answered, 1).send().await.unwrap();
    read_until(&mut again, "counted to 1").await;
    assert_eq!(server.sessions().awake, 2);
    server.shutdown().await.expect("stops");
}
