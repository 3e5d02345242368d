//! The `GET` streams of sessions. A session whose client holds its `GET` stream open still
//! sleeps when idle: the stream stays open, with nothing behind it, and is joined to the
//! session's service again when the session wakes. The server's changes (to the tools and
//! resources) reach the streams here, in each stream's [`Inbox`], whether the session is
//! awake or asleep: no hand-over between the ledger and a service can lose one.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::task::{Context, Waker};

use rmcp::model::ServerJsonRpcMessage;
use rmcp::transport::common::server_side_http::ServerSseMessage;
use rmcp::transport::streamable_http_server::session::SessionId;
use tokio::time::Instant;

use super::{Ledger, Phase};
use crate::mcp::serve::Remembered;
use crate::util::sync::lock;

/// The most `GET` streams one session holds open; a new one past that ends the oldest.
const MAX_LISTENING: usize = 4;

/// The most notices an inbox holds for a client that does not read them; past that the
/// oldest is dropped. Notices say that something changed, so the newest few are enough.
const MAX_NOTICES: usize = 64;

/// What one `GET` stream is told besides what the session's service sends it.
#[derive(Default)]
pub(in crate::mcp) struct Inbox {
    state: Mutex<InboxState>,
}

#[derive(Default)]
struct InboxState {
    /// Each with what it says, by which a notice already waiting is not put in again.
    notices: VecDeque<(Arc<str>, ServerSseMessage)>,
    /// The session's service came back since the stream last looked.
    woke: bool,
    /// The session ended.
    ended: bool,
    waker: Option<Waker>,
}

/// What an [`Inbox`] held when its stream looked.
pub(in crate::mcp) enum Mail {
    /// A notice to send.
    Notice(ServerSseMessage),
    /// The session ended: so does the stream.
    Ended,
    /// Nothing to send; `woke` says whether the session's service came back since the last
    /// look.
    Nothing { woke: bool },
}

impl Inbox {
    /// What the inbox holds, one notice at a time; the stream is woken when it holds more.
    pub(in crate::mcp) fn look(&self, cx: &Context<'_>) -> Mail {
        let mut state = lock(&self.state);
        if let Some((_, notice)) = state.notices.pop_front() {
            return Mail::Notice(notice);
        }
        if state.ended {
            return Mail::Ended;
        }
        if !state
            .waker
            .as_ref()
            .is_some_and(|waker| waker.will_wake(cx.waker()))
        {
            state.waker = Some(cx.waker().clone());
        }
        Mail::Nothing {
            woke: std::mem::take(&mut state.woke),
        }
    }

    fn tell(&self, change: impl FnOnce(&mut InboxState)) {
        let waker = {
            let mut state = lock(&self.state);
            change(&mut state);
            state.waker.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    /// Puts `notice` in, unless the same notice waits there already.
    fn post(&self, notice: &Notice) {
        self.tell(|state| {
            if state.notices.iter().any(|(says, _)| *says == notice.says) {
                return;
            }
            if state.notices.len() >= MAX_NOTICES {
                state.notices.pop_front();
            }
            state
                .notices
                .push_back((Arc::clone(&notice.says), notice.event.clone()));
        });
    }

    /// The session's service is back.
    pub(super) fn woke(&self) {
        self.tell(|state| state.woke = true);
    }

    /// The session ended.
    pub(super) fn end(&self) {
        self.tell(|state| state.ended = true);
    }
}

/// A notification of a change to what the server serves, for sessions' `GET` streams.
pub(in crate::mcp) struct Notice {
    /// What it says, in a few words: two notices that say the same are one.
    says: Arc<str>,
    /// The event that carries it, whose message each inbox shares.
    event: ServerSseMessage,
}

impl Notice {
    pub(in crate::mcp) fn new(says: impl Into<Arc<str>>, message: ServerJsonRpcMessage) -> Self {
        Self {
            says: says.into(),
            event: ServerSseMessage::from_message(message),
        }
    }
}

/// A `GET` stream's place in its session's record: the session does not end while it is
/// held, but may sleep. Dropped, the stream leaves.
pub(in crate::mcp) struct Listening {
    ledger: Arc<Ledger>,
    id: SessionId,
    inbox: Arc<Inbox>,
}

impl Listening {
    pub(in crate::mcp) fn inbox(&self) -> &Inbox {
        &self.inbox
    }

    pub(in crate::mcp) fn ledger(&self) -> &Ledger {
        &self.ledger
    }

    pub(in crate::mcp) fn id(&self) -> &SessionId {
        &self.id
    }
}

impl Drop for Listening {
    fn drop(&mut self) {
        if let Some(record) = lock(&self.ledger.book).sessions.get_mut(&self.id) {
            record
                .listening
                .retain(|inbox| !Arc::ptr_eq(inbox, &self.inbox));
            record.last_used = Instant::now();
        }
    }
}

/// What became of the service a `GET` stream was joined to, once its channel ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::mcp) enum Service {
    /// The session ended.
    Gone,
    /// The same service still runs: it ended the stream itself.
    Same,
    /// The session sleeps, is falling asleep, or is waking.
    Asleep,
    /// The session was woken since, with a new service.
    Woken(u32),
}

impl Ledger {
    /// A `GET` stream of session `id` opens, joined to the service the session has now;
    /// that service's number, or `None` when the session is not known.
    pub(in crate::mcp) fn listen(self: &Arc<Self>, id: &SessionId) -> Option<(Listening, u32)> {
        let inbox = Arc::new(Inbox::default());
        let mut book = lock(&self.book);
        let record = book.sessions.get_mut(id)?;
        record.listening.push(Arc::clone(&inbox));
        record.last_used = Instant::now();
        let service = record.service;
        drop(book);
        let listening = Listening {
            ledger: Arc::clone(self),
            id: id.clone(),
            inbox,
        };
        Some((listening, service))
    }

    /// Ends the oldest `GET` streams of session `id` past the most it holds.
    pub(in crate::mcp) fn cap_listening(&self, id: &str) {
        let mut book = lock(&self.book);
        let Some(record) = book.sessions.get_mut(id) else {
            return;
        };
        let past = record.listening.len().saturating_sub(MAX_LISTENING);
        for inbox in record.listening.drain(..past) {
            inbox.end();
        }
    }

    /// What became of session `id`'s service number `joined` (of its service when none).
    pub(in crate::mcp) fn service(&self, id: &str, joined: Option<u32>) -> Service {
        match lock(&self.book).sessions.get(id) {
            None => Service::Gone,
            Some(record) => match record.phase {
                Phase::Awake if Some(record.service) == joined => Service::Same,
                Phase::Awake => Service::Woken(record.service),
                Phase::Waking | Phase::FallingAsleep | Phase::Asleep => Service::Asleep,
            },
        }
    }

    /// Tells `notice` to the `GET` streams of the sessions that want it.
    pub(in crate::mcp) fn tell_listeners(
        &self,
        notice: &Notice,
        wanted: impl Fn(&Remembered) -> bool,
    ) {
        let book = lock(&self.book);
        for record in book.sessions.values() {
            if record.listening.is_empty() || !wanted(&record.remembered) {
                continue;
            }
            for inbox in &record.listening {
                inbox.post(notice);
            }
        }
    }
}
