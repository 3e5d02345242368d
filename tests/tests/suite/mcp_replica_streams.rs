//! Request streams shared by replicas through Redis (`McpServer::with_session_store`): a
//! client whose stream broke resumes it with `Last-Event-ID` on another replica and gets
//! every event it missed, then the rest and the answer, as the replica running the call
//! sends them; a stream whose replica stopped ends with an error answer; nobody resumes
//! another's stream; hostile event ids are refused; a question a tool asks on one replica is
//! answered through another. Each test runs a real `redis-server`.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use aleph_tools::Elicitation;
use aleph_tools::mcp::{
    EventLog, LoggedEvent, McpAuth, McpHttpServer, McpServer, RedisStore, SessionStore,
    StaticTokens, StreamState,
};
use aleph_tools::prelude::*;
use aleph_tools_tests::mcp_http::{
    bearer_client, open_session, open_session_with, post_in_session,
};
use aleph_tools_tests::redis::RedisServer;
use aleph_tools_tests::sse::{Event, answer, events, events_until, progress, resume};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

/// Reports each step as it takes it, one every 50 ms, then says how far it went.
#[tool(register = false)]
async fn count_steps(progress: Progress, steps: u32) -> String {
    for step in 1..=steps {
        tokio::time::sleep(Duration::from_millis(50)).await;
        progress.report(f64::from(step), Some(f64::from(steps)), None);
    }
    format!("took {steps} steps")
}

#[derive(Deserialize, JsonSchema)]
struct Name {
    /// Your name
    name: String,
}

/// Asks the client for a name, in the call.
#[tool(register = false)]
async fn greet_asked(ctx: &ToolContext) -> Result<String, ToolError> {
    Ok(match ctx.elicit::<Name>("Who are you?").await? {
        Elicitation::Accept(Name { name }) => format!("hello {name}"),
        other => other.action().to_owned(),
    })
}

/// Two replicas sharing a Redis of their own, and Ann's client.
struct Pair {
    _redis: RedisServer,
    store: RedisStore,
    a: McpHttpServer,
    b: McpHttpServer,
    ann: reqwest::Client,
}

async fn pair() -> Pair {
    let redis = RedisServer::start();
    let store = RedisStore::connect(&redis.url()).await.unwrap();
    let a = replica(&store).await;
    let b = replica(&store).await;
    Pair {
        _redis: redis,
        store,
        a,
        b,
        ann: bearer_client("ann-token"),
    }
}

/// Posts `call` in `session` and drops its stream after the first progress report: what
/// the client saw, and the id it resumes after.
async fn broken_off(
    http: &reqwest::Client,
    url: &str,
    session: &str,
    call: &Value,
) -> (Vec<Event>, String) {
    let response = post_in_session(http, url, session, call).await;
    assert_eq!(response.status(), 200);
    let seen = events_until(response, reports_progress).await;
    let last = seen
        .iter()
        .rev()
        .find_map(|event| event.id.clone())
        .unwrap();
    (seen, last)
}

/// A replica over HTTP sharing sessions through `store`, with tokens for `ann` and `bob`.
async fn replica(store: &RedisStore) -> McpHttpServer {
    let tools = AlephToolServer::builder()
        .with_tool(CountStepsTool)
        .with_tool(GreetAskedTool)
        .build()
        .unwrap();
    let tokens = StaticTokens::new()
        .with_token("ann-token", Identity::new("ann"))
        .with_token("bob-token", Identity::new("bob"));
    McpServer::new(&tools)
        .with_auth(McpAuth::new(tokens))
        .with_session_store(store.clone())
        .serve_http("127.0.0.1:0")
        .await
        .unwrap()
}

fn count_call(id: u64, steps: u32) -> Value {
    json!({
        "jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {
            "name": "count_steps", "arguments": { "steps": steps },
            "_meta": { "progressToken": format!("count-{id}") }
        }
    })
}

/// The first event reporting progress: where the stream is dropped.
fn reports_progress(event: &Event) -> bool {
    event
        .message()
        .is_some_and(|message| message["method"] == "notifications/progress")
}

fn now_ms() -> u64 {
    u64::try_from(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_millis(),
    )
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_broken_on_one_replica_resumes_on_another_with_all_it_missed() {
    let Pair { a, b, ann, .. } = &pair().await;
    let session = open_session(ann, &a.url()).await;

    // The call runs on A; its stream breaks after the first progress report.
    let (seen, last) = broken_off(ann, &a.url(), &session, &count_call(5, 20)).await;
    let before = progress(&seen);
    // Events go on being sent while the client is away.
    tokio::time::sleep(Duration::from_millis(300)).await;

    // Resumed on B: what was missed, then the rest as A sends it, then the answer.
    let resumed = resume(ann, &b.url(), &session, &last).await;
    assert_eq!(resumed.status(), 200);
    let rest = events(resumed).await;
    let answered = answer(&rest, 5).unwrap_or_else(|| panic!("no answer on B: {rest:?}"));
    assert_eq!(answered["result"]["content"][0]["text"], "took 20 steps");
    // Not one report lost, none twice.
    let all: Vec<f64> = before.into_iter().chain(progress(&rest)).collect();
    assert_eq!(all, (1..=20).map(f64::from).collect::<Vec<_>>(), "{rest:?}");
    // The ids go on from where the client was, and name the same stream.
    let stream = last.split_once('/').unwrap().1;
    for event in &rest {
        let id = event.id.as_deref().expect("every resumed event has an id");
        assert_eq!(id.split_once('/').unwrap().1, stream, "{id}");
    }

    // Resuming again after the answer, on either replica, sends nothing twice.
    let after = rest.last().and_then(|event| event.id.clone()).unwrap();
    for url in [a.url(), b.url()] {
        let again = events(resume(ann, &url, &session, &after).await).await;
        assert!(
            progress(&again).is_empty() && answer(&again, 5).is_none(),
            "{again:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nobody_resumes_anothers_stream_and_hostile_event_ids_are_refused() {
    let Pair { a, b, ann, .. } = &pair().await;
    let bob = bearer_client("bob-token");
    let session = open_session(ann, &a.url()).await;
    let (_, last) = broken_off(ann, &a.url(), &session, &count_call(1, 10)).await;

    // Bob's token does not wake Ann's session on B, so her stream stays hers.
    let refused = resume(&bob, &b.url(), &session, &last).await;
    assert!(
        refused.status() == 403 || refused.status() == 404,
        "{}",
        refused.status()
    );
    // Bob's own session does not reach Ann's stream: the event id names a stream of
    // another session.
    let bobs = open_session(&bob, &b.url()).await;
    let other = events(resume(&bob, &b.url(), &bobs, &last).await).await;
    assert!(other.is_empty(), "{other:?}");

    // Ids that name no stream, or nothing at all, get an empty stream; the session serves on.
    let long = format!("0/{}", "f".repeat(33));
    let huge = format!("{}/abc", "9".repeat(30));
    let stream = last.split_once('/').unwrap().1;
    let unknown = format!("0/{}", stream.chars().rev().collect::<String>());
    for bad in [
        long.as_str(),
        huge.as_str(),
        unknown.as_str(),
        "1/../../x",
        "0/abc def",
        "-1/abc",
        "/",
        "x/y/z",
    ] {
        let refused = resume(ann, &b.url(), &session, bad).await;
        let status = refused.status();
        let body = refused.text().await.unwrap_or_default();
        assert!(
            status.is_client_error() || body.is_empty(),
            "`{bad}` was not refused: {status} {body}"
        );
    }
    let rest = events(resume(ann, &b.url(), &session, &last).await).await;
    assert!(answer(&rest, 1).is_some(), "{rest:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_whose_replica_stopped_ends_with_an_error_answer() {
    let Pair { store, b, ann, .. } = &pair().await;
    let session = open_session(ann, &b.url()).await;

    // A replica that sent two events of request 9 and then stopped: its lease ran out.
    let stream = "0123456789abcdef1";
    let sent = [
        LoggedEvent::new(0, r#"{"retry_ms":100}"#),
        LoggedEvent::new(
            1,
            json!({ "message": {
                "jsonrpc": "2.0", "method": "notifications/progress",
                "params": { "progressToken": "count-9", "progress": 1.0 }
            }})
            .to_string(),
        ),
    ];
    let mut state = StreamState::new(json!(9));
    state.lease_until_ms = now_ms() - 1;
    assert!(
        store
            .append(&session, stream, &sent, &state, Duration::from_mins(1))
            .await
            .unwrap()
    );

    // Resumed on B after the first event: the second, then an error answer to request 9.
    let rest = events(resume(ann, &b.url(), &session, &format!("0/{stream}")).await).await;
    assert_eq!(progress(&rest), [1.0], "{rest:?}");
    let failed = answer(&rest, 9).unwrap_or_else(|| panic!("no answer: {rest:?}"));
    assert_eq!(failed["error"]["code"], -32603, "{failed}");
    assert!(
        failed["error"]["message"]
            .as_str()
            .unwrap()
            .contains("send the request again"),
        "{failed}"
    );
    // The end stands: every reader sees the same, and the stopped replica's late events
    // are refused.
    let again = events(resume(ann, &b.url(), &session, &format!("1/{stream}")).await).await;
    assert_eq!(answer(&again, 9), Some(failed), "{again:?}");
    state.lease_until_ms = now_ms() + 10_000;
    let late = [LoggedEvent::new(2, r#"{"retry_ms":100}"#)];
    assert!(
        !store
            .append(&session, stream, &late, &state, Duration::from_mins(1))
            .await
            .unwrap()
    );

    // A stream whose lease still runs is waited on, not ended.
    let running = "0123456789abcdef2";
    let mut alive = StreamState::new(json!(10));
    alive.lease_until_ms = now_ms() + 60_000;
    store
        .append(&session, running, &sent, &alive, Duration::from_mins(1))
        .await
        .unwrap();
    let waiting = resume(ann, &b.url(), &session, &format!("1/{running}")).await;
    let outcome = tokio::time::timeout(Duration::from_millis(600), waiting.text()).await;
    assert!(outcome.is_err(), "the stream ended early: {outcome:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_asked_on_one_replica_is_answered_through_another() {
    let Pair {
        store, a, b, ann, ..
    } = &pair().await;
    let session = open_session_with(ann, &a.url(), &json!({ "elicitation": {} })).await;

    // The tool on A asks; the question comes on the call's stream.
    let call = json!({
        "jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": { "name": "greet_asked", "arguments": {} }
    });
    let asks = |event: &Event| {
        event
            .message()
            .is_some_and(|message| message["method"] == "elicitation/create")
    };
    let seen = events_until(post_in_session(ann, &a.url(), &session, &call).await, asks).await;
    let question = seen
        .iter()
        .filter_map(Event::message)
        .find(|m| m["method"] == "elicitation/create")
        .unwrap();
    let last = seen
        .iter()
        .rev()
        .find_map(|event| event.id.clone())
        .unwrap();

    // Answers are relayed only to a process that takes them: the one that asked, not one
    // a client makes up (nothing of its is kept in the store).
    let asker = question["id"].as_str().unwrap().split_once('.').unwrap().0;
    assert!(store.relay(asker, &session, "{}").await.unwrap());
    assert!(
        !store
            .relay("0123456789abcdef", &session, "{}")
            .await
            .unwrap()
    );

    // A stray answer naming a process that asked nothing changes nothing.
    let stray = json!({
        "jsonrpc": "2.0", "id": "0123456789abcdef.0",
        "result": { "action": "accept", "content": { "name": "Mallory" } }
    });
    let response = post_in_session(ann, &b.url(), &session, &stray).await;
    assert!(response.status().is_success(), "{}", response.status());

    // The answer lands on B, which relays it to A; the call goes on there.
    let answer_it = json!({
        "jsonrpc": "2.0", "id": question["id"],
        "result": { "action": "accept", "content": { "name": "Ann" } }
    });
    let response = post_in_session(ann, &b.url(), &session, &answer_it).await;
    assert_eq!(response.status(), 202);
    let rest = events(resume(ann, &b.url(), &session, &last).await).await;
    let greeted = answer(&rest, 3).unwrap_or_else(|| panic!("no answer: {question} {rest:?}"));
    assert_eq!(
        greeted["result"]["content"][0]["text"], "hello Ann",
        "{greeted}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_that_ends_unanswered_ends_with_an_error_answer_on_another_replica() {
    let Pair { a, b, ann, .. } = &pair().await;
    let session = open_session(ann, &a.url()).await;
    let (_, last) = broken_off(ann, &a.url(), &session, &count_call(4, 200)).await;

    // The client cancels the call on A: its stream ends there without an answer.
    let cancel = json!({
        "jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": { "requestId": 4, "reason": "changed my mind" }
    });
    let response = post_in_session(ann, &a.url(), &session, &cancel).await;
    assert!(response.status().is_success(), "{}", response.status());

    // Resumed on B, the stream ends with an error answer saying so, not in silence.
    let rest = events(resume(ann, &b.url(), &session, &last).await).await;
    let ended = answer(&rest, 4).unwrap_or_else(|| panic!("no answer: {rest:?}"));
    assert_eq!(ended["error"]["code"], -32603, "{ended}");
    assert!(
        ended["error"]["message"]
            .as_str()
            .unwrap()
            .contains("without an answer"),
        "{ended}"
    );
}
