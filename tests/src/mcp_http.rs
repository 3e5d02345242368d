//! Streamable HTTP driven by hand with `reqwest`: a session opened with the handshake, and
//! messages posted in it, for the edges an SDK client does not show (statuses, headers,
//! event ids).

use serde_json::{Value, json};

/// What a client that takes both answers sends as `Accept`.
pub const ACCEPT: &str = "application/json, text/event-stream";
/// The protocol version these requests speak.
pub const VERSION: &str = "2025-11-25";

/// Opens a session at `url` with the handshake (`initialize`, then
/// `notifications/initialized`); its id.
///
/// # Panics
///
/// When the server cannot be reached or does not open the session.
pub async fn open_session(http: &reqwest::Client, url: &str) -> String {
    open_session_with(http, url, &json!({})).await
}

/// Opens a session at `url` as [`open_session`] does, for a client that declares
/// `capabilities` (`{"extensions": {"io.modelcontextprotocol/tasks": {}}}` takes tasks).
///
/// # Panics
///
/// When the server cannot be reached or does not open the session.
pub async fn open_session_with(http: &reqwest::Client, url: &str, capabilities: &Value) -> String {
    let opened = http
        .post(url)
        .header("accept", ACCEPT)
        .json(&json!({
            "jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {
                "protocolVersion": VERSION, "capabilities": capabilities,
                "clientInfo": { "name": "raw", "version": "1" }
            }
        }))
        .send()
        .await
        .unwrap();
    assert_eq!(opened.status(), 200);
    let session = opened.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let initialized = post_in_session(
        http,
        url,
        &session,
        &json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }),
    )
    .await;
    assert_eq!(initialized.status(), 202);
    session
}

/// Posts `body` in `session`.
///
/// # Panics
///
/// When the server cannot be reached.
pub async fn post_in_session(
    http: &reqwest::Client,
    url: &str,
    session: &str,
    body: &Value,
) -> reqwest::Response {
    http.post(url)
        .header("accept", ACCEPT)
        .header("mcp-session-id", session)
        .header("mcp-protocol-version", VERSION)
        .json(body)
        .send()
        .await
        .unwrap()
}

/// [`request_in_session`], or `None` when no server answers it with `200`: a balancer may
/// send a request down a connection to a replica that has just died, and that request is
/// lost, where the next one is sent elsewhere.
pub async fn try_request_in_session(
    http: &reqwest::Client,
    url: &str,
    session: &str,
    method: &str,
    params: Value,
) -> Option<Value> {
    let mut body = json!({ "jsonrpc": "2.0", "id": 1, "method": method });
    body["params"] = params;
    let response = http
        .post(url)
        .header("accept", ACCEPT)
        .header("mcp-session-id", session)
        .header("mcp-protocol-version", VERSION)
        .json(&body)
        .send()
        .await
        .ok()?;
    if response.status() != 200 {
        return None;
    }
    Some(crate::http_answer(response).await)
}

/// Sends the request `method` with `params` in `session` and returns its JSON-RPC answer,
/// sent as JSON or as server-sent events.
///
/// # Panics
///
/// When the server cannot be reached or does not answer `200`.
pub async fn request_in_session(
    http: &reqwest::Client,
    url: &str,
    session: &str,
    method: &str,
    params: Value,
) -> Value {
    let mut body = json!({ "jsonrpc": "2.0", "id": 1, "method": method });
    body["params"] = params;
    let response = post_in_session(http, url, session, &body).await;
    let status = response.status();
    let answer = crate::http_answer(response).await;
    assert_eq!(status, 200, "{answer}");
    answer
}

/// An HTTP client that sends `Authorization: Bearer TOKEN` with every request.
///
/// # Panics
///
/// When the token cannot be a header value.
pub fn bearer_client(token: &str) -> reqwest::Client {
    let mut headers = reqwest::header::HeaderMap::new();
    let value = format!("Bearer {token}")
        .parse()
        .expect("the token is a header value");
    headers.insert("authorization", value);
    reqwest::Client::builder()
        .default_headers(headers)
        .build()
        .expect("the client is built")
}
