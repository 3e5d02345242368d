//! What a `POST /mcp` goes through before rmcp reads it: its body is read up to the size
//! limit, a body the server cannot read is answered with the JSON-RPC error that says why
//! (see [`unreadable`](crate::mcp::serve::unreadable)), and an `initialize` that would open
//! a session past a cap is refused with `429` or `503` and a JSON-RPC error that says the
//! limit and what to do.

use std::borrow::Cow;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt as _;
use http_body::{Frame, SizeHint};
use rmcp::model::InitializeRequestParams;
use serde::Deserialize;
use serde_json::{Value, json};

use super::in_session::InSession;
use super::sessions::{Full, Ledger};
use crate::Identity;
use crate::mcp::running::{InFlight, Running};
use crate::mcp::serve::unreadable::{ID_SEARCHED, Unreadable};

/// The largest `initialize` request a session is opened with.
const MAX_INITIALIZE: usize = 64 * 1024;

/// The header naming a streamable HTTP session.
const SESSION_HEADER: &str = "mcp-session-id";

/// What the intake needs: the sessions, the most a body may hold, and whether the server
/// drains.
pub(super) struct Intake {
    pub(super) ledger: Arc<Ledger>,
    pub(super) max_request: usize,
    pub(super) in_flight: Arc<InFlight>,
    /// Where a `tools/call` in an awake session is served without rmcp reading it again.
    pub(super) in_session: InSession,
}

/// The two members of a message the intake looks at; the rest is skipped unread.
#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(borrow, default)]
    method: Option<Cow<'a, str>>,
    #[serde(default)]
    id: Option<Value>,
}

/// The intake as a layer of `/mcp`, after the token check (so a stranger's body is never
/// read).
pub(super) async fn intake_layer(
    State(read): State<Arc<Intake>>,
    request: Request,
    next: Next,
) -> Response {
    intake(&read, request, |request| next.run(request)).await
}

/// What a request to `/mcp` goes through before `next` (rmcp) reads it.
pub(super) async fn intake<F, Fut>(intake: &Intake, request: Request, next: F) -> Response
where
    F: FnOnce(Request) -> Fut,
    Fut: Future<Output = Response>,
{
    if intake.ledger.shared().is_some()
        && let Some(id) = request
            .headers()
            .get(SESSION_HEADER)
            .and_then(|value| value.to_str().ok())
    {
        let ended = request.method() == Method::DELETE;
        let caller = request
            .extensions()
            .get::<Arc<Identity>>()
            .map(|identity| identity.subject().to_owned());
        share(&intake.ledger, id.to_owned(), ended, caller).await;
    }
    let resumed = request
        .headers()
        .get("last-event-id")
        .is_some_and(|id| id.as_bytes().contains(&b'/'));
    if request.method() == Method::GET && resumed {
        // A request's stream resumed (its events' ids name the request): the rest of its
        // answer, which a drain waits for. The `GET` stream resumed is a `GET` stream.
        let answering = intake.in_flight.answering();
        return counted_while_streaming(next(request).await, answering);
    }
    if request.method() != Method::POST {
        // A draining server opens no new stream.
        if request.method() == Method::GET && intake.in_flight.is_draining() {
            return draining(None);
        }
        return next(request).await;
    }
    // Counted from here until its answer is sent; a drain that begins later waits for it,
    // and one that began earlier is seen below.
    let answering = intake.in_flight.answering();
    let (parts, body) = request.into_parts();
    let bytes = match read_body(body, intake.max_request).await {
        Ok(bytes) => bytes,
        Err(refused) => return refused,
    };
    if intake.in_flight.is_draining()
        && let Some(refused) = refuse_new_work(&bytes)
    {
        return refused;
    }
    let is_json = parts
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| {
            value
                .trim_start()
                .to_ascii_lowercase()
                .starts_with("application/json")
        });
    // A request without a session opens one (`initialize`) or is served on its own; only
    // those are looked into before rmcp reads them.
    let mut reservation = None;
    // Read as rmcp reads it: a session id that is not text is no session id, and such a
    // request opens a session as one without it would.
    let in_session = parts
        .headers
        .get(SESSION_HEADER)
        .is_some_and(|id| id.to_str().is_ok());
    if is_json && !in_session {
        match serde_json::from_slice::<Envelope<'_>>(&bytes) {
            Err(error) => return unreadable(&Unreadable::of(&bytes, &error)),
            Ok(envelope) if envelope.method.as_deref() == Some("initialize") => {
                // What a session remembers while it sleeps is its `initialize`: kept small,
                // so that a sleeping session stays small.
                if bytes.len() > MAX_INITIALIZE {
                    let start = &bytes[..bytes.len().min(ID_SEARCHED)];
                    let refusal = Unreadable::too_large(start, MAX_INITIALIZE);
                    return json_response(StatusCode::PAYLOAD_TOO_LARGE, &refusal.to_response());
                }
                let owner = parts
                    .extensions
                    .get::<Arc<Identity>>()
                    .map(|identity| Arc::from(identity.subject()));
                match intake.ledger.reserve(owner) {
                    Ok(held) => reservation = Some(held),
                    Err(full) => return session_limit(&full, &intake.ledger, envelope.id),
                }
            }
            Ok(_) => {}
        }
    }
    let parts = if in_session {
        match intake.in_session.serve(parts, &bytes).await {
            Ok(response) => return counted_while_streaming(response, answering),
            Err(parts) => parts,
        }
    } else {
        parts
    };
    let response = next(Request::from_parts(parts, Body::from(bytes.clone()))).await;
    drop(reservation);
    let response = counted_while_streaming(response, answering);
    // rmcp answers a body it cannot read as a message `415`, in plain text.
    if is_json
        && response.status() == StatusCode::UNSUPPORTED_MEDIA_TYPE
        && let Err(error) = serde_json::from_slice::<rmcp::model::ClientJsonRpcMessage>(&bytes)
    {
        return unreadable(&Unreadable::of(&bytes, &error));
    }
    response
}

/// With shared sessions, before rmcp looks for session `id`: one another process opened is
/// held here, asleep, to be woken (when `caller` is who opened it); one held here is kept
/// shared for its idle timeout from now; one its client `ended` is forgotten by all.
async fn share(ledger: &Arc<Ledger>, id: String, ended: bool, caller: Option<String>) {
    let Some(shared) = ledger.shared() else {
        return;
    };
    // Ids are rmcp's own (UUIDs): anything else names no session, and never reaches the
    // store.
    if id.is_empty()
        || id.len() > 128
        || !id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    {
        return;
    }
    let shared = Arc::clone(shared);
    if ended {
        // Only its owner ends a session for every replica; awaited, so the session is gone
        // from the store by the time the client hears it ended.
        if let Ok(Some(record)) = shared.get(&id).await
            && record.owner == caller
            && let Err(error) = shared.remove(&id).await
        {
            tracing::warn!(session = %id, %error, "the ended session could not be unshared");
        }
        return;
    }
    if ledger.knows(&id) {
        let ttl = ledger.limits().idle_timeout;
        tokio::spawn(async move { shared.refresh(&id, ttl).await });
        return;
    }
    let record = match shared.get(&id).await {
        Ok(Some(record)) => record,
        Ok(None) => return,
        Err(error) => {
            tracing::warn!(session = %id, %error, "the shared sessions cannot be read");
            return;
        }
    };
    // Another identity's session is as unknown here as one that never was.
    if record.owner != caller {
        return;
    }
    match serde_json::from_value::<InitializeRequestParams>(record.initialize) {
        Ok(params) => ledger.adopt(&id, record.owner.map(Arc::from), params),
        Err(error) => tracing::warn!(session = %id, %error, "a shared session cannot be read"),
    }
}

/// The body, unless it is larger than `max` (then `413` with the JSON-RPC error) or breaks
/// off (`400`).
async fn read_body(body: Body, max: usize) -> Result<Bytes, Response> {
    let mut stream = body.into_data_stream();
    let mut first: Option<Bytes> = None;
    let mut all: Vec<u8> = Vec::new();
    let mut length = 0_usize;
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|error| {
            json_response(
                StatusCode::BAD_REQUEST,
                &json!({
                    "jsonrpc": "2.0", "id": null,
                    "error": { "code": -32700, "message": format!("Parse error: the request body could not be read: {error}") },
                }),
            )
        })?;
        length += chunk.len();
        if length > max {
            let mut start = first.map(|first| first.to_vec()).unwrap_or_default();
            start.extend_from_slice(&all);
            start.extend_from_slice(&chunk);
            start.truncate(ID_SEARCHED);
            let refusal = Unreadable::too_large(&start, max);
            let mut response = json_response(StatusCode::PAYLOAD_TOO_LARGE, &refusal.to_response());
            // The rest of the body is never read, so the connection cannot carry another
            // request.
            response
                .headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
            return Err(response);
        }
        // One chunk (the usual case) is kept as it came, until another comes.
        match &first {
            None if all.is_empty() => first = Some(chunk),
            _ => {
                if let Some(first) = first.take() {
                    all.extend_from_slice(&first);
                }
                all.extend_from_slice(&chunk);
            }
        }
    }
    // A chunk is a view into the connection's read buffer, which cannot be reused for the
    // next request while any view of it lives; the body (at most `max`) is copied out of it
    // so the buffer is free again at once.
    Ok(match first {
        Some(first) => Bytes::copy_from_slice(&first),
        None => Bytes::from(all),
    })
}

/// The response, still counted by `answering` until its event stream ends when it is one:
/// the call behind it may have finished, and a drain waits for its answer to be sent. (A
/// whole JSON answer is written by the server's graceful stop.)
fn counted_while_streaming(response: Response, answering: Running) -> Response {
    let streams = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|value| value.as_bytes().starts_with(b"text/event-stream"));
    if !streams {
        return response;
    }
    let (parts, body) = response.into_parts();
    Response::from_parts(parts, Body::new(Counted { body, answering }))
}

/// A response body, counted as an answer being sent until it ends or is dropped.
struct Counted {
    body: Body,
    /// Held, not read: dropped with the body.
    #[expect(dead_code, reason = "held for its drop")]
    answering: Running,
}

impl http_body::Body for Counted {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.get_mut().body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// What a draining server reads of a message: enough to tell new work from old.
#[derive(Deserialize)]
struct DrainEnvelope<'a> {
    #[serde(borrow, default)]
    method: Option<Cow<'a, str>>,
    #[serde(default)]
    id: Option<Value>,
    #[serde(default)]
    params: Option<DrainParams>,
}

#[derive(Deserialize)]
struct DrainParams {
    /// Carried by a 2026-07-28 client's answers to a running call's questions.
    #[serde(rename = "requestState", default)]
    request_state: Option<serde::de::IgnoredAny>,
}

/// The refusal of a request that would start new work on a draining server. Answers and
/// notifications (a cancellation, a client's reply to a running call's question) pass, and
/// so do the requests that serve work already started, a 2026-07-28 client's answers to a
/// call's questions among them.
fn refuse_new_work(bytes: &[u8]) -> Option<Response> {
    match serde_json::from_slice::<DrainEnvelope<'_>>(bytes) {
        Ok(DrainEnvelope {
            params: Some(DrainParams {
                request_state: Some(_),
            }),
            ..
        }) => None,
        Ok(DrainEnvelope {
            method: Some(method),
            id: Some(id),
            ..
        }) if !serves_started_work(&method) => Some(draining(Some(id))),
        Ok(_) => None,
        // A batch, or a body rmcp would refuse anyway.
        Err(_) => Some(draining(None)),
    }
}

/// How long a client refused while the server drains is told to wait before it retries.
const RETRY_AFTER_SECS: u64 = 1;

/// `503` with `Retry-After`, for a request that would start new work on a draining server:
/// another replica (or this one, restarted) takes it. With the request's `id`, the JSON-RPC
/// error that says to send it again.
fn draining(id: Option<Value>) -> Response {
    let mut response = match id {
        Some(id) => json_response(
            StatusCode::SERVICE_UNAVAILABLE,
            &json!({
                "jsonrpc": "2.0",
                "id": id,
                "error": {
                    "code": -32000,
                    "message": format!("the server is shutting down and takes no new requests; send it again in {RETRY_AFTER_SECS} s (a load balancer sends it to another server)"),
                    "data": { "retryAfterSeconds": RETRY_AFTER_SECS },
                },
            }),
        ),
        None => (
            StatusCode::SERVICE_UNAVAILABLE,
            "the server is shutting down and takes no new requests\n",
        )
            .into_response(),
    };
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from(RETRY_AFTER_SECS));
    response
}

/// Whether a draining server still takes a request for `method`: only what serves work
/// already started (a task's state, answers and cancellation) and `ping`.
fn serves_started_work(method: &str) -> bool {
    matches!(
        method,
        "tasks/get" | "tasks/update" | "tasks/cancel" | "tasks/result" | "tasks/list" | "ping"
    )
}

/// `400 Bad Request` with the JSON-RPC error that says why the body cannot be read.
fn unreadable(refusal: &Unreadable) -> Response {
    json_response(StatusCode::BAD_REQUEST, &refusal.to_response())
}

/// The refusal of an `initialize` past a cap: `429` when the caller's identity holds all it
/// may, `503` when the server does; the JSON-RPC error says the limit and what to do.
fn session_limit(full: &Full, ledger: &Ledger, id: Option<Value>) -> Response {
    let idle = ledger.limits().idle_timeout.as_secs_f64();
    let what_to_do = format!(
        "close sessions no longer used (an HTTP DELETE of /mcp with their Mcp-Session-Id header), or wait: a session unused for {idle} s ends by itself"
    );
    let (status, message, data) = match full {
        Full::Identity { owner, limit } => (
            StatusCode::TOO_MANY_REQUESTS,
            format!(
                "too many MCP sessions for `{owner}`: one identity may hold {limit} at once; {what_to_do}"
            ),
            json!({ "limit": limit, "per": "identity", "idleTimeoutSeconds": idle }),
        ),
        Full::Server { limit } => (
            StatusCode::SERVICE_UNAVAILABLE,
            format!(
                "too many MCP sessions: this server holds at most {limit} at once; {what_to_do}"
            ),
            json!({ "limit": limit, "per": "server", "idleTimeoutSeconds": idle }),
        ),
    };
    let id = id.filter(|id| id.is_number() || id.is_string());
    json_response(
        status,
        &json!({
            "jsonrpc": "2.0",
            "id": id,
            "error": { "code": -32000, "message": message, "data": data },
        }),
    )
}

/// `body` as a JSON response.
fn json_response(status: StatusCode, body: &Value) -> Response {
    let mut response = (status, body.to_string()).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}
