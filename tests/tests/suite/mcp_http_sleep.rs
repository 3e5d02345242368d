//! An HTTP session gives up its service (and the memory it holds) once nothing in it is left
//! for a client to resume: a stream that ran to its end handed on every event it carried, so
//! its session sleeps after a few quiet seconds, where a session with a stream cut short
//! stays awake, its call running, for a client that resumes the stream. A client holding
//! the session's `GET` stream open does not keep it awake: the stream stays open while the
//! session sleeps, carries the server's changes all the same, and joins the session's
//! service again when the session wakes.

use std::time::Duration;

use aleph_tools::mcp::{McpHttpServer, McpServer};
use aleph_tools::{RuntimeTool, ToolContext, ToolDefinition, ToolOutput};
use aleph_tools_tests::mcp_http::{ACCEPT, VERSION, open_session, request_in_session};
use aleph_tools_tests::{NOTE_URI, mcp_test_endpoint};
use serde_json::{Value, json};

/// How long a test waits for what must come; never a measure of speed.
const PATIENCE: Duration = Duration::from_mins(1);

/// A call of `slow` of so many steps that reports its progress, as request `id` in
/// `session`.
fn slow_call(
    http: &reqwest::Client,
    url: &str,
    session: &str,
    (id, steps): (u64, u32),
) -> reqwest::RequestBuilder {
    http.post(url)
        .header("accept", ACCEPT)
        .header("mcp-protocol-version", VERSION)
        .header("mcp-session-id", session)
        .json(&json!({
            "jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {
                "name": "slow", "arguments": { "steps": steps },
                "_meta": { "progressToken": format!("p{id}") },
            },
        }))
}

/// Reads `stream` until its text holds `wanted`; the text read. Keep-alive comments come
/// on an idle stream, so the whole read has a deadline, not each chunk.
async fn read_until(stream: &mut reqwest::Response, wanted: &str) -> String {
    let mut seen = String::new();
    let read = tokio::time::timeout(PATIENCE, async {
        while !seen.contains(wanted) {
            match stream.chunk().await.expect("the stream reads") {
                Some(chunk) => seen.push_str(&String::from_utf8_lossy(&chunk)),
                None => return false,
            }
        }
        true
    })
    .await;
    let read = read.unwrap_or_else(|elapsed| panic!("no {wanted} in {seen} ({elapsed})"));
    assert!(read, "the stream ended without {wanted}: {seen}");
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

/// `mcp` served over HTTP, and two sessions opened on it. A session falls asleep five to
/// ten seconds after its last request, or a minute after a stream of it was cut short.
async fn serve_with_two_sessions(mcp: McpServer) -> (McpHttpServer, reqwest::Client, [String; 2]) {
    let server = mcp
        .with_session_idle_timeout(Duration::from_mins(5))
        .serve_http("127.0.0.1:0")
        .await
        .expect("bind");
    let (http, url) = (reqwest::Client::new(), server.url());
    let sessions = [
        open_session(&http, &url).await,
        open_session(&http, &url).await,
    ];
    (server, http, sessions)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_sleeps_once_nothing_is_left_to_resume() {
    let (_tools, mcp) = mcp_test_endpoint();
    let (server, http, [answered, cut]) = serve_with_two_sessions(mcp).await;
    let url = server.url();
    assert_eq!(server.sessions().held, 2);

    // One call's stream read to its end.
    let mut whole = slow_call(&http, &url, &answered, (2, 2))
        .send()
        .await
        .unwrap();
    read_until(&mut whole, "counted to 2").await;
    assert!(whole.chunk().await.unwrap().is_none(), "the stream ends");
    drop(whole);
    // One call's stream dropped after its first events, while the tool goes on.
    let mut stream = slow_call(&http, &url, &cut, (2, 1000))
        .send()
        .await
        .unwrap();
    let seen = read_until(&mut stream, "step 2").await;
    let cut_at = last_event_id(&seen);
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

    // The session that slept wakes at its next requests, four at once, and serves them all:
    // those that come while it wakes wait for it.
    let (http, url, answered) = (&http, &url, &answered);
    let calls = (3..7).map(|id| async move {
        let mut again = slow_call(http, url, answered, (id, 1))
            .send()
            .await
            .unwrap();
        assert_eq!(again.status(), 200);
        read_until(&mut again, "counted to 1").await
    });
    futures_util::future::join_all(calls).await;
    assert_eq!(server.sessions().awake, 2);
    assert_eq!(server.sessions().held, 2);
    server.shutdown().await.expect("stops");
}

/// Waits until `awake` sessions of `server` are awake.
async fn until_awake(server: &McpHttpServer, awake: usize) {
    let mut waited = Duration::ZERO;
    while server.sessions().awake != awake {
        assert!(
            waited < Duration::from_secs(30),
            "never {awake} awake: {:?}",
            server.sessions()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
        waited += Duration::from_millis(100);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_sleeps_with_its_get_stream_open_and_the_stream_goes_on() {
    let (tools, mcp) = mcp_test_endpoint();
    let resources = mcp.clone();
    let (server, http, [session, other]) = serve_with_two_sessions(mcp).await;
    let url = server.url();
    let subscribed = request_in_session(
        &http,
        &url,
        &session,
        "resources/subscribe",
        json!({ "uri": NOTE_URI }),
    )
    .await;
    assert!(subscribed["result"].is_object(), "{subscribed}");
    let listen = |session: &str| {
        http.get(&url)
            .header("accept", "text/event-stream")
            .header("mcp-protocol-version", VERSION)
            .header("mcp-session-id", session)
            .send()
    };
    let mut get = listen(&session).await.expect("the stream opens");
    assert_eq!(get.status(), 200);
    let mut other_get = listen(&other).await.expect("the stream opens");

    // Both sleep with their streams open, and hear of changes while asleep: the one
    // subscribed to the note hears of its update too.
    until_awake(&server, 0).await;
    let definition = ToolDefinition::new("added_asleep", "Echoes.", json!({"type": "object"}));
    let echo = RuntimeTool::new(definition, |args: Value, _: ToolContext| async move {
        Ok(ToolOutput::text(args.to_string()))
    });
    tools.add(echo).expect("a valid tool");
    read_until(&mut get, "notifications/tools/list_changed").await;
    read_until(&mut other_get, "notifications/tools/list_changed").await;
    resources.resource_updated(NOTE_URI);
    let heard = read_until(&mut get, "notifications/resources/updated").await;
    assert!(heard.contains(NOTE_URI), "{heard}");
    resources.resources_changed();
    let heard = read_until(&mut other_get, "notifications/resources/list_changed").await;
    assert!(
        !heard.contains("notifications/resources/updated"),
        "not subscribed, not told: {heard}"
    );
    assert_eq!(server.sessions().awake, 0, "telling woke no session");

    // A request wakes the session, and its stream joins the new service: what the call
    // logs comes on it, and the server's changes still do.
    let chatted = request_in_session(
        &http,
        &url,
        &session,
        "tools/call",
        json!({
            "name": "chatty", "arguments": {}
        }),
    )
    .await;
    assert_eq!(
        chatted["result"]["structuredContent"]["result"], "logged",
        "{chatted}"
    );
    assert_eq!(server.sessions().awake, 1);
    let logged = read_until(&mut get, "notifications/message").await;
    // Its events' ids name the service that sent them: the session's second.
    let last_id = last_event_id(&logged);
    assert!(last_id.starts_with("1."), "{last_id}");
    tools.remove("added_asleep");
    read_until(&mut get, "notifications/tools/list_changed").await;

    // Ended while its stream is open and the session asleep, the stream ends.
    until_awake(&server, 0).await;
    let ended = http
        .delete(&url)
        .header("mcp-protocol-version", VERSION)
        .header("mcp-session-id", &other)
        .send()
        .await
        .expect("the session ends");
    assert!(ended.status().is_success(), "{}", ended.status());
    let rest = tokio::time::timeout(PATIENCE, async {
        while other_get.chunk().await.ok().flatten().is_some() {}
    })
    .await;
    assert!(rest.is_ok(), "the stream of an ended session ends");
    assert_eq!(server.sessions().held, 1);

    // A `GET` stream resumed after a break does not keep its session awake either, even
    // when resumed from an event of a service the session has had since.
    drop(get);
    let mut resumed = resume(&http, &url, &session, &last_id).await;
    until_awake(&server, 0).await;
    assert!(tools.remove("add"));
    read_until(&mut resumed, "notifications/tools/list_changed").await;
    server.shutdown().await.expect("stops");
}

/// The id of the last event in `events`, the text of an event stream.
fn last_event_id(events: &str) -> String {
    events
        .lines()
        .rev()
        .find_map(|line| line.strip_prefix("id:"))
        .map(|id| id.trim().to_owned())
        .expect("the events have ids")
}
