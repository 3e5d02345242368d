//! Running the HTTP server in production: the probes a load balancer reads (`/healthz`,
//! `/readyz`), the drain on a rolling restart (running calls finish, new requests are told to
//! retry), and the metrics middleware read through a real Prometheus recorder.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use aleph_tools::mcp::{McpAuth, McpServer, StaticTokens};
use aleph_tools::middleware::{CALL_DURATION, Metrics};
use aleph_tools::{AlephToolServer, Identity, State, ToolError, tool};
use aleph_tools_tests::mcp_http::{ACCEPT, VERSION, open_session, post_in_session};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use serde_json::{Value, json};
use tokio::sync::Semaphore;

/// Lets a test hold `hold`'s calls where it wants them.
struct Gate {
    /// A permit per call that has started.
    started: Semaphore,
    /// A permit per call allowed to finish.
    release: Semaphore,
    /// Set when a call was dropped before it finished (cancelled).
    dropped: AtomicBool,
}

impl Default for Gate {
    fn default() -> Self {
        Self {
            started: Semaphore::new(0),
            release: Semaphore::new(0),
            dropped: AtomicBool::new(false),
        }
    }
}

/// Sets the gate's `dropped` unless disarmed.
struct DropMark(Option<Arc<Gate>>);

impl Drop for DropMark {
    fn drop(&mut self) {
        if let Some(gate) = self.0.take() {
            gate.dropped.store(true, Ordering::SeqCst);
        }
    }
}

/// Waits until the test lets it go.
#[tool(register = false)]
async fn hold(gate: State<Arc<Gate>>) -> Result<String, ToolError> {
    let gate = Arc::<Gate>::clone(&gate);
    let mut mark = DropMark(Some(Arc::clone(&gate)));
    gate.started.add_permits(1);
    let permit = gate
        .release
        .acquire()
        .await
        .map_err(|_| ToolError::execution("the gate closed"))?;
    permit.forget();
    mark.0 = None;
    Ok("released".to_owned())
}

fn gated() -> (AlephToolServer, Arc<Gate>) {
    let gate = Arc::new(Gate::default());
    let server = AlephToolServer::builder()
        .with_tool(HoldTool)
        .with_state(Arc::clone(&gate))
        .build()
        .unwrap();
    (server, gate)
}

fn call(id: u64, tool: &str) -> Value {
    json!({
        "jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": { "name": tool, "arguments": {} }
    })
}

async fn get(http: &reqwest::Client, url: String) -> (u16, String) {
    let response = http.get(url).send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.text().await.unwrap())
}

#[tokio::test]
async fn probes_answer_without_a_token_or_host_check() {
    let (tools, _gate) = gated();
    let auth = McpAuth::new(StaticTokens::new().with_token("s3cret", Identity::new("ops")));
    let server = McpServer::new(&tools)
        .with_auth(auth)
        .serve_http("127.0.0.1:0")
        .await
        .unwrap();
    let base = format!("http://{}", server.local_addr());
    let http = reqwest::Client::new();
    assert_eq!(
        get(&http, format!("{base}/healthz")).await,
        (200, "ok\n".into())
    );
    assert_eq!(
        get(&http, format!("{base}/readyz")).await,
        (200, "ready\n".into())
    );
    // A probe from a balancer that names the backend by another host is answered too;
    // `/mcp` still wants the token and a loopback `Host`.
    let foreign = http
        .get(format!("{base}/readyz"))
        .header("host", "backend-7.internal:8080")
        .send()
        .await
        .unwrap();
    assert_eq!(foreign.status(), 200);
    let anonymous = http
        .post(server.url())
        .header("accept", ACCEPT)
        .json(&call(1, "hold"))
        .send()
        .await
        .unwrap();
    assert_eq!(anonymous.status(), 401);
    // Only GET and HEAD are probes; anything else at the path goes where it would have.
    let posted = http.post(format!("{base}/healthz")).send().await.unwrap();
    assert_ne!(posted.status(), 200);
    server.shutdown().await.unwrap();
}

/// What a draining server still takes, being part of work already started: a task poll (of
/// a task this server does not know, so a JSON-RPC error rather than a refusal), a ping, and
/// a 2026-07-28 client's answers to a call's questions.
async fn what_serves_started_work_still_passes(http: &reqwest::Client, url: &str, session: &str) {
    // What serves work already started still passes: a task poll (of a task this server
    // does not know, so a JSON-RPC error rather than a refusal) and a ping.
    let poll = post_in_session(
        http,
        url,
        session,
        &json!({ "jsonrpc": "2.0", "id": 4, "method": "tasks/get", "params": { "taskId": "t-1" } }),
    )
    .await;
    assert_eq!(poll.status(), 200, "a task poll is not refused");
    let ping = post_in_session(
        http,
        url,
        session,
        &json!({ "jsonrpc": "2.0", "id": 5, "method": "ping" }),
    )
    .await;
    assert_eq!(ping.status(), 200);
    assert!(ping.text().await.unwrap().contains("\"result\""));
    // A 2026-07-28 client's answers to a call's questions carry running work on: they pass
    // (this state names no parked call, so the server says so).
    let answers = http
        .post(url)
        .header("accept", ACCEPT)
        .header("mcp-protocol-version", "2026-07-28")
        .json(&json!({
            "jsonrpc": "2.0", "id": 6, "method": "tools/call",
            "params": { "name": "hold", "arguments": {}, "requestState": "no-such-state",
                        "inputResponses": {},
                        "_meta": { "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                                   "io.modelcontextprotocol/clientCapabilities": {} } }
        }))
        .send()
        .await
        .unwrap();
    assert_ne!(
        answers.status(),
        503,
        "answers to a call's questions are not refused"
    );
}

#[tokio::test]
async fn a_drain_lets_running_calls_finish_and_refuses_new_work_with_a_retry() {
    let (tools, gate) = gated();
    let server = McpServer::new(&tools)
        .serve_http("127.0.0.1:0")
        .await
        .unwrap();
    let url = server.url();
    let base = format!("http://{}", server.local_addr());
    let http = reqwest::Client::new();
    let session = open_session(&http, &url).await;

    let running = tokio::spawn({
        let (http, url, session) = (http.clone(), url.clone(), session.clone());
        async move {
            let response = post_in_session(&http, &url, &session, &call(1, "hold")).await;
            assert_eq!(response.status(), 200);
            response.text().await.unwrap()
        }
    });
    gate.started.acquire().await.unwrap().forget();
    let drained = tokio::spawn(server.drain(Duration::from_secs(30)));
    // The balancer hears of it at once.
    let mut ready = get(&http, format!("{base}/readyz")).await;
    for _ in 0..500 {
        if ready.0 == 503 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
        ready = get(&http, format!("{base}/readyz")).await;
    }
    assert_eq!(ready, (503, "draining\n".into()));
    assert_eq!(get(&http, format!("{base}/healthz")).await.0, 200);

    // New work is refused with a status and an error that say to retry.
    let refused = post_in_session(&http, &url, &session, &call(2, "hold")).await;
    assert_eq!(refused.status(), 503);
    assert_eq!(refused.headers()["retry-after"], "1");
    let error: Value = refused.json().await.unwrap();
    assert_eq!(error["id"], 2);
    assert_eq!(error["error"]["data"]["retryAfterSeconds"], 1);
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("shutting down"),
        "{error}"
    );
    let opening = http
        .post(&url)
        .header("accept", ACCEPT)
        .json(&json!({
            "jsonrpc": "2.0", "id": 3, "method": "initialize",
            "params": { "protocolVersion": VERSION, "capabilities": {},
                        "clientInfo": { "name": "late", "version": "1" } }
        }))
        .send()
        .await
        .unwrap();
    assert_eq!(opening.status(), 503);
    let stream = http
        .get(&url)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", VERSION)
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status(), 503, "no new standalone stream");
    what_serves_started_work_still_passes(&http, &url, &session).await;

    // The running call finishes with its answer, then the server stops.
    assert!(!drained.is_finished());
    gate.release.add_permits(1);
    let answer = running.await.unwrap();
    assert!(answer.contains("released"), "{answer}");
    let drained = drained.await.unwrap().unwrap();
    assert_eq!((drained.running, drained.cut_off), (1, 0));
    assert!(!gate.dropped.load(Ordering::SeqCst));
    assert!(
        http.get(format!("{base}/healthz")).send().await.is_err(),
        "the server has stopped"
    );
}

#[tokio::test]
async fn a_drain_cancels_the_calls_still_running_when_its_time_is_up() {
    let (tools, gate) = gated();
    let server = McpServer::new(&tools)
        .serve_http("127.0.0.1:0")
        .await
        .unwrap();
    let url = server.url();
    let http = reqwest::Client::new();
    let session = open_session(&http, &url).await;
    let running = tokio::spawn({
        let (http, url, session) = (http.clone(), url.clone(), session.clone());
        async move {
            let response = post_in_session(&http, &url, &session, &call(1, "hold")).await;
            response.text().await.unwrap_or_default()
        }
    });
    gate.started.acquire().await.unwrap().forget();
    let drained = server.drain(Duration::from_millis(200)).await.unwrap();
    assert_eq!((drained.running, drained.cut_off), (1, 1));
    let answer = tokio::time::timeout(Duration::from_secs(10), running)
        .await
        .expect("the client's stream ends with the server")
        .unwrap();
    assert!(!answer.contains("\"isError\":false"), "{answer}");
    // The tool's future was dropped: the call was cancelled, not left running.
    for _ in 0..500 {
        if gate.dropped.load(Ordering::SeqCst) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(
        gate.dropped.load(Ordering::SeqCst),
        "the call was cancelled"
    );
}

/// This process's Prometheus recorder, installed once for every test in the binary; each
/// test reads the series of tools named for it alone.
fn prometheus() -> &'static PrometheusHandle {
    static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();
    HANDLE.get_or_init(|| {
        PrometheusBuilder::new()
            .set_buckets_for_metric(
                Matcher::Full(CALL_DURATION.to_owned()),
                &[0.001, 0.01, 0.1, 1.0, 10.0],
            )
            .unwrap()
            .install_recorder()
            .expect("no other recorder in this test binary")
    })
}

/// Fails when told to, succeeds otherwise.
#[tool(register = false)]
fn metered_tool(fail: bool) -> Result<&'static str, ToolError> {
    if fail {
        Err(ToolError::execution("asked to fail"))
    } else {
        Ok("fine")
    }
}

/// The value of the series written exactly as `series` in the Prometheus text.
fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

#[tokio::test]
async fn the_metrics_layer_counts_and_times_each_tool_by_result() {
    let prometheus = prometheus();
    let server = AlephToolServer::builder()
        .with_middleware(Metrics::new())
        .with_tool(MeteredToolTool)
        .build()
        .unwrap();
    for fail in [false, false, true] {
        server.call("metered_tool", json!({ "fail": fail })).await;
    }
    // Bad arguments pass the layers and are refused after them: counted by their kind. An
    // unknown name is refused before any layer runs: no label for a name nobody serves.
    server.call("metered_tool", json!({ "fail": "no" })).await;
    server.call("no_such_tool_at_all", json!({})).await;
    let text = prometheus.render();
    assert_eq!(
        sample(
            &text,
            r#"aleph_tools_tool_calls_total{tool="metered_tool",result="ok"}"#
        ),
        Some(2.0),
        "{text}"
    );
    assert_eq!(
        sample(
            &text,
            r#"aleph_tools_tool_calls_total{tool="metered_tool",result="execution"}"#
        ),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        sample(
            &text,
            r#"aleph_tools_tool_calls_total{tool="metered_tool",result="invalid_args"}"#
        ),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        sample(
            &text,
            r#"aleph_tools_tool_call_duration_seconds_count{tool="metered_tool"}"#
        ),
        Some(4.0),
        "{text}"
    );
    assert_eq!(
        sample(
            &text,
            r#"aleph_tools_tool_call_duration_seconds_bucket{tool="metered_tool",le="+Inf"}"#
        ),
        Some(4.0),
        "a histogram with buckets: {text}"
    );
    assert_eq!(
        sample(
            &text,
            r#"aleph_tools_tool_calls_running{tool="metered_tool"}"#
        ),
        Some(0.0),
        "{text}"
    );
    assert!(!text.contains("no_such_tool_at_all"), "{text}");
    assert!(
        text.contains("# HELP aleph_tools_tool_calls_total"),
        "described: {text}"
    );
}

#[tokio::test]
async fn a_cancelled_call_is_counted_and_leaves_the_running_gauge() {
    let prometheus = prometheus();
    let gate = Arc::new(Gate::default());
    let server = AlephToolServer::builder()
        .with_middleware(Metrics::new())
        .with_tool(HoldTool)
        .with_state(Arc::clone(&gate))
        .build()
        .unwrap();
    let call = tokio::spawn({
        let server = server.clone();
        async move { server.call("hold", json!({})).await }
    });
    gate.started.acquire().await.unwrap().forget();
    let text = prometheus.render();
    assert_eq!(
        sample(&text, r#"aleph_tools_tool_calls_running{tool="hold"}"#),
        Some(1.0),
        "{text}"
    );
    call.abort();
    let _ = call.await;
    let text = prometheus.render();
    assert_eq!(
        sample(&text, r#"aleph_tools_tool_calls_running{tool="hold"}"#),
        Some(0.0),
        "{text}"
    );
    assert_eq!(
        sample(
            &text,
            r#"aleph_tools_tool_calls_total{tool="hold",result="cancelled"}"#
        ),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        sample(
            &text,
            r#"aleph_tools_tool_call_duration_seconds_count{tool="hold"}"#
        ),
        Some(1.0),
        "{text}"
    );
}
