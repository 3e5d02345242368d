//! Health and drain: `/healthz` and `/readyz` for a load balancer, and the calls and answers
//! running now, which a drain waits for.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::{Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// Answers "is the process serving" (always `200` while it runs).
const LIVENESS: &str = "/healthz";
/// Answers "send me requests" (`200`, or `503` once draining).
const READINESS: &str = "/readyz";

/// The calls a server runs now (tool calls, tasks included) and the answers it streams, and
/// whether it drains.
#[derive(Debug, Default)]
pub(in crate::mcp) struct InFlight {
    /// Tool calls and answer streams open now: the drain waits until none is.
    busy: AtomicUsize,
    /// Of those, the tool calls.
    calls: AtomicUsize,
    draining: AtomicBool,
    /// Woken each time the last one ends.
    idle: tokio::sync::Notify,
}

/// One running call or open answer stream; dropping it (however it ends) counts it out.
#[must_use]
pub(in crate::mcp) struct Running {
    in_flight: Arc<InFlight>,
    call: bool,
}

impl InFlight {
    /// Counts a tool call in until the guard is dropped.
    pub(in crate::mcp) fn enter(self: &Arc<Self>) -> Running {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.busy.fetch_add(1, Ordering::SeqCst);
        Running {
            in_flight: Arc::clone(self),
            call: true,
        }
    }

    /// Counts an answer stream in until the guard is dropped: a call's answer is sent after
    /// the call ends, and the drain waits for it to reach the client.
    pub(super) fn answering(self: &Arc<Self>) -> Running {
        self.busy.fetch_add(1, Ordering::SeqCst);
        Running {
            in_flight: Arc::clone(self),
            call: false,
        }
    }

    /// The tool calls running now.
    pub(in crate::mcp) fn running(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }

    /// Whether a drain has begun. A request counts itself in before it asks, and the drain
    /// marks itself before it counts: one of the two sees the other.
    pub(super) fn is_draining(&self) -> bool {
        self.draining.load(Ordering::SeqCst)
    }

    pub(super) fn start_draining(&self) {
        self.draining.store(true, Ordering::SeqCst);
    }

    /// Waits until no call runs and no answer is on its way.
    pub(super) async fn settled(&self) {
        loop {
            let idle = self.idle.notified();
            if self.busy.load(Ordering::SeqCst) == 0 {
                return;
            }
            idle.await;
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if self.call {
            self.in_flight.calls.fetch_sub(1, Ordering::SeqCst);
        }
        if self.in_flight.busy.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.in_flight.idle.notify_waiters();
        }
    }
}

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

/// Answers `GET /healthz` and `GET /readyz` before anything else looks at the request (no
/// `Host` check, no token: a load balancer's probe carries neither, and the answers say
/// nothing about the tools).
pub(super) async fn health(
    State(in_flight): State<Arc<InFlight>>,
    request: Request,
    next: Next,
) -> Response {
    if request.method() != Method::GET && request.method() != Method::HEAD {
        return next.run(request).await;
    }
    match request.uri().path() {
        LIVENESS => (StatusCode::OK, "ok\n").into_response(),
        READINESS if in_flight.is_draining() => {
            (StatusCode::SERVICE_UNAVAILABLE, "draining\n").into_response()
        }
        READINESS => (StatusCode::OK, "ready\n").into_response(),
        _ => next.run(request).await,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use super::InFlight;

    #[tokio::test]
    async fn settled_waits_for_the_last_running_call_and_answer() {
        let in_flight = Arc::new(InFlight::default());
        in_flight.settled().await;
        let first = in_flight.enter();
        let second = in_flight.answering();
        assert_eq!(in_flight.running(), 1, "an answer is not a call");
        let waiter = tokio::spawn({
            let in_flight = Arc::clone(&in_flight);
            async move { in_flight.settled().await }
        });
        drop(first);
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!waiter.is_finished(), "one call still runs");
        drop(second);
        tokio::time::timeout(Duration::from_secs(5), waiter)
            .await
            .expect("settled once none runs")
            .unwrap();
    }
}
