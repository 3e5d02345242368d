//! A `tools/call` in an awake session over streamable HTTP: a plain one is handed to its
//! session without rmcp reading it again, any other goes through rmcp, and the answer is the
//! same either way; a request that only looks plain still gets rmcp's answer.

use aleph_tools_tests::mcp_http::{ACCEPT, VERSION, open_session};
use aleph_tools_tests::{http_answer, mcp_test_endpoint};
use serde_json::{Value, json};

/// `body` posted in `session` as a client of [`VERSION`] sends it.
fn call(http: &reqwest::Client, url: &str, session: &str, body: &Value) -> reqwest::RequestBuilder {
    posted(http, url, session, body, ACCEPT, VERSION)
}

/// The same, saying it accepts `accept`.
fn accepting(
    http: &reqwest::Client,
    url: &str,
    session: &str,
    body: &Value,
    accept: &str,
) -> reqwest::RequestBuilder {
    posted(http, url, session, body, accept, VERSION)
}

/// `body` posted in `session`, accepting `accept`, by a client of protocol `version`.
fn posted(
    http: &reqwest::Client,
    url: &str,
    session: &str,
    body: &Value,
    accept: &str,
    version: &str,
) -> reqwest::RequestBuilder {
    http.post(url)
        .header("accept", accept)
        .header("mcp-protocol-version", version)
        .header("mcp-session-id", session)
        .json(body)
}

/// A call of `add` (40 + 2), as request `id`.
fn add(id: u64) -> Value {
    json!({
        "jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": { "name": "add", "arguments": { "a": 40, "b": 2 } },
    })
}

/// A response's status, the headers an event stream sets, and its JSON-RPC answer.
async fn seen(response: reqwest::Response) -> (u16, [Option<String>; 3], Value) {
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .map(|value| value.to_str().unwrap().to_owned())
    };
    let headers = [
        header("content-type"),
        header("cache-control"),
        header("x-accel-buffering"),
    ];
    (
        response.status().as_u16(),
        headers,
        http_answer(response).await,
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_is_answered_alike_whether_rmcp_reads_it_or_not() {
    let (_tools, mcp) = mcp_test_endpoint();
    let server = mcp.serve_http("127.0.0.1:0").await.expect("bind");
    let url = server.url();
    let http = reqwest::Client::new();
    let session = open_session(&http, &url).await;

    let plain = seen(call(&http, &url, &session, &add(1)).send().await.unwrap()).await;
    // A parameter on an accepted type, or a protocol version in `_meta`, sends the same call
    // through rmcp.
    let weighted = "application/json;q=1, text/event-stream;q=1";
    let through_rmcp = seen(
        accepting(&http, &url, &session, &add(1), weighted)
            .send()
            .await
            .unwrap(),
    )
    .await;
    let mut with_meta = add(1);
    with_meta["params"]["_meta"] =
        json!({ "io.modelcontextprotocol/protocolVersion": "2025-11-25" });
    let with_meta = seen(
        call(&http, &url, &session, &with_meta)
            .send()
            .await
            .unwrap(),
    )
    .await;

    assert_eq!(plain.0, 200);
    assert_eq!(
        plain.1,
        [
            Some("text/event-stream".to_owned()),
            Some("no-cache".to_owned()),
            Some("no".to_owned())
        ]
    );
    assert_eq!(
        plain.2["result"]["structuredContent"],
        json!({ "result": 42 }),
        "{plain:?}"
    );
    assert_eq!(plain, through_rmcp);
    // A request with its version in `_meta` is one of 2026-07-28, whose structured content
    // is not wrapped.
    assert_eq!(with_meta.0, 200);
    assert_eq!(
        with_meta.2["result"]["structuredContent"],
        json!(42),
        "{with_meta:?}"
    );

    // A tool that fails, and one that is not there, answer as they do through rmcp.
    let missing = json!({
        "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": { "name": "no_such_tool", "arguments": {} },
    });
    let missing_plain = seen(call(&http, &url, &session, &missing).send().await.unwrap()).await;
    let missing_rmcp = seen(
        accepting(&http, &url, &session, &missing, weighted)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(missing_plain, missing_rmcp);
    server.shutdown().await.unwrap();
}

/// Requests the short way does not take, each with rmcp's answer: one that accepts only
/// JSON, one of a protocol version rmcp does not know or of 2026-07-28, one whose `_meta`
/// the header contradicts, one with its parameters in an array, one for a `Host` that is not
/// an authority, one in a session that is not there or has ended.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_that_only_looks_plain_gets_rmcps_answer() {
    let (_tools, mcp) = mcp_test_endpoint();
    let server = mcp.serve_http("127.0.0.1:0").await.expect("bind");
    let url = server.url();
    let http = reqwest::Client::new();
    let session = open_session(&http, &url).await;

    let json_only = accepting(&http, &url, &session, &add(1), "application/json")
        .send()
        .await
        .unwrap();
    assert_eq!(json_only.status(), 406);

    let unknown = posted(&http, &url, &session, &add(2), ACCEPT, "2099-01-01")
        .send()
        .await
        .unwrap();
    assert_eq!(unknown.status(), 400);
    assert!(unknown.text().await.unwrap().contains("2099-01-01"));

    // 2026-07-28 asks for the version in `_meta` as well: rmcp says it is missing.
    let newer = posted(&http, &url, &session, &add(3), ACCEPT, "2026-07-28")
        .send()
        .await
        .unwrap();
    let newer = http_answer(newer).await;
    assert!(newer.get("error").is_some(), "{newer}");

    // A version in `_meta` that the header contradicts: rmcp refuses the request.
    let mut contradicted = add(6);
    contradicted["params"]["_meta"] =
        json!({ "io.modelcontextprotocol/protocolVersion": "2025-06-18" });
    let contradicted = call(&http, &url, &session, &contradicted)
        .send()
        .await
        .unwrap();
    let status = contradicted.status();
    let contradicted = http_answer(contradicted).await;
    assert!(
        contradicted.get("error").is_some(),
        "{status}: {contradicted}"
    );

    // Parameters as an array, which serde would read into the struct: rmcp reads them by
    // their keys, and the call is refused.
    let arrayed = json!({
        "jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": [null, "add", { "a": 40, "b": 2 }, null, null],
    });
    let arrayed = http_answer(call(&http, &url, &session, &arrayed).send().await.unwrap()).await;
    assert!(arrayed.get("error").is_some(), "{arrayed}");

    // A `Host` that is not an authority is refused before anything reads the call; the
    // loopback address in its brackets is served.
    let port = url.split(':').nth(2).unwrap().trim_end_matches("/mcp");
    for (host, status) in [
        (format!("::1:{port}"), 403),
        (format!("[localhost:{port}"), 403),
        (format!("[::1]:{port}"), 200),
    ] {
        let sent = call(&http, &url, &session, &add(8))
            .header("host", &host)
            .send()
            .await
            .unwrap();
        assert_eq!(sent.status(), status, "{host}");
    }

    let stranger = call(&http, &url, "not-a-session", &add(4))
        .send()
        .await
        .unwrap();
    assert_eq!(stranger.status(), 404);

    let ended = http
        .delete(&url)
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", VERSION)
        .send()
        .await
        .unwrap();
    assert!(ended.status().is_success(), "{}", ended.status());
    let after = call(&http, &url, &session, &add(5)).send().await.unwrap();
    assert_eq!(after.status(), 404);
    server.shutdown().await.unwrap();
}
