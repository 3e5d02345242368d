//! Wrapping MCP servers' tools: the reference `server-everything` (npm) over stdio, and
//! aleph-tools' own server over stdio and HTTP. Calls go through the tool server's whole
//! pipeline; a dead server gives error results, never a hang.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use aleph_tools::mcp::{McpConnection, McpEndpoint, McpError, McpServer};
use aleph_tools::{
    AlephToolServer, CancellationToken, Content, Elicitation, ElicitationRequest, ProgressEvent,
    Sampled, SamplingRequest, ToolCategory, ToolContext, ToolErrorKind, ToolFilter, ToolResult,
};
use aleph_tools_tests::{Echo, add_echo_tools, interop_peers, mcp_test_server};
use serde_json::{Value, json};

fn everything() -> McpEndpoint {
    let peers = interop_peers();
    McpEndpoint::command("node")
        .arg(
            peers
                .join("node_modules/@modelcontextprotocol/server-everything/dist/index.js")
                .display()
                .to_string(),
        )
        .arg("stdio")
}

fn ours() -> McpEndpoint {
    McpEndpoint::command(env!("CARGO_BIN_EXE_mcp_stdio_server"))
}

/// A server whose calls give up after 60 s, so a test that would hang fails instead.
fn host() -> AlephToolServer {
    AlephToolServer::builder()
        .with_default_timeout(Duration::from_mins(1))
        .build()
        .expect("an empty server builds")
}

fn text(result: &ToolResult) -> String {
    result.model_text().into_owned()
}

/// Waits (up to 10 s) until `check` holds.
async fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !check() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting until {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn everything_servers_tools_are_served_and_called_through_the_pipeline() {
    let server = host();
    let conn = McpConnection::builder(everything())
        .prefix("everything")
        .connect(&server)
        .await
        .expect("connect to server-everything");
    let names = conn.tools();
    for expected in [
        "everything_echo",
        "everything_get-sum",
        "everything_get-tiny-image",
    ] {
        assert!(
            names.contains(&expected.to_owned()),
            "{expected} missing from {names:?}"
        );
    }
    assert!(names.iter().all(|n| aleph_tools::is_valid_tool_name(n)));
    assert_eq!(
        conn.remote_name("everything_get-sum").as_deref(),
        Some("get-sum")
    );
    assert!(conn.is_connected());

    let sum = server.tools().get("everything_get-sum").expect("listed");
    assert_eq!(sum.category, ToolCategory::Mcp);
    assert_eq!(sum.annotations.read_only, Some(true));
    assert!(sum.tags.contains(&"mcp:everything".to_owned()));
    assert_eq!(sum.parameters["properties"]["a"]["type"], "number");

    let added = server
        .call("everything_get-sum", json!({ "a": 2, "b": 3 }))
        .await;
    assert!(added.success, "{added:?}");
    assert!(text(&added).contains('5'), "{}", text(&added));

    // Name repair and argument validation happen here, before the remote server.
    let echoed = server
        .call("everything_echo", json!({ "message": "hello" }))
        .await;
    assert!(
        echoed.success && text(&echoed).contains("hello"),
        "{echoed:?}"
    );
    let repaired = server
        .call("Everything_Get_Sum", json!({ "a": 1, "b": 1 }))
        .await;
    let repair = repaired.repair.clone();
    assert!(repaired.success, "{repaired:?}");
    assert_eq!(
        repair.expect("repaired").repaired_name,
        "everything_get-sum"
    );
    let wrong = server
        .call("everything_get-sum", json!({ "a": "two", "b": 3 }))
        .await;
    assert_eq!(
        wrong.error_kind,
        Some(ToolErrorKind::InvalidArgs),
        "{wrong:?}"
    );

    // Removing the connection removes its tools.
    drop(conn);
    assert!(
        server
            .tools()
            .names()
            .iter()
            .all(|n| !n.starts_with("everything_"))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn everything_servers_images_structured_content_and_progress_come_through() {
    let server = host();
    let _conn = McpConnection::builder(everything())
        .prefix("everything")
        .connect(&server)
        .await
        .expect("connect to server-everything");

    // Content blocks come through as they are: the image is still an image, and a model
    // that reads only text reads a line describing it.
    let image = server.call("everything_get-tiny-image", json!({})).await;
    assert!(image.success, "{image:?}");
    assert!(
        text(&image).contains("[image: image/png"),
        "{}",
        text(&image)
    );
    let png = image
        .content
        .iter()
        .find_map(|block| match block {
            Content::Image(image) => Some(image),
            _ => None,
        })
        .expect("an image block");
    assert_eq!(png.mime_type, "image/png");
    let bytes = png.bytes().expect("valid base64");
    assert!(bytes.starts_with(b"\x89PNG"), "{:?}", &bytes[..8]);
    // Served again over MCP, the block is the one the remote server sent.
    let as_mcp = image.to_mcp(false);
    assert!(
        as_mcp["content"]
            .as_array()
            .unwrap()
            .iter()
            .any(|block| block["type"] == "image" && block["data"] == png.data.as_str()),
        "{as_mcp}"
    );

    // Structured content comes back as the output.
    let structured = server
        .call(
            "everything_get-structured-content",
            json!({ "location": "New York" }),
        )
        .await;
    assert!(structured.success, "{structured:?}");
    assert!(structured.output.is_object(), "{:?}", structured.output);

    // Progress from the remote server reaches the caller.
    let events = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&events);
    let ctx = ToolContext::new().with_progress(move |_tool, event| {
        if let ProgressEvent::Progress {
            progress, total, ..
        } = event
        {
            seen.lock().unwrap().push((progress, total));
        }
    });
    let long = server
        .call(
            "everything_trigger-long-running-operation",
            json!({ "duration": 0.3, "steps": 3 }),
        )
        .context(ctx)
        .await;
    assert!(long.success, "{long:?}");
    eventually("three progress events arrived", || {
        events.lock().unwrap().len() == 3
    })
    .await;
    let mut events = events.lock().unwrap().clone();
    // Each notification is handled on its own task, so they may come in any order.
    events.sort_by(|a, b| a.0.total_cmp(&b.0));
    assert_eq!(
        events,
        [(1.0, Some(3.0)), (2.0, Some(3.0)), (3.0, Some(3.0))]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killing_the_server_mid_call_gives_an_error_result_and_reconnect_brings_it_back() {
    let server = host();
    let conn = McpConnection::builder(everything())
        .prefix("ev")
        .connect(&server)
        .await
        .expect("connect");
    let pid = conn.process_id().expect("a command has a process id");

    let started = Arc::new(tokio::sync::Notify::new());
    let notify = Arc::clone(&started);
    let ctx = ToolContext::new().with_progress(move |_, _| notify.notify_one());
    let call = tokio::spawn({
        let server = server.clone();
        async move {
            server
                .call(
                    "ev_trigger-long-running-operation",
                    json!({ "duration": 30, "steps": 30 }),
                )
                .context(ctx)
                .await
        }
    });
    started.notified().await;
    let killed = std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .expect("run kill");
    assert!(killed.success());

    let result = call.await.expect("the call does not panic");
    assert!(!result.success, "{result:?}");
    assert_eq!(result.error_kind, Some(ToolErrorKind::Execution));
    assert!(text(&result).contains("not reachable"), "{}", text(&result));
    assert!(text(&result).contains("`ev`"), "{}", text(&result));

    // Every later call says so at once; the other tools are untouched.
    eventually("the connection counts as lost", || !conn.is_connected()).await;
    let later = server.call("ev_get-sum", json!({ "a": 1, "b": 2 })).await;
    assert!(
        !later.success && text(&later).contains("reconnected"),
        "{later:?}"
    );

    conn.reconnect().await.expect("reconnect");
    assert!(conn.is_connected());
    assert_ne!(conn.process_id(), Some(pid));
    let again = server.call("ev_get-sum", json!({ "a": 1, "b": 2 })).await;
    assert!(again.success && text(&again).contains('3'), "{again:?}");
    conn.close().await;
    assert!(server.is_empty());
}

/// The names `mcp_stdio_server` serves, with `prefix`.
fn served_by_stdio_server(prefix: &str) -> Vec<String> {
    let served = mcp_test_server();
    add_echo_tools(&served);
    served
        .tools()
        .names()
        .iter()
        .map(|name| format!("{prefix}_{name}"))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_own_server_wrapped_over_stdio_refreshes_and_cancels() {
    let server = host();
    // The server runs in its sandbox, writing only in its working directory: the marker's.
    let marker_dir = tempfile::tempdir().expect("temp dir");
    let conn = McpConnection::builder(ours().current_dir(marker_dir.path()))
        .prefix("ours")
        .connect(&server)
        .await
        .expect("connect to our stdio server");
    // Every tool of the server, listed in pages of 100 and followed to the end.
    assert_eq!(conn.tools(), served_by_stdio_server("ours"));
    let weather = server.tools().get("ours_get_weather").expect("listed");
    assert_eq!(weather.annotations.open_world, Some(true));
    assert!(weather.output_schema.is_some());

    let sum = server.call("ours_add", json!({ "a": 40, "b": 2 })).await;
    assert!(sum.success, "{sum:?}");
    assert_eq!(sum.output, json!({ "result": 42 }));
    let failed = server.call("ours_fail", json!({ "message": "nope" })).await;
    assert!(
        !failed.success && text(&failed).contains("nope"),
        "{failed:?}"
    );

    // The remote server grows a tool and says so; the connection lists again by itself.
    let mut changes = server.watch_tools();
    let grown = server.call("ours_grow", json!({ "name": "late" })).await;
    assert!(grown.success, "{grown:?}");
    tokio::time::timeout(Duration::from_secs(10), async {
        while !server.contains("ours_late") {
            changes.changed().await.expect("the server lives");
        }
    })
    .await
    .expect("the new remote tool is served after list_changed");
    let late = server.call("ours_late", json!({ "text": "hi" })).await;
    assert_eq!(late.output, json!({ "text": "hi" }));

    // Cancelling the caller's token cancels the remote tool.
    let marker = tempfile::NamedTempFile::new_in(marker_dir.path()).expect("temp file");
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    let ctx = ToolContext::new()
        .with_cancellation(cancel)
        .with_progress(move |_, _| trigger.cancel());
    let slow = server
        .call(
            "ours_slow",
            json!({ "steps": 200, "marker": marker.path().display().to_string() }),
        )
        .context(ctx)
        .await;
    assert_eq!(slow.error_kind, Some(ToolErrorKind::Cancelled), "{slow:?}");
    eventually("the remote tool saw the cancellation", || {
        std::fs::read_to_string(marker.path()).is_ok_and(|s| s == "cancelled")
    })
    .await;
    conn.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_own_server_wrapped_over_http_and_the_server_going_away() {
    let remote = mcp_test_server();
    let http = McpServer::new(&remote)
        .serve_http("127.0.0.1:0")
        .await
        .expect("bind");
    let server = host();
    let conn = McpConnection::builder(McpEndpoint::url(http.url()))
        .prefix("web")
        .connect(&server)
        .await
        .expect("connect over HTTP");
    // The serving side's filter decides what is listed.
    assert!(conn.tools().contains(&"web_fail".to_owned()));
    remote
        .set_filter(ToolFilter::new().block("fail"))
        .expect("a valid filter");
    conn.refresh().await.expect("list again");
    assert!(
        !conn.tools().contains(&"web_fail".to_owned()),
        "{:?}",
        conn.tools()
    );
    assert!(!server.contains("web_fail"));

    let weather = server
        .call("web_get_weather", json!({ "city": "Oslo" }))
        .await;
    assert!(weather.success, "{weather:?}");
    assert_eq!(weather.output["city"], "Oslo");

    http.shutdown().await.expect("stop the HTTP server");
    let after = server.call("web_add", json!({ "a": 1, "b": 2 })).await;
    assert!(!after.success, "{after:?}");
    assert_eq!(
        after.error_kind,
        Some(ToolErrorKind::Execution),
        "{after:?}"
    );
    drop(conn);
    assert!(server.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_endpoints_are_clear_errors() {
    let server = host();
    let missing = McpConnection::builder(McpEndpoint::command("no-such-mcp-server-here"))
        .connect(&server)
        .await
        .expect_err("no such command");
    assert!(matches!(missing, McpError::Spawn { .. }), "{missing:?}");
    assert!(
        missing.to_string().contains("no-such-mcp-server-here"),
        "{missing}"
    );

    let nobody = McpConnection::builder(McpEndpoint::url("http://127.0.0.1:9/mcp"))
        .connect(&server)
        .await
        .expect_err("nothing listens on port 9");
    assert!(matches!(nobody, McpError::Connect { .. }), "{nobody:?}");

    for script in [
        "exit 0",
        "echo 'this is not JSON-RPC'; sleep 2",
        "echo '{\"jsonrpc\":\"2.0\"}'; sleep 2",
    ] {
        let outcome = tokio::time::timeout(
            Duration::from_secs(20),
            McpConnection::builder(McpEndpoint::command("sh").args(["-c", script]))
                .connect(&server),
        )
        .await
        .unwrap_or_else(|_| panic!("connecting to `{script}` hung"));
        let err = outcome.expect_err("not an MCP server");
        assert!(matches!(err, McpError::Connect { .. }), "{script}: {err:?}");
    }
    assert!(server.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_taken_name_skips_that_tool_only() {
    let server = host();
    server
        .add(TakenName)
        .expect("add the tool that takes the name");
    let conn = McpConnection::builder(ours())
        .prefix("ours")
        .connect(&server)
        .await
        .expect("connect");
    assert!(!conn.tools().contains(&"ours_add".to_owned()));
    let mut rest = served_by_stdio_server("ours");
    rest.retain(|name| name != "ours_add");
    assert_eq!(conn.tools(), rest);
    let skipped = conn.skipped();
    assert_eq!(skipped.len(), 1, "{skipped:?}");
    assert!(skipped[0].contains("ours_add"), "{skipped:?}");
    let taken = server.call("ours_add", json!({})).await;
    assert_eq!(taken.output, Value::String("mine".into()));
}

/// A tool already called `ours_add`.
struct TakenName;

impl aleph_tools::AlephToolDyn for TakenName {
    fn name(&self) -> &'static str {
        "ours_add"
    }

    fn definition(&self) -> aleph_tools::ToolDefinition {
        aleph_tools::ToolDefinition::new(
            "ours_add",
            "Not the remote one.",
            json!({ "type": "object" }),
        )
    }

    fn call<'a>(
        &'a self,
        _args: Value,
        _ctx: &'a ToolContext,
    ) -> aleph_tools::BoxFuture<'a, Result<aleph_tools::ToolOutput, aleph_tools::ToolError>> {
        Box::pin(async { Ok(aleph_tools::ToolOutput::text("mine")) })
    }
}

/// A burst of `list_changed` costs a bounded number of listings: the changes that arrive
/// while a refresh waits are covered by it, so tasks and memory do not pile up with the
/// number of changes, and the served list still ends as the remote one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_list_changes_is_coalesced() {
    let remote = AlephToolServer::new();
    let http = McpServer::new(&remote)
        .serve_http("127.0.0.1:0")
        .await
        .expect("bind");
    let server = host();
    let _conn = McpConnection::builder(McpEndpoint::url(http.url()))
        .prefix("web")
        .connect(&server)
        .await
        .expect("connect over HTTP");
    let metrics = tokio::runtime::Handle::current().metrics();
    let before = metrics.num_alive_tasks();
    let mut most = before;
    for i in 0..3_000 {
        remote.add(Echo::named(format!("t{}", i % 5))).ok();
        remote.remove(&format!("t{}", (i + 2) % 5));
        if i % 10 == 0 {
            tokio::time::sleep(Duration::from_millis(1)).await;
            most = most.max(metrics.num_alive_tasks());
        }
    }
    let expected: Vec<String> = remote
        .tools()
        .names()
        .iter()
        .map(|n| format!("web_{n}"))
        .collect();
    eventually("the last list is served", || {
        server.tools().names() == expected
    })
    .await;
    assert!(
        most < before + 50,
        "{most} tasks alive during the burst, {before} before: refreshes pile up"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrapped_servers_questions_reach_the_applications_handlers() {
    let forms = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&forms);
    let prompts = Arc::new(Mutex::new(Vec::new()));
    let heard = Arc::clone(&prompts);
    let server = AlephToolServer::builder()
        .with_default_timeout(Duration::from_mins(1))
        .with_elicitation_handler(move |request: ElicitationRequest| {
            seen.lock().unwrap().push(request);
            async {
                let fields = json!({ "name": "Ada Lovelace", "check": true, "integer": 7 });
                Ok(Elicitation::Accept(serde_json::from_value(fields)?))
            }
        })
        .with_sampling_handler(move |request: SamplingRequest| {
            heard.lock().unwrap().push(request);
            async { Ok(Sampled::new("host-model", "forty-two").with_stop_reason("endTurn")) }
        })
        .build()
        .unwrap();
    let _conn = McpConnection::builder(everything())
        .prefix("everything")
        .connect(&server)
        .await
        .expect("connect to server-everything");

    // server-everything offers these tools only to clients that can answer them.
    let asked = server
        .call("everything_trigger-elicitation-request", json!({}))
        .await;
    assert!(asked.success, "{asked:?}");
    let answer = text(&asked);
    assert!(
        answer.contains("Name: Ada Lovelace") && answer.contains("Favorite Integer: 7"),
        "{answer}"
    );
    let forms = std::mem::take(&mut *forms.lock().unwrap());
    let [form] = forms.as_slice() else {
        panic!("asked {} times", forms.len())
    };
    assert_eq!(form.tool, "everything_trigger-elicitation-request");
    assert_eq!(form.schema["required"], json!(["name"]));
    assert_eq!(form.schema["properties"]["email"]["format"], "email");
    assert_eq!(
        form.schema["properties"]["titledSingleSelectEnum"]["oneOf"][0],
        json!({ "const": "hero-1", "title": "Superman" })
    );

    let sampled = server
        .call(
            "everything_trigger-sampling-request",
            json!({ "prompt": "the answer", "maxTokens": 20 }),
        )
        .await;
    assert!(sampled.success, "{sampled:?}");
    assert!(
        text(&sampled).contains("forty-two") && text(&sampled).contains("host-model"),
        "{}",
        text(&sampled)
    );
    let prompts = std::mem::take(&mut *prompts.lock().unwrap());
    let [request] = prompts.as_slice() else {
        panic!("sampled {} times", prompts.len())
    };
    assert_eq!(request.tool, "everything_trigger-sampling-request");
    assert_eq!(request.max_tokens, 20);
    assert_eq!(
        request.system_prompt.as_deref(),
        Some("You are a helpful test server.")
    );
    assert_eq!(request.temperature, Some(0.7));
    assert!(
        request.messages[0]
            .content
            .as_text()
            .is_some_and(|text| text.ends_with("the answer")),
        "{request:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_handler_a_wrapped_servers_question_fails_its_call_only() {
    let server = host();
    let _conn = McpConnection::builder(everything())
        .prefix("everything")
        .connect(&server)
        .await
        .expect("connect to server-everything");
    let asked = server
        .call("everything_trigger-elicitation-request", json!({}))
        .await;
    assert!(!asked.success, "{asked:?}");
    assert!(
        text(&asked).contains("no call in flight has anyone to answer"),
        "{}",
        text(&asked)
    );
    let sum = server
        .call("everything_get-sum", json!({ "a": 1, "b": 2 }))
        .await;
    assert!(sum.success, "{sum:?}");
}
