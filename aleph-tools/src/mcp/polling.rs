//! SSE polling (SEP-1699): the HTTP server ends the event stream of a request that runs
//! too long, and the client reconnects with `Last-Event-ID` for the rest of the answer.
//!
//! rmcp hands each request's events to one stream and forgets a request once its answer is
//! sent, so an answer that comes while the client is away would be lost. Here each request
//! being polled gets a pump that moves rmcp's events into a [`Kept`] list as they come; the
//! client's streams read that list, the first until the time is up and each one after it
//! from the event the client names, and the list outlives the answer by [`KEEP_ANSWERED`].
//!
//! The same manager keeps the [`Ledger`] of sessions up to date (what each is doing) and
//! carries out what it decides: a session idle for a while sleeps (rmcp's service of it
//! ends, rmcp's session restore wakes it), one idle past the timeout ends.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures_util::Stream;
use futures_util::stream::{self, StreamExt as _};
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, GetExtensions as _, ServerJsonRpcMessage};
use rmcp::transport::WorkerTransport;
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionHandle, LocalSessionManager, LocalSessionManagerError, LocalSessionWorker,
    SessionConfig,
};
use rmcp::transport::streamable_http_server::session::{
    EventStore, RestoreOutcome, ServerSseMessage, SessionId, SessionManager,
};
use tokio::sync::Notify;
use tokio::sync::mpsc::Receiver;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::http::sessions::{Busy, Due, Ledger};
use crate::Identity;

/// How long a request's events are kept after its answer, for a client that comes back
/// late.
const KEEP_ANSWERED: Duration = Duration::from_mins(1);

/// The most events kept for one request; past it the oldest go first (a client away that
/// long misses them, as it would with rmcp's own cache).
const MOST_KEPT: usize = 4096;

/// How long a session put to sleep or ended has to close its worker.
const CLOSE_WITHIN: Duration = Duration::from_secs(5);

/// rmcp's in-memory sessions, with each request's stream ended once it has been open for
/// `close_after` (when set), and its events kept for the client to come back for.
pub(super) struct PollingSessions {
    local: LocalSessionManager,
    close_after: Option<Duration>,
    kept: Arc<Mutex<KeptByRequest>>,
    ledger: Arc<Ledger>,
}

/// The requests whose events are kept, by session and rmcp's HTTP request number.
type KeptByRequest = HashMap<(SessionId, u64), Arc<Kept>>;

/// The events of one request, as rmcp sent them.
#[derive(Debug, Default)]
struct Kept {
    events: Mutex<Events>,
    changed: Notify,
}

#[derive(Debug, Default)]
struct Events {
    list: VecDeque<(usize, ServerSseMessage)>,
    /// rmcp has sent the last one (the answer, or the session ended).
    ended: bool,
}

impl Kept {
    fn events(&self) -> std::sync::MutexGuard<'_, Events> {
        self.events.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The first event numbered `from` or later. The list is in rmcp's order, which is the
    /// order of the numbers, so a stream's reads cost a search each, not a scan.
    fn next(&self, from: usize) -> Next {
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
enum Next {
    Event(usize, ServerSseMessage),
    NotYet,
    Ended,
}

/// The number rmcp gave an event (`{index}/{request}`).
fn index_of(event: &ServerSseMessage) -> Option<usize> {
    let id = event.event_id.as_deref()?;
    id.split_once('/')
        .map_or(id, |(index, _)| index)
        .parse()
        .ok()
}

/// The HTTP request an event id names (`{index}/{request}`); the session's common stream
/// has none.
fn request_of(event_id: &str) -> Option<(usize, u64)> {
    let (index, request) = event_id.split_once('/')?;
    Some((index.parse().ok()?, request.parse().ok()?))
}

impl PollingSessions {
    /// Sessions whose request streams end after `close_after`, telling clients to
    /// reconnect after `retry` (rmcp's three seconds when `None`), kept in `ledger`.
    pub(super) fn new(
        close_after: Option<Duration>,
        retry: Option<Duration>,
        ledger: Arc<Ledger>,
    ) -> Self {
        let mut local = LocalSessionManager::default();
        if retry.is_some() {
            local.session_config.sse_retry = retry;
        }
        // The ledger ends idle sessions; rmcp's own timer would end one whose call runs
        // long without a word.
        local.session_config.keep_alive = None;
        Self {
            local,
            close_after,
            kept: Arc::default(),
            ledger,
        }
    }

    /// Puts idle sessions to sleep and ends those idle past the timeout, until `stop`.
    pub(super) async fn look_after(self: Arc<Self>, stop: CancellationToken) {
        let tick = self.ledger.limits().tick();
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                () = tokio::time::sleep(tick) => {}
            }
            for (id, due) in self.ledger.due(Instant::now()) {
                // Under rmcp's lock, so no request finds the session between the check and
                // its removal: one that comes after finds it gone and wakes it.
                let handle = {
                    let mut sessions = self.local.sessions.write().await;
                    if !self.ledger.carry_out(&id, due, Instant::now()) {
                        continue;
                    }
                    sessions.remove(&id)
                };
                if due == Due::End {
                    self.forget_kept(&id);
                }
                // On a task of its own: a worker that does not drain its channel must not
                // hold up every other session's sleep and end.
                if let Some(handle) = handle {
                    tokio::spawn(async move {
                        let _ = tokio::time::timeout(CLOSE_WITHIN, handle.close()).await;
                    });
                }
            }
        }
    }

    /// Drops the events kept for session `id`'s requests.
    fn forget_kept(&self, id: &SessionId) {
        self.kept
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|(session, _), _| session != id);
    }

    async fn handle(&self, id: &SessionId) -> Result<LocalSessionHandle, LocalSessionManagerError> {
        self.local
            .sessions
            .read()
            .await
            .get(id)
            .cloned()
            .ok_or_else(|| LocalSessionManagerError::SessionNotFound(id.clone()))
    }

    /// How long the client is told to wait before it reconnects: what each stream's first
    /// event announced too.
    fn retry(&self) -> Duration {
        self.local
            .session_config
            .sse_retry
            .unwrap_or(SessionConfig::DEFAULT_SSE_RETRY)
    }

    /// Starts keeping `receiver`'s events under `key`, until [`KEEP_ANSWERED`] after the
    /// last.
    fn keep(
        &self,
        key: (SessionId, u64),
        mut receiver: Receiver<ServerSseMessage>,
        busy: Busy,
    ) -> Arc<Kept> {
        let kept = Arc::new(Kept::default());
        self.kept
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(key.clone(), Arc::clone(&kept));
        let pumped = Arc::clone(&kept);
        let all = Arc::clone(&self.kept);
        tokio::spawn(async move {
            while let Some(event) = receiver.recv().await {
                let Some(index) = index_of(&event) else {
                    continue;
                };
                let mut events = pumped.events();
                if events.list.len() == MOST_KEPT {
                    events.list.pop_front();
                }
                events.list.push_back((index, event));
                drop(events);
                pumped.changed.notify_waiters();
            }
            pumped.events().ended = true;
            pumped.changed.notify_waiters();
            // The session stays awake while its events are kept: a session woken from
            // sleep numbers its requests from zero again.
            tokio::time::sleep(KEEP_ANSWERED).await;
            let mut all = all.lock().unwrap_or_else(PoisonError::into_inner);
            if all.get(&key).is_some_and(|kept| Arc::ptr_eq(kept, &pumped)) {
                all.remove(&key);
            }
            drop(all);
            drop(busy);
        });
        kept
    }

    /// A client's stream of request `request`'s events from number `from` on, ended after
    /// `close_after` with a retry hint unless the events end first.
    fn stream_of(
        &self,
        (kept, request): (Arc<Kept>, u64),
        from: usize,
        close_after: Duration,
    ) -> impl Stream<Item = ServerSseMessage> + Send + Sync + 'static {
        let deadline = Instant::now() + close_after;
        let retry = self.retry();
        stream::unfold(Some(from), move |next| {
            let kept = Arc::clone(&kept);
            async move {
                let from = next?;
                loop {
                    let changed = kept.changed.notified();
                    tokio::pin!(changed);
                    changed.as_mut().enable();
                    match kept.next(from) {
                        Next::Event(index, event) => return Some((event, Some(index + 1))),
                        Next::NotYet => {}
                        Next::Ended => return None,
                    }
                    tokio::select! {
                        () = changed => {}
                        () = tokio::time::sleep_until(deadline) => {
                            // The hint repeats the id of the last event sent (or of the one
                            // the client resumed from, when this stream sent none), so a
                            // client that tracks ids per stream still knows where it was.
                            let hint = match from.checked_sub(1) {
                                Some(last) => {
                                    ServerSseMessage::priming(format!("{last}/{request}"), retry)
                                }
                                None => ServerSseMessage::retry(retry),
                            };
                            return Some((hint, None));
                        }
                    }
                }
            }
        })
    }
}

impl SessionManager for PollingSessions {
    type Error = LocalSessionManagerError;
    type Transport = WorkerTransport<LocalSessionWorker>;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let (id, transport) = self.local.create_session().await?;
        self.ledger.opened(&id);
        Ok((id, transport))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        mut message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        if let ClientJsonRpcMessage::Request(request) = &mut message {
            let owner = request
                .request
                .extensions()
                .get::<axum::http::request::Parts>()
                .and_then(|parts| parts.extensions.get::<Arc<Identity>>())
                .map(|identity| Arc::from(identity.subject()));
            let params = match &request.request {
                ClientRequest::InitializeRequest(initialize) => Some(initialize.params.clone()),
                _ => None,
            };
            if let Some(remembered) = self.ledger.initialized(id, owner, params) {
                request.request.extensions_mut().insert(remembered);
            }
            self.ledger.share(id).await;
        }
        self.local.initialize_session(id, message).await
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        // Marked used first: a session is put to sleep only under rmcp's lock, after a
        // check that it has not been used since, so this request finds it or wakes it.
        self.ledger.touch(id);
        self.local.has_session(id).await
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        if self.ledger.closed(id) {
            // Fallen asleep: its handle was removed when it was put to sleep, and what is
            // under its id now, if anything, is the session woken since, to be left alone.
            return Ok(());
        }
        self.local.close_session(id).await
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let busy = self.ledger.busy(id);
        let handle = self.handle(id).await?;
        let receiver = handle.establish_request_wise_channel().await?;
        let http_request_id = receiver.http_request_id;
        handle.push_message(message, http_request_id).await?;
        Ok(match (self.close_after, http_request_id) {
            (Some(after), Some(request)) => {
                let kept = self.keep((id.clone(), request), receiver.inner, self.ledger.busy(id));
                in_use(self.stream_of((kept, request), 0, after), busy).left_stream()
            }
            _ => in_use(receiver_stream(receiver.inner), busy).right_stream(),
        })
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        self.ledger.touch(id);
        self.local.accept_message(id, message).await
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let busy = self.ledger.busy(id);
        Ok(in_use(self.local.create_standalone_stream(id).await?, busy))
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let busy = self.ledger.busy(id);
        if let (Some(after), Some((index, request))) =
            (self.close_after, request_of(&last_event_id))
        {
            let kept = self
                .kept
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .get(&(id.clone(), request))
                .cloned();
            if let Some(kept) = kept {
                let stream = self.stream_of((kept, request), index + 1, after);
                return Ok(in_use(stream, busy).left_stream());
            }
        }
        let stream = self.local.resume(id, last_event_id).await?;
        Ok(in_use(stream, busy).right_stream())
    }

    async fn restore_session(
        &self,
        id: SessionId,
    ) -> Result<RestoreOutcome<Self::Transport>, Self::Error> {
        let outcome = self.local.restore_session(id.clone()).await?;
        self.ledger.woke(&id);
        Ok(outcome)
    }

    fn event_store(&self) -> Option<Arc<dyn EventStore>> {
        self.local.event_store()
    }
}

/// `stream`, keeping its session busy while it lasts and marking it used at each event.
fn in_use<S>(stream: S, busy: Busy) -> impl Stream<Item = ServerSseMessage> + Send + Sync + 'static
where
    S: Stream<Item = ServerSseMessage> + Send + Sync + 'static,
{
    stream.map(move |event| {
        busy.used();
        event
    })
}

/// rmcp's events for one request, as they come.
fn receiver_stream(
    receiver: Receiver<ServerSseMessage>,
) -> impl Stream<Item = ServerSseMessage> + Send + Sync + 'static {
    stream::unfold(receiver, |mut receiver| async move {
        let event = receiver.recv().await?;
        Some((event, receiver))
    })
}
