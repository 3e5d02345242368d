//! The guards a session's requests and streams hold in the ledger: a place reserved for a
//! session being opened, and a stream keeping its session busy.

use std::sync::Arc;

use rmcp::transport::streamable_http_server::session::SessionId;
use tokio::time::Instant;

use super::{Ledger, decrement};
use crate::util::sync::lock;

/// A place held for a session being opened; given back when dropped (by then the session
/// is counted itself, if it was opened).
pub(in crate::mcp) struct Reservation {
    pub(super) ledger: Arc<Ledger>,
    pub(super) owner: Option<Arc<str>>,
}

impl Drop for Reservation {
    fn drop(&mut self) {
        let mut book = lock(&self.ledger.book);
        book.reserved = book.reserved.saturating_sub(1);
        if let Some(owner) = &self.owner {
            decrement(&mut book.reserved_per_owner, owner);
        }
    }
}

/// A stream of a session is open; the session is not idle while it lives. Dropped, it says
/// whether the stream left events a client may resume from: those of a stream cut short.
pub(in crate::mcp) struct Busy {
    pub(super) ledger: Arc<Ledger>,
    pub(super) id: SessionId,
    /// The stream carried an event.
    pub(super) carried: bool,
    /// The stream ran to its end.
    pub(super) ended: bool,
    /// The session was waking when the stream opened.
    pub(super) waking: bool,
}

impl Busy {
    /// Whether the session was waking when the stream opened: then nothing may be sent to
    /// it before [`Ledger::until_woken`].
    pub(in crate::mcp) fn waking(&self) -> bool {
        self.waking
    }

    /// The stream carried an event, which rmcp's service keeps for a client that resumes
    /// the stream should it be cut short.
    pub(in crate::mcp) fn used(&mut self) {
        self.carried = true;
    }

    /// The stream ran to its end: every event it carried was handed on to the client's
    /// connection, so none is left to resume.
    pub(in crate::mcp) fn ended(&mut self) {
        self.ended = true;
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        if let Some(record) = lock(&self.ledger.book).sessions.get_mut(&self.id) {
            let now = Instant::now();
            record.busy = record.busy.saturating_sub(1);
            record.last_used = now;
            if self.carried && !self.ended {
                record.last_event = Some(now);
            }
        }
    }
}
