//! A session's streams as they reach its client, each holding its session [`Busy`] while it
//! lasts and telling it what the stream carried and whether it ran to its end.

use std::pin::Pin;
use std::task::{Context, Poll, ready};

use futures_util::Stream;
use rmcp::transport::streamable_http_server::session::ServerSseMessage;
use tokio::sync::mpsc::Receiver;

use crate::mcp::http::sessions::Busy;

/// `stream`, keeping its session busy while it lasts (see [`InUse`]).
pub(super) fn in_use<S>(events: S, busy: Busy) -> InUse<S>
where
    S: Stream<Item = ServerSseMessage> + Send + Sync + 'static,
{
    InUse { events, busy }
}

pin_project_lite::pin_project! {
    /// A session's stream, keeping the session busy while it lasts and telling its [`Busy`]
    /// what it carried and whether it ran to its end, which is when the session's service
    /// no longer needs to keep its events for a client that resumes it.
    pub(super) struct InUse<S> {
        #[pin]
        events: S,
        busy: Busy,
    }
}

impl<S: Stream<Item = ServerSseMessage>> Stream for InUse<S> {
    type Item = ServerSseMessage;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<ServerSseMessage>> {
        let this = self.project();
        let event = ready!(this.events.poll_next(cx));
        mark(this.busy, event.is_some());
        Poll::Ready(event)
    }
}

/// Events as they come through a channel: what [`InUse`] makes of a channel, without a
/// future made for each event.
pub(super) struct Received {
    events: Receiver<ServerSseMessage>,
    busy: Busy,
}

impl Received {
    pub(super) fn new(events: Receiver<ServerSseMessage>, busy: Busy) -> Self {
        Self { events, busy }
    }
}

impl Stream for Received {
    type Item = ServerSseMessage;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<ServerSseMessage>> {
        let this = self.get_mut();
        let event = ready!(this.events.poll_recv(cx));
        mark(&mut this.busy, event.is_some());
        Poll::Ready(event)
    }
}

/// Tells `busy` that its stream gave an event, or ended when it gave none.
fn mark(busy: &mut Busy, event: bool) {
    if event {
        busy.used();
    } else {
        busy.ended();
    }
}
