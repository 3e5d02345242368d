//! The server's front: every request passes it before the router. Health probes first, then
//! the `Host` and `Origin` checks, then (on `/mcp`, when no token check stands between) the
//! intake. A service around the whole router rather than a layer on its routes: a layer
//! clones and boxes the route it wraps for every request, and the router behind the front is
//! one reference count to clone.

use std::convert::Infallible;
use std::future::{Ready, ready};
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::Router;
use axum::extract::Request;
use axum::response::Response;
use axum::routing::future::RouteFuture;
use futures_util::FutureExt as _;
use futures_util::future::Either;
use tower_service::Service;

use super::MCP_PATH;
use super::drain::probe;
use super::guard::{Guard, refusal};
use super::intake::{Intake, intake};
use crate::mcp::running::InFlight;
use crate::util::BoxFuture;

/// What the front needs.
pub(super) struct Front {
    pub(super) in_flight: Arc<InFlight>,
    pub(super) guard: Arc<Guard>,
    /// The intake of `/mcp`, when it runs here: with a token check, it runs after that
    /// check, in a layer of its own.
    pub(super) intake: Option<Arc<Intake>>,
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

/// Answered at the front, passed to the router, or read by the intake first.
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
            Some(read) if request.uri().path() == MCP_PATH => {
                let (read, mut router) = (Arc::clone(read), self.router.clone());
                Either::Right(Either::Right(Box::pin(async move {
                    let next = |request: Request| router.call(request).map(|Ok(response)| response);
                    Ok(intake(&read, request, next).await)
                })))
            }
            _ => Either::Right(Either::Left(self.router.call(request))),
        }
    }
}
