//! A request's events as this process keeps them for a client that comes back: [`Kept`],
//! and reading the event ids clients name.

use std::collections::VecDeque;
use std::sync::{Mutex, PoisonError};

use rmcp::transport::streamable_http_server::session::ServerSseMessage;
use tokio::sync::Notify;

/// The most events kept for one request; past it the oldest go first (a client away that
/// long misses them, as it would with rmcp's own cache).
const MOST_KEPT: usize = 4096;

/// The events of one request, as rmcp sent them.
#[derive(Debug, Default)]
pub(super) struct Kept {
    events: Mutex<Events>,
    pub(super) changed: Notify,
}

#[derive(Debug, Default)]
pub(super) struct Events {
    pub(super) list: VecDeque<(usize, ServerSseMessage)>,
    /// rmcp has sent the last one (the answer, or the session ended).
    pub(super) ended: bool,
}

impl Kept {
    pub(super) fn events(&self) -> std::sync::MutexGuard<'_, Events> {
        self.events.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The first event numbered `from` or later. The list is in rmcp's order, which is the
    /// order of the numbers, so a stream's reads cost a search each, not a scan.
    pub(super) fn push(&self, numbered: &[(usize, ServerSseMessage)]) {
        let mut events = self.events();
        for (index, event) in numbered {
            if events.list.len() == MOST_KEPT {
                events.list.pop_front();
            }
            events.list.push_back((*index, event.clone()));
        }
        drop(events);
        self.changed.notify_waiters();
    }

    pub(super) fn next(&self, from: usize) -> Next {
        let events = self.events();
        let at = events.list.partition_point(|(index, _)| *index < from);
        match events.list.get(at) {
            Some((index, event)) => Next::Event(*index, event.clone()),
            None if events.ended => Next::Ended,
            None => Next::NotYet,
        }
    }
}

/// What a client's stream sends next.
pub(super) enum Next {
    Event(usize, ServerSseMessage),
    NotYet,
    Ended,
}

/// The number rmcp gave an event (`{index}/{request}`).
pub(super) fn index_of(event: &ServerSseMessage) -> Option<usize> {
    let id = event.event_id.as_deref()?;
    id.split_once('/')
        .map_or(id, |(index, _)| index)
        .parse()
        .ok()
}

/// The kept stream an event id names (`{index}/{stream}`, a stream named as
/// [`PollingSessions::stream_name`](super::PollingSessions::stream_name) names them); the
/// session's common stream has none.
pub(super) fn stream_of_id(event_id: &str) -> Option<(usize, &str)> {
    let (index, stream) = event_id.split_once('/')?;
    let named = (1..=32).contains(&stream.len()) && stream.bytes().all(|b| b.is_ascii_hexdigit());
    // No stream holds four billion events: a larger number names none.
    let index = usize::try_from(index.parse::<u32>().ok()?).ok()?;
    named.then_some((index, stream))
}
