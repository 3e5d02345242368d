//! A `tools/call` in a session that is awake, handed to the session without rmcp reading its
//! body a second time.
//!
//! rmcp's `POST` reads a body into its message types: untagged enums, which serde reads by
//! buffering the message and trying each variant, about a tenth of a whole HTTP round trip of
//! a small tool. The intake holds the body already. A `tools/call` it reads the short way
//! (`decode`), sent in a session rmcp holds awake by a client of a revision with the
//! `initialize` handshake, with the headers rmcp asks of it and no protocol version in its
//! `_meta`, meets every check rmcp's `POST` makes of such a request: the version checks and
//! the 2026-07-28 standard-header checks pass by construction. It goes to the session here,
//! and its answer streams back as rmcp streams one. Every other request goes to rmcp as it
//! came, so rmcp's answers to anything else (and its errors) stay its own.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse as _, Response};
use futures_util::StreamExt as _;
use rmcp::model::{
    ClientJsonRpcMessage, ClientRequest, GetExtensions as _, GetMeta as _, ProtocolVersion,
};
use rmcp::transport::streamable_http_server::session::{ServerSseMessage, SessionManager as _};
use sse_stream::{KeepAlive, Sse, SseBody};
use tokio_util::sync::CancellationToken;

use crate::mcp::polling::PollingSessions;
use crate::mcp::serve::decode::tool_call;

const JSON: &str = "application/json";
const EVENT_STREAM: &str = "text/event-stream";

/// What serving a `tools/call` here takes: the sessions, and what rmcp's streams get.
pub(super) struct InSession {
    pub(super) sessions: Arc<PollingSessions>,
    /// How often an answer's stream sends a comment while it waits (rmcp's setting).
    pub(super) keep_alive: Option<Duration>,
    /// Cancelled when the server stops: every answer's stream ends.
    pub(super) stop: CancellationToken,
}

impl InSession {
    /// The answer to the request `parts` with `body`, when it is a `tools/call` served here;
    /// otherwise its parts, untouched, for rmcp.
    pub(super) async fn serve(&self, parts: Parts, body: &Bytes) -> Result<Response, Parts> {
        let Some(session) = plain_request(&parts.headers) else {
            return Err(parts);
        };
        let Some(ClientJsonRpcMessage::Request(mut request)) = tool_call(body) else {
            return Err(parts);
        };
        if !matches!(request.request, ClientRequest::CallToolRequest(_))
            || request.request.get_meta().protocol_version().is_some()
        {
            return Err(parts);
        }
        let session = Arc::from(session);
        // A session asleep (or unknown) is rmcp's to wake (or refuse).
        if !matches!(self.sessions.has_session(&session).await, Ok(true)) {
            return Err(parts);
        }
        // As rmcp does: the session's handlers read the HTTP request (its identity) here.
        request.request.extensions_mut().insert(parts);
        let message = ClientJsonRpcMessage::Request(request);
        Ok(match self.sessions.create_stream(&session, message).await {
            Ok(events) => self.event_stream(events),
            Err(error) => {
                tracing::error!(%error, "an MCP session could not take a tool call");
                (
                    StatusCode::INTERNAL_SERVER_ERROR,
                    format!("the session could not take the call: {error}"),
                )
                    .into_response()
            }
        })
    }

    /// `events` as rmcp sends a request's answer: a stream of server-sent events, with a
    /// comment every `keep_alive` while it waits, ended when the server stops.
    fn event_stream(
        &self,
        events: impl futures_util::Stream<Item = ServerSseMessage> + Send + Sync + 'static,
    ) -> Response {
        let events = events
            .map(|event| Ok::<_, Infallible>(sse(event)))
            .take_until(self.stop.child_token().cancelled_owned());
        let body = match self.keep_alive {
            Some(every) => Body::new(
                SseBody::new(events).with_keep_alive::<Sleep>(KeepAlive::new().interval(every)),
            ),
            None => Body::new(SseBody::new(events)),
        };
        let mut response = Response::new(body);
        let headers = response.headers_mut();
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(EVENT_STREAM));
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
        headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
        response
    }
}

/// One event as rmcp writes it: the message as JSON (none for the event that opens a stream),
/// its id, and how long a client waits before it reconnects, when set.
fn sse(event: ServerSseMessage) -> Sse {
    let data = match &event.message {
        Some(message) => serde_json::to_string(message.as_ref()).unwrap_or_default(),
        None => String::new(),
    };
    let mut sse = Sse::default().data(data);
    sse.id = event.event_id;
    sse.retry = event
        .retry
        .map(|retry| u64::try_from(retry.as_millis()).unwrap_or(u64::MAX));
    sse
}

/// The session a request names, when its headers are all rmcp's `POST` asks of a request in
/// a session and nothing more could change how rmcp takes it: a JSON body, an `Accept` of
/// both answers' types (plainly, without parameters), and a protocol version rmcp knows from
/// before 2026-07-28 (where `initialize` still opens a session and no other header is
/// required). Anything else is rmcp's to read.
fn plain_request(headers: &HeaderMap) -> Option<&str> {
    let content_type = headers.get(header::CONTENT_TYPE)?.to_str().ok()?;
    let essence = content_type
        .split_once(';')
        .map_or(content_type, |(essence, _)| essence);
    if !essence.trim().eq_ignore_ascii_case(JSON) {
        return None;
    }
    let (mut json, mut events) = (false, false);
    for value in headers.get_all(header::ACCEPT) {
        let value = value.to_str().ok()?;
        if value.contains('"') {
            return None;
        }
        for entry in value.split(',').map(str::trim) {
            json |= entry.eq_ignore_ascii_case(JSON);
            events |= entry.eq_ignore_ascii_case(EVENT_STREAM);
        }
    }
    if !(json && events) {
        return None;
    }
    let version = headers.get("mcp-protocol-version")?.to_str().ok()?;
    let handshake = ProtocolVersion::KNOWN_VERSIONS.iter().any(|known| {
        known.as_str() == version
            && known.has_initialize()
            && version < ProtocolVersion::STANDARD_HEADERS.as_str()
    });
    if !handshake {
        return None;
    }
    headers
        .get("mcp-session-id")?
        .to_str()
        .ok()
        .filter(|id| !id.is_empty())
}

/// The keep-alive timer of an answer's stream.
struct Sleep(Pin<Box<tokio::time::Sleep>>);

impl Future for Sleep {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        self.0.as_mut().poll(cx)
    }
}

impl sse_stream::Timer for Sleep {
    fn reset(mut self: Pin<&mut Self>, when: std::time::Instant) {
        self.0.as_mut().reset(tokio::time::Instant::from_std(when));
    }

    fn from_duration(duration: Duration) -> Self {
        Self(Box::pin(tokio::time::sleep(duration)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for (name, value) in pairs {
            headers.append(*name, HeaderValue::from_static(value));
        }
        headers
    }

    const PLAIN: [(&str, &str); 4] = [
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
        ("mcp-protocol-version", "2025-11-25"),
        ("mcp-session-id", "s-1"),
    ];

    #[test]
    fn only_a_plain_request_in_a_session_is_served_here() {
        assert_eq!(plain_request(&headers(&PLAIN)), Some("s-1"));
        let split_accept = [
            PLAIN[0],
            ("accept", "text/event-stream"),
            ("accept", "APPLICATION/JSON"),
            PLAIN[2],
            PLAIN[3],
        ];
        assert_eq!(plain_request(&headers(&split_accept)), Some("s-1"));
        let with = |at: usize, pair: (&'static str, &'static str)| {
            let mut pairs = PLAIN.to_vec();
            pairs[at] = pair;
            plain_request(&headers(&pairs)).map(str::to_owned)
        };
        for (at, pair) in [
            (0, ("content-type", "text/plain")),
            (1, ("accept", "application/json")),
            (1, ("accept", "*/*")),
            (1, ("accept", "application/json;q=0, text/event-stream")),
            (
                1,
                ("accept", r#"application/json, text/event-stream;x="a,b""#),
            ),
            (2, ("mcp-protocol-version", "2026-07-28")),
            (2, ("mcp-protocol-version", "2099-01-01")),
            (2, ("mcp-protocol-version", "")),
            (3, ("mcp-session-id", "")),
            (3, ("x-other", "s-1")),
        ] {
            assert_eq!(with(at, pair), None, "{pair:?}");
        }
        let without_version = [PLAIN[0], PLAIN[1], PLAIN[3]];
        assert_eq!(plain_request(&headers(&without_version)), None);
    }
}
