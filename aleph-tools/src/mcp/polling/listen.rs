//! A session's `GET` stream, which outlives the session's service: when the session falls
//! asleep the stream stays open, carrying the notices the ledger gives it, and when the
//! session wakes the stream joins the new service's channel again. So a client that holds
//! its `GET` stream open, as the official SDK clients do, does not keep its session awake.
//! Each service numbers its events anew, so the stream's event ids name the service too
//! (`3.7`, event 7 of the session's service number 3): a client that resumes the stream
//! after the session slept starts afresh rather than from another service's numbers.

use std::pin::Pin;
use std::sync::{Mutex, Weak};
use std::task::{Context, Poll};

use futures_util::Stream;
use futures_util::future::BoxFuture;
use rmcp::transport::common::server_side_http::ServerSseMessage;

use super::PollingSessions;
use crate::mcp::http::sessions::{Listening, Mail, Service};

/// A stream of a session's events.
pub(super) type Events = Pin<Box<dyn Stream<Item = ServerSseMessage> + Send + Sync>>;

/// Joining a woken session's service: its channel, or `None` when the session cannot be
/// joined now (asleep again, or gone).
type Joining = BoxFuture<'static, Option<Events>>;

/// A client's `GET` stream of one session.
pub(super) struct Listener {
    sessions: Weak<PollingSessions>,
    listening: Listening,
    /// The channel of the service the stream is joined to, and that service's number.
    joined: Option<(Events, u32)>,
    /// Joining the service of the session woken: behind a lock only to be `Sync`, as rmcp
    /// wants a stream to be; polled through `get_mut`, never locked.
    joining: Mutex<Option<(Joining, u32)>>,
}

impl Listener {
    /// A stream joined to `events`, the channel of service number `service`.
    pub(super) fn new(
        sessions: Weak<PollingSessions>,
        listening: Listening,
        events: Events,
        service: u32,
    ) -> Self {
        Self {
            sessions,
            listening,
            joined: Some((events, service)),
            joining: Mutex::new(None),
        }
    }

    /// Starts joining service number `service` of the session.
    fn join(&mut self, service: u32) {
        let Some(sessions) = self.sessions.upgrade() else {
            return;
        };
        let id = self.listening.id().clone();
        let joining: Joining = Box::pin(async move { sessions.join(&id, service).await });
        *self
            .joining
            .get_mut()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some((joining, service));
    }
}

impl Stream for Listener {
    type Item = ServerSseMessage;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<ServerSseMessage>> {
        let this = self.get_mut();
        loop {
            let woke = match this.listening.inbox().look(cx) {
                Mail::Notice(notice) => return Poll::Ready(Some(notice)),
                Mail::Ended => return Poll::Ready(None),
                Mail::Nothing { woke } => woke,
            };
            let idle = this.joined.is_none()
                && this
                    .joining
                    .get_mut()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .is_none();
            if woke && idle {
                let id = this.listening.id().clone();
                if let Service::Woken(service) = this.listening.ledger().service(&id, None) {
                    this.join(service);
                }
            }
            let joining = this
                .joining
                .get_mut()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if let Some((future, service)) = joining {
                let service = *service;
                let Poll::Ready(joined) = future.as_mut().poll(cx) else {
                    return Poll::Pending;
                };
                *joining = None;
                let Some(events) = joined else {
                    // Asleep again before it was joined, or gone (then the inbox says so), or
                    // woken again since, with a newer service to join.
                    let id = this.listening.id().clone();
                    if let Service::Woken(newer) = this.listening.ledger().service(&id, None)
                        && newer != service
                    {
                        this.join(newer);
                    }
                    continue;
                };
                this.joined = Some((events, service));
            }
            let Some((events, service)) = &mut this.joined else {
                // Asleep: the inbox wakes the stream.
                return Poll::Pending;
            };
            match events.as_mut().poll_next(cx) {
                Poll::Ready(Some(mut event)) => {
                    // Each service numbers its events from 0: the id names the service too.
                    if let Some(id) = &mut event.event_id {
                        *id = format!("{service}.{id}");
                    }
                    return Poll::Ready(Some(event));
                }
                Poll::Pending => return Poll::Pending,
                Poll::Ready(None) => {}
            }
            let service = *service;
            this.joined = None;
            match this
                .listening
                .ledger()
                .service(this.listening.id(), Some(service))
            {
                Service::Gone | Service::Same => return Poll::Ready(None),
                Service::Woken(newer) => this.join(newer),
                // The inbox wakes the stream when the session wakes.
                Service::Asleep => {}
            }
        }
    }
}

/// The service number and rmcp's own id in an event id a [`Listener`] gave (`3.7`).
pub(super) fn life_of(event_id: &str) -> Option<(u32, &str)> {
    let (service, index) = event_id.split_once('.')?;
    Some((service.parse().ok()?, index))
}

#[cfg(test)]
mod tests {
    use super::life_of;

    #[test]
    fn an_event_id_names_its_service() {
        assert_eq!(life_of("3.7"), Some((3, "7")));
        assert_eq!(life_of("0.0"), Some((0, "0")));
        for rmcps_own in ["0", "7", "", ".7", "x.7", "99999999999.1"] {
            assert_eq!(life_of(rmcps_own), None, "{rmcps_own}");
        }
    }
}
