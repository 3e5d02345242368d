//! The one middleware in front of every route: health probes first, then the `Host` and
//! `Origin` checks, then (on `/mcp`, when no token check stands between) the intake. One
//! layer instead of three: each layer of the router clones and boxes what it wraps for every
//! request.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;

use super::MCP_PATH;
use super::drain::probe;
use super::guard::{Guard, refusal};
use super::intake::{Intake, intake};
use crate::mcp::running::InFlight;

/// What the front needs.
pub(super) struct Front {
    pub(super) in_flight: Arc<InFlight>,
    pub(super) guard: Arc<Guard>,
    /// The intake of `/mcp`, when it runs here: with a token check, it runs after that
    /// check, in a layer of its own.
    pub(super) intake: Option<Arc<Intake>>,
}

pub(super) async fn front(
    State(front): State<Arc<Front>>,
    request: Request,
    next: Next,
) -> Response {
    if let Some(answer) = probe(&front.in_flight, &request) {
        return answer;
    }
    if let Some(refused) = refusal(&front.guard, &request) {
        return refused;
    }
    match &front.intake {
        Some(read) if request.uri().path() == MCP_PATH => {
            intake(State(Arc::clone(read)), request, next).await
        }
        _ => next.run(request).await,
    }
}
