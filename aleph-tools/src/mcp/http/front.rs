//! The server's front: every request passes it before the router. Health probes first, then
//! the `Host` and `Origin` checks, then (on `/mcp`, when no token check stands between) the
//! intake and rmcp's service, with no route to look up. A service around the whole router
//! rather than a layer on its routes: a layer clones and boxes the route it wraps for every
//! request, and the router behind the front is one reference count to clone.

use std::convert::Infallible;
use std::future::{Ready, ready};
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::Router;
use axum::extract::Request;
use axum::response::IntoResponse as _;
use axum::response::Response;
use axum::routing::future::RouteFuture;
use futures_util::future::Either;
use tower_service::Service;

use super::drain::probe;
use super::guard::{Guard, refusal};
use super::intake::{Intake, intake};
use super::{MCP_PATH, McpService};
use crate::mcp::running::InFlight;
use crate::util::BoxFuture;

/// What the front needs.
pub(super) struct Front {
    pub(super) in_flight: Arc<InFlight>,
    pub(super) guard: Arc<Guard>,
    /// `/mcp` served here, through its intake, when no token check stands between: with
    /// one, the intake runs after that check, in a layer of the router's.
    pub(super) intake: Option<Arc<Direct>>,
}

/// `/mcp` as the front serves it: the intake, then rmcp's service, with no route to find.
pub(super) struct Direct {
    pub(super) intake: Arc<Intake>,
    pub(super) mcp: Arc<McpService>,
}

/// The front with the router it guards.
#[derive(Clone)]
pub(super) struct Fronted {
    front: Arc<Front>,
    router: Router,
}

impl Fronted {
    pub(super) fn new(front: Front, router: Router) -> Self {
        Self {
            front: Arc::new(front),
            router,
        }
    }
}

/// Answered at the front, passed to the router, or read by the intake and served here.
type FrontFuture = Either<
    Ready<Result<Response, Infallible>>,
    Either<RouteFuture<Infallible>, BoxFuture<'static, Result<Response, Infallible>>>,
>;

impl Service<Request> for Fronted {
    type Response = Response;
    type Error = Infallible;
    type Future = FrontFuture;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        // The router is always ready.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request) -> Self::Future {
        let front = &*self.front;
        if let Some(answer) =
            probe(&front.in_flight, &request).or_else(|| refusal(&front.guard, &request))
        {
            return Either::Left(ready(Ok(answer)));
        }
        match &front.intake {
            Some(direct) if request.uri().path() == MCP_PATH => {
                let direct = Arc::clone(direct);
                Either::Right(Either::Right(Box::pin(async move {
                    // rmcp's future is large: boxed, the intake's future stays small.
                    let next = async |request: Request| {
                        Box::pin(direct.mcp.handle(request)).await.into_response()
                    };
                    Ok(intake(&direct.intake, request, next).await)
                })))
            }
            _ => Either::Right(Either::Left(self.router.call(request))),
        }
    }
}
