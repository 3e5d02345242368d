//! The MCP transports cannot be exhausted or left silent: HTTP sessions are capped (in all
//! and per identity) and end when idle, each unreadable request (not JSON, nested too deep,
//! too large) gets the JSON-RPC error that says why on stdio and HTTP while the connection
//! goes on serving, and pages of other origins are refused.

use std::time::Duration;

use aleph_tools::Identity;
use aleph_tools::mcp::{McpAuth, McpHttpServer, McpServer, StaticTokens};
use aleph_tools_tests::{assert_client_passed, interop_peers, mcp_test_endpoint};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

const ACCEPT: &str = "application/json, text/event-stream";
const VERSION: &str = "2025-11-25";

/// How long a test waits for what must come; never a measure of speed.
const PATIENCE: Duration = Duration::from_mins(1);

/// The `initialize` request of a client that opens a session.
fn initialize(id: u64) -> Value {
    json!({
        "jsonrpc": "2.0", "id": id, "method": "initialize",
        "params": {
            "protocolVersion": VERSION,
            "capabilities": {},
            "clientInfo": {"name": "attacker", "version": "1"},
        },
    })
}

/// `method` with `params`, as request `id`.
fn request(id: u64, method: &str, params: &Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params })
}

/// A loopback HTTP client of one server.
struct Client {
    http: reqwest::Client,
    url: String,
    token: Option<&'static str>,
}

impl Client {
    fn of(server: &McpHttpServer) -> Self {
        Self {
            http: reqwest::Client::new(),
            url: server.url(),
            token: None,
        }
    }

    fn with_token(server: &McpHttpServer, token: &'static str) -> Self {
        Self {
            token: Some(token),
            ..Self::of(server)
        }
    }

    /// A `POST` of `body` (raw bytes), in `session` if given.
    async fn post_raw(
        &self,
        session: Option<&str>,
        body: impl Into<reqwest::Body>,
    ) -> reqwest::Response {
        let mut post = self
            .http
            .post(&self.url)
            .header("accept", ACCEPT)
            .header("content-type", "application/json")
            .body(body);
        if let Some(token) = self.token {
            post = post.bearer_auth(token);
        }
        if let Some(session) = session {
            post = post
                .header("mcp-session-id", session)
                .header("mcp-protocol-version", VERSION);
        }
        post.send().await.expect("the server answers")
    }

    async fn post(&self, session: Option<&str>, body: &Value) -> reqwest::Response {
        self.post_raw(session, body.to_string()).await
    }

    /// Opens a session with the handshake: its id, or the refusal.
    async fn try_open(&self) -> Result<String, reqwest::Response> {
        let opened = self.post(None, &initialize(1)).await;
        let Some(id) = opened.headers().get("mcp-session-id") else {
            return Err(opened);
        };
        let id = id.to_str().expect("text").to_owned();
        let _ = opened.text().await;
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        assert_eq!(self.post(Some(&id), &initialized).await.status(), 202);
        Ok(id)
    }

    async fn open(&self) -> String {
        match self.try_open().await {
            Ok(id) => id,
            Err(refused) => panic!("refused: {} {:?}", refused.status(), refused.text().await),
        }
    }

    /// The answer to `tools/call` of `tool` in `session`.
    async fn call(&self, session: &str, id: u64, tool: &str, arguments: Value) -> Value {
        let call = request(
            id,
            "tools/call",
            &json!({"name": tool, "arguments": arguments}),
        );
        aleph_tools_tests::http_answer(self.post(Some(session), &call).await).await
    }

    async fn close(&self, session: &str) {
        let mut delete = self
            .http
            .delete(&self.url)
            .header("mcp-session-id", session)
            .header("mcp-protocol-version", VERSION);
        if let Some(token) = self.token {
            delete = delete.bearer_auth(token);
        }
        assert!(delete.send().await.expect("delete").status().is_success());
    }
}

async fn serve(mcp: McpServer) -> McpHttpServer {
    mcp.serve_http("127.0.0.1:0")
        .await
        .expect("bind a loopback port")
}

/// A refusal's JSON-RPC error, after checking its status.
async fn refusal(response: reqwest::Response, status: u16) -> Value {
    assert_eq!(response.status(), status);
    let body: Value =
        serde_json::from_str(&response.text().await.expect("a body")).expect("a JSON body");
    assert_eq!(body["jsonrpc"], "2.0", "{body}");
    body
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_past_the_cap_are_refused_with_the_limit_and_what_to_do() {
    let (_tools, mcp) = mcp_test_endpoint();
    let server = serve(mcp.with_max_sessions(3)).await;
    let client = Client::of(&server);
    let mut open = Vec::new();
    for _ in 0..3 {
        open.push(client.open().await);
    }
    let refused = client
        .try_open()
        .await
        .expect_err("a fourth is one too many");
    let body = refusal(refused, 503).await;
    assert_eq!(body["id"], 1, "{body}");
    let message = body["error"]["message"].as_str().expect("a message");
    assert!(message.contains("at most 3"), "{message}");
    assert!(message.contains("DELETE"), "{message}");
    assert_eq!(body["error"]["data"]["limit"], 3);
    // A session id that is not text is no session id: the handshake is counted all the same.
    let smuggled = client
        .http
        .post(&client.url)
        .header("accept", ACCEPT)
        .header("content-type", "application/json")
        .header(
            "mcp-session-id",
            reqwest::header::HeaderValue::from_bytes(b"\xff").expect("a header value"),
        )
        .body(initialize(1).to_string())
        .send()
        .await
        .expect("the server answers");
    assert_eq!(smuggled.status(), 503, "{:?}", smuggled.headers());
    // What a session keeps while it sleeps is its handshake, so a large one is refused.
    let mut large = initialize(7);
    large["params"]["clientInfo"]["description"] = json!("x".repeat(100_000));
    let body = refusal(client.post(None, &large).await, 413).await;
    assert_eq!(body["id"], 7, "{body}");
    assert_eq!(body["error"]["data"]["maxBytes"], 65_536, "{body}");
    // The sessions open are served all along, and closing one makes room.
    let sum = client
        .call(&open[0], 2, "add", json!({"a": 1, "b": 2}))
        .await;
    assert_eq!(sum["result"]["structuredContent"]["result"], 3, "{sum}");
    client.close(&open[2]).await;
    client.open().await;
    server.shutdown().await.expect("stops");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_identity_cannot_take_every_session() {
    let (_tools, mcp) = mcp_test_endpoint();
    let tokens = StaticTokens::new()
        .with_token("ann-token", Identity::new("ann"))
        .with_token("bob-token", Identity::new("bob"));
    let server = serve(
        mcp.with_auth(McpAuth::new(tokens))
            .with_max_sessions(10)
            .with_max_sessions_per_identity(2),
    )
    .await;
    let ann = Client::with_token(&server, "ann-token");
    let first = ann.open().await;
    ann.open().await;
    let body = refusal(
        ann.try_open().await.expect_err("a third is one too many"),
        429,
    )
    .await;
    let message = body["error"]["message"].as_str().expect("a message");
    assert!(
        message.contains("`ann`") && message.contains("2 at once"),
        "{message}"
    );
    assert_eq!(body["error"]["data"]["per"], "identity");
    // Another identity is not held back by ann's sessions.
    let bob = Client::with_token(&server, "bob-token");
    bob.open().await;
    bob.open().await;
    ann.close(&first).await;
    ann.open().await;
    server.shutdown().await.expect("stops");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_session_ends_and_its_id_is_then_unknown() {
    let (_tools, mcp) = mcp_test_endpoint();
    let server = serve(
        mcp.with_session_idle_timeout(Duration::from_secs(1))
            .with_max_sessions(1),
    )
    .await;
    let client = Client::of(&server);
    let session = client.open().await;
    // Each look uses the session, so the wait before it grows until one finds it gone.
    let list = request(2, "tools/list", &json!({}));
    let mut wait = Duration::from_millis(1500);
    let gone = loop {
        tokio::time::sleep(wait).await;
        let response = client.post(Some(&session), &list).await;
        if response.status() == 404 {
            break response;
        }
        assert_eq!(response.status(), 200);
        let _ = response.text().await;
        assert!(wait < PATIENCE, "the idle session never ended");
        wait *= 2;
    };
    let text = gone.text().await.expect("a body");
    assert!(text.contains("Session not found"), "{text}");
    // Its place is free again.
    client.open().await;
    server.shutdown().await.expect("stops");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_in_use_does_not_end() {
    let (_tools, mcp) = mcp_test_endpoint();
    let server = serve(mcp.with_session_idle_timeout(Duration::from_millis(500))).await;
    let client = Client::of(&server);
    let (calling, listening) = (client.open().await, client.open().await);
    // One session's call runs three seconds without a word; the other holds its GET stream.
    let mut get = client
        .http
        .get(&client.url)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &listening)
        .header("mcp-protocol-version", VERSION)
        .send()
        .await
        .expect("the event stream opens");
    assert_eq!(get.status(), 200);
    let counted = client.call(&calling, 2, "slow", json!({"steps": 60})).await;
    assert_eq!(
        counted["result"]["structuredContent"]["result"], "counted to 60",
        "{counted}"
    );
    let _ = tokio::time::timeout(Duration::from_millis(100), get.chunk()).await;
    for session in [&calling, &listening] {
        let sum = client
            .call(session, 3, "add", json!({"a": 2, "b": 2}))
            .await;
        assert_eq!(sum["result"]["structuredContent"]["result"], 4, "{sum}");
    }
    drop(get);
    server.shutdown().await.expect("stops");
}

/// A session idle long enough to give up its service (half its idle timeout) comes back at
/// its next request, with what its client set in it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sleeping_session_wakes_with_what_it_had() {
    let (_tools, mcp) = mcp_test_endpoint();
    let server = serve(mcp.with_session_idle_timeout(Duration::from_secs(10))).await;
    let client = Client::of(&server);
    let session = client.open().await;
    let quiet = request(2, "logging/setLevel", &json!({"level": "error"}));
    assert!(
        aleph_tools_tests::http_answer(client.post(Some(&session), &quiet).await).await["result"]
            .is_object()
    );
    // Asleep after five seconds without a request, ended after ten.
    tokio::time::sleep(Duration::from_secs(7)).await;
    // Log messages come on the session's GET stream.
    let mut get = client
        .http
        .get(&client.url)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", VERSION)
        .send()
        .await
        .expect("the event stream opens");
    assert_eq!(get.status(), 200);
    let chatted = client.call(&session, 3, "chatty", json!({})).await;
    assert_eq!(
        chatted["result"]["structuredContent"]["result"], "logged",
        "{chatted}"
    );
    let mut heard = String::new();
    while !heard.contains(r#""count":3"#) {
        let chunk = tokio::time::timeout(PATIENCE, get.chunk())
            .await
            .expect("the error is heard")
            .expect("the stream reads")
            .expect("the stream goes on");
        heard.push_str(&String::from_utf8_lossy(&chunk));
    }
    assert!(
        !heard.contains(r#""level":"info""#) && !heard.contains(r#""level":"warning""#),
        "the level set before the sleep holds: {heard}"
    );
    drop(get);
    server.shutdown().await.expect("stops");
}

/// The official Python client keeps its `GET` stream open, so its session lives through a
/// run of checks longer than the idle timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_client_keeps_its_session_under_a_short_idle_timeout() {
    let peers = interop_peers();
    let (_tools, mcp) = mcp_test_endpoint();
    let server = serve(mcp.with_session_idle_timeout(Duration::from_millis(300))).await;
    let output = tokio::process::Command::new(peers.join(".venv/bin/python"))
        .arg(peers.join("client.py"))
        .args(["--mode", "legacy", "--url", &server.url()])
        .output()
        .await
        .expect("run the Python client");
    assert_client_passed(&output, "Python", 22);
    server.shutdown().await.expect("stops");
}

/// A 300-deep `arguments` object.
fn deep_arguments(id: u64) -> String {
    let depth = 300;
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"add","arguments":{}1{}}}}}"#,
        r#"{"a":"#.repeat(depth),
        "}".repeat(depth)
    )
}

/// A `tools/call` of `add` padded past `bytes`.
fn oversize(id: u64, bytes: usize) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"add","arguments":{{"a":1,"b":2,"pad":"{}"}}}}}}"#,
        "x".repeat(bytes)
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unreadable_http_requests_get_their_error_and_the_session_goes_on() {
    let (_tools, mcp) = mcp_test_endpoint();
    let server = serve(mcp.with_max_request_size(64 * 1024)).await;
    let client = Client::of(&server);
    let session = client.open().await;
    let cases: [(String, u16, i64, Value, &str); 4] = [
        (
            "this is not JSON".into(),
            400,
            -32700,
            Value::Null,
            "not valid JSON",
        ),
        (
            r#"{"jsonrpc":"2.0","id":41,"method":"tools/call","params":{"#.into(),
            400,
            -32700,
            json!(41),
            "not valid JSON",
        ),
        (deep_arguments(42), 400, -32600, json!(42), "127 levels"),
        (oversize(43, 70 * 1024), 413, -32600, json!(43), "64 KiB"),
    ];
    for (n, (body, status, code, id, says)) in cases.into_iter().enumerate() {
        // In the session, and out of it (a request that would open one).
        for session in [Some(session.as_str()), None] {
            let error = refusal(client.post_raw(session, body.clone()).await, status).await;
            assert_eq!(error["error"]["code"], code, "{error}");
            assert_eq!(error["id"], id, "{error}");
            let message = error["error"]["message"].as_str().expect("a message");
            assert!(message.contains(says), "{message}");
        }
        let sum = client
            .call(&session, 100 + n as u64, "add", json!({"a": 1, "b": 1}))
            .await;
        assert_eq!(sum["result"]["structuredContent"]["result"], 2, "{sum}");
    }
    server.shutdown().await.expect("stops");
}

/// The stdio server as a child process, and its output's lines.
struct StdioServer {
    child: tokio::process::Child,
    stdin: tokio::process::ChildStdin,
    lines: tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
}

impl StdioServer {
    fn start() -> Self {
        let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_mcp_stdio_server"))
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("start the stdio server");
        let stdin = child.stdin.take().expect("stdin");
        let lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        Self {
            child,
            stdin,
            lines,
        }
    }

    async fn send(&mut self, line: &str) {
        self.stdin.write_all(line.as_bytes()).await.expect("write");
        self.stdin.write_all(b"\n").await.expect("write");
        self.stdin.flush().await.expect("flush");
    }

    /// The next answer (a message with an `id` or an `error`); notifications are passed over.
    async fn answer(&mut self) -> Value {
        loop {
            let line = tokio::time::timeout(PATIENCE, self.lines.next_line())
                .await
                .expect("the server answers every line, and does not leave the client waiting")
                .expect("stdout reads")
                .expect("the server is still there");
            let message: Value = serde_json::from_str(&line).expect("a JSON line");
            if message.get("id").is_some() {
                return message;
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unreadable_stdio_lines_get_their_error_and_the_next_is_answered() {
    let mut server = StdioServer::start();
    server.send(&initialize(1).to_string()).await;
    assert_eq!(server.answer().await["id"], 1);
    server
        .send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)
        .await;
    let eight_mib = 8 * 1024 * 1024;
    let cases: [(String, i64, Value, &str); 4] = [
        (
            "this is not JSON".into(),
            -32700,
            Value::Null,
            "not valid JSON",
        ),
        (
            r#"{"jsonrpc":"2.0","id":"broken","method":"tools/call","params":{"name""#.into(),
            -32700,
            json!("broken"),
            "not valid JSON",
        ),
        (deep_arguments(3), -32600, json!(3), "127 levels"),
        (oversize(4, eight_mib + 1024), -32600, json!(4), "8 MiB"),
    ];
    for (n, (line, code, id, says)) in cases.into_iter().enumerate() {
        server.send(&line).await;
        let error = server.answer().await;
        assert_eq!(error["error"]["code"], code, "{error}");
        assert_eq!(error["id"], id, "{error}");
        let message = error["error"]["message"].as_str().expect("a message");
        assert!(message.contains(says), "{message}");
        let next = 10 + n as u64;
        let call = request(
            next,
            "tools/call",
            &json!({"name": "add", "arguments": {"a": 2, "b": 3}}),
        );
        server.send(&call.to_string()).await;
        let sum = server.answer().await;
        assert_eq!(sum["id"], next, "{sum}");
        assert_eq!(sum["result"]["structuredContent"]["result"], 5, "{sum}");
    }
    // The last line, with no newline before the input ends, is answered too.
    let StdioServer {
        mut child,
        mut stdin,
        mut lines,
    } = server;
    let last = request(
        99,
        "tools/call",
        &json!({"name": "add", "arguments": {"a": 1, "b": 1}}),
    );
    stdin
        .write_all(last.to_string().as_bytes())
        .await
        .expect("write");
    drop(stdin);
    let line = tokio::time::timeout(Duration::from_mins(1), lines.next_line())
        .await
        .expect("the last line is answered")
        .expect("read")
        .expect("a line");
    let sum: Value = serde_json::from_str(&line).expect("JSON");
    assert_eq!(sum["id"], 99, "{sum}");
    let _ = child.wait().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_of_other_origins_are_refused() {
    let (_tools, mcp) = mcp_test_endpoint();
    let server = serve(mcp.with_cors_origins(["https://app.example.com"])).await;
    let port = server.local_addr().port();
    let http = reqwest::Client::new();
    let initialize_from = |origin: Option<String>| {
        let mut request = http
            .post(server.url())
            .header("accept", ACCEPT)
            .json(&initialize(1));
        if let Some(origin) = origin {
            request = request.header("origin", origin);
        }
        request.send()
    };
    for evil in [
        "http://evil.example".to_owned(),
        format!("http://localhost:{}", port + 1),
        format!("http://127.0.0.1:{port}.evil.example"),
        "null".to_owned(),
    ] {
        let refused = initialize_from(Some(evil.clone()))
            .await
            .expect("an answer");
        assert_eq!(refused.status(), 403, "{evil}");
        let text = refused.text().await.expect("a body");
        assert!(
            text.contains("not allowed") && text.contains("Origin"),
            "{text}"
        );
    }
    for fine in [
        Some(format!("http://127.0.0.1:{port}")),
        Some(format!("http://localhost:{port}")),
        Some("https://app.example.com".to_owned()),
        None,
    ] {
        let answered = initialize_from(fine.clone()).await.expect("an answer");
        assert_eq!(answered.status(), 200, "{fine:?}");
    }
    server.shutdown().await.expect("stops");
}

/// The resident memory of process `pid`, in KiB.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("proc status");
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS")
}

/// Memory per idle session of a real server process (the conformance server, which serves
/// prompts, resources and tools, with the default limits): `SESSIONS` sessions (1000 unless
/// set) are opened and left idle, and the server's resident memory is read before, right
/// after (awake: rmcp's service of each, its tasks and channels) and once they have slept
/// (five seconds without a request, with nothing to resume). Prints the figures. The resident size counts what the
/// allocator keeps as well; `benches/mcp_sessions.rs` counts the heap the sessions hold.
///
/// ```text
/// CARGO_PROFILE_DEV_DEBUG=0 cargo test -p aleph-tools-tests --all-features --test suite \
///   security::mcp_transport::memory_per_idle_session -- --ignored --nocapture
/// ```
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement, of resident memory; run by hand"]
async fn memory_per_idle_session() {
    use std::io::BufRead;
    use std::process::{Command, Stdio};

    let sessions: u64 = std::env::var("SESSIONS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1000);
    let mut server = Command::new(env!("CARGO_BIN_EXE_mcp_conformance_server"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start the server");
    let mut url = String::new();
    std::io::BufReader::new(server.stdout.take().expect("stdout"))
        .read_line(&mut url)
        .expect("the server prints its URL");
    let client = Client {
        http: reqwest::Client::new(),
        url: url.trim().to_owned(),
        token: None,
    };
    let pid = server.id();
    let per = |from: u64, to: u64| (to.saturating_sub(from) * 1024) / sessions;
    let before = rss_kib(pid);
    for _ in 0..sessions {
        client.open().await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let awake = rss_kib(pid);
    // Five seconds idle put a session that only shook hands to sleep; the server looks
    // every five seconds.
    tokio::time::sleep(Duration::from_secs(12)).await;
    let asleep = rss_kib(pid);
    drop(server.stdin.take());
    let _ = server.wait();
    println!(
        "{sessions} idle sessions: RSS {before} KiB, {awake} KiB awake ({} bytes each), \
         {asleep} KiB asleep ({} bytes each)",
        per(before, awake),
        per(before, asleep)
    );
}
