//! Health and drain: `/healthz` and `/readyz` for a load balancer, and the drain, which
//! waits for the calls and answers running now ([`InFlight`]).

use std::time::Duration;

use axum::extract::Request;
use axum::http::{Method, StatusCode};
use axum::response::{IntoResponse, Response};

use crate::mcp::running::InFlight;

/// Answers "is the process serving" (always `200` while it runs).
const LIVENESS: &str = "/healthz";
/// Answers "send me requests" (`200`, or `503` once draining).
const READINESS: &str = "/readyz";

/// What [`McpHttpServer::drain`](super::McpHttpServer::drain) saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Drained {
    /// Tool calls (tasks included) running when the drain began.
    pub running: usize,
    /// The tool calls (tasks included) still running when the time was up: they were
    /// cancelled. An answer still being sent then is cut off too, uncounted.
    pub cut_off: usize,
    /// How long the drain took, until the server stopped.
    pub took: Duration,
}

/// The answer to `GET /healthz` and `GET /readyz`, given before anything else looks at the
/// request (no `Host` check, no token: a load balancer's probe carries neither, and the
/// answers say nothing about the tools).
pub(super) fn probe(in_flight: &InFlight, request: &Request) -> Option<Response> {
    if request.method() != Method::GET && request.method() != Method::HEAD {
        return None;
    }
    Some(match request.uri().path() {
        LIVENESS => (StatusCode::OK, "ok\n").into_response(),
        READINESS if in_flight.is_draining() => {
            (StatusCode::SERVICE_UNAVAILABLE, "draining\n").into_response()
        }
        READINESS => (StatusCode::OK, "ready\n").into_response(),
        _ => return None,
    })
}
