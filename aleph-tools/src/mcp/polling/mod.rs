//! SSE polling (SEP-1699): the HTTP server ends the event stream of a request that runs
//! too long, and the client reconnects with `Last-Event-ID` for the rest of the answer.
//!
//! rmcp hands each request's events to one stream and forgets a request once its answer is
//! sent, so an answer that comes while the client is away would be lost. Here each request
//! being polled gets a pump that moves rmcp's events into a [`Kept`] list as they come; the
//! client's streams read that list, the first until the time is up and each one after it
//! from the event the client names, and the list outlives the answer by [`KEEP_ANSWERED`].
//!
//! With an [`EventLog`] shared by replicas, every request's events are kept so, and logged
//! as well ([`shared`]): a client resuming on another replica reads them there.
//!
//! A kept stream is named by this process and a number of its own, so its events' ids
//! (`{index}/{stream}`) name it on every replica, and in every life of its session.
//!
//! The same manager keeps the [`Ledger`] of sessions up to date (what each is doing) and
//! carries out what it decides: a session idle for a while sleeps (rmcp's service of it
//! ends, rmcp's session restore wakes it), one idle past the timeout ends.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use futures_util::Stream;
use futures_util::stream::{self, StreamExt as _};
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, GetExtensions as _, ServerJsonRpcMessage};
use rmcp::transport::WorkerTransport;
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionHandle, LocalSessionManager, LocalSessionManagerError, LocalSessionWorker,
    SessionConfig, SessionError,
};
use rmcp::transport::streamable_http_server::session::{
    EventStore, RestoreOutcome, ServerSseMessage, SessionId, SessionManager, SessionRestoreMarker,
};
use serde_json::Value;
use tokio::sync::mpsc::Receiver;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use self::in_use::{Received, in_use};
use self::kept::{Kept, Next, index_of, stream_of_id};
use self::listen::Listener;
use self::relay::{KNOWN_FOR, LOOK_EVERY, Route, TAKE_AT_MOST, relay, relayed, route, tag_request};
use self::shared::{Writer, first_read, read_log};
use super::http::sessions::{Busy, Due, Ledger, Service};
use super::store::EventLog;
use crate::Identity;

mod in_use;
mod kept;
mod listen;
mod relay;
mod shared;

/// How long a request's events are kept after its answer, for a client that comes back
/// late.
const KEEP_ANSWERED: Duration = Duration::from_mins(1);

/// How long a session put to sleep or ended has to close its worker.
const CLOSE_WITHIN: Duration = Duration::from_secs(5);

/// rmcp's in-memory sessions, with each request's stream ended once it has been open for
/// `close_after` (when set), and its events kept for the client to come back for.
pub(in crate::mcp) struct PollingSessions {
    /// Itself, for the `GET` streams that join a woken session's service.
    me: Weak<Self>,
    local: LocalSessionManager,
    close_after: Option<Duration>,
    kept: Arc<Mutex<KeptByRequest>>,
    ledger: Arc<Ledger>,
    log: Option<Arc<dyn EventLog>>,
    /// Names the kept streams of this process: random, then a number.
    tag: Arc<str>,
    next_stream: AtomicU64,
}

/// The requests whose events are kept, by session and stream name.
type KeptByRequest = HashMap<(SessionId, Arc<str>), Arc<Kept>>;

/// The JSON-RPC id of a request, which an error ending its stream answers.
fn request_id(message: &ClientJsonRpcMessage) -> Value {
    match message {
        ClientJsonRpcMessage::Request(request) => {
            serde_json::to_value(&request.id).unwrap_or_default()
        }
        _ => Value::Null,
    }
}

impl PollingSessions {
    /// Sessions whose request streams end after `close_after`, telling clients to
    /// reconnect after `retry` (rmcp's three seconds when `None`), kept in `ledger`.
    pub(super) fn new(
        close_after: Option<Duration>,
        retry: Option<Duration>,
        ledger: Arc<Ledger>,
        log: Option<Arc<dyn EventLog>>,
    ) -> Arc<Self> {
        let mut local = LocalSessionManager::default();
        if retry.is_some() {
            local.session_config.sse_retry = retry;
        }
        // The ledger ends idle sessions; rmcp's own timer would end one whose call runs
        // long without a word.
        local.session_config.keep_alive = None;
        Arc::new_cyclic(|me| Self {
            me: me.clone(),
            local,
            close_after,
            kept: Arc::default(),
            ledger,
            log,
            tag: Arc::from(&uuid::Uuid::new_v4().simple().to_string()[..16]),
            next_stream: AtomicU64::new(0),
        })
    }

    /// The name requests to clients carry, so that their answers find this process: set
    /// while sessions are shared.
    fn asker(&self) -> Option<Arc<str>> {
        self.log.is_some().then(|| Arc::clone(&self.tag))
    }

    /// `events` with the requests they carry naming this process, when sessions are shared.
    fn tagged<S>(&self, events: S) -> impl Stream<Item = ServerSseMessage> + Send + Sync + 'static
    where
        S: Stream<Item = ServerSseMessage> + Send + Sync + 'static,
    {
        let asker = self.asker();
        events.map(move |event| match &asker {
            Some(asker) => tag_request(event, asker),
            None => event,
        })
    }

    /// Hands the session services of this process the answers other processes relayed to
    /// it, until `stop`.
    pub(super) async fn take_answers(self: Arc<Self>, stop: CancellationToken) {
        let Some(store) = self.ledger.shared().cloned() else {
            return;
        };
        let mut warned = false;
        loop {
            // Each look also keeps this process known to the others as one to relay to.
            match store.take_relayed(&self.tag, TAKE_AT_MOST, KNOWN_FOR).await {
                Ok(taken) => {
                    warned = false;
                    for answer in taken {
                        if let Some(message) = relayed(&answer.message, &self.tag) {
                            let session = SessionId::from(answer.session);
                            // A session no longer here has nobody waiting for the answer.
                            let _ = self.local.accept_message(&session, message).await;
                        }
                    }
                }
                Err(error) => {
                    if !std::mem::replace(&mut warned, true) {
                        tracing::warn!(%error, "answers relayed from other replicas cannot be taken");
                    }
                }
            }
            tokio::select! {
                () = stop.cancelled() => return,
                () = tokio::time::sleep(LOOK_EVERY) => {}
            }
        }
    }

    /// The channel of session `id`'s service number `service` for a `GET` stream, when the
    /// session is awake with that service.
    async fn join(&self, id: &SessionId, service: u32) -> Option<listen::Events> {
        let events = self.local.create_standalone_stream(id).await.ok()?;
        // Asleep and woken again meanwhile: the channel is a later service's, which the
        // stream joins by its own number.
        if self.ledger.service(id, Some(service)) != Service::Same {
            return None;
        }
        Some(Box::pin(self.tagged(events)))
    }

    /// A `GET` stream of session `id` over `events`, the channel of the session's service:
    /// held in the ledger before the channel opens, so a wake in between is not missed.
    async fn listener<S>(
        &self,
        id: &SessionId,
        events: impl Future<Output = Result<S, LocalSessionManagerError>>,
    ) -> Result<Listener, LocalSessionManagerError>
    where
        S: Stream<Item = ServerSseMessage> + Send + Sync + 'static,
    {
        self.ledger.until_woken(id).await;
        let (listening, service) = self
            .ledger
            .listen(id)
            .ok_or_else(|| LocalSessionManagerError::SessionNotFound(id.clone()))?;
        let events: listen::Events = Box::pin(self.tagged(events.await?));
        // Only a stream that opened takes the place of an older one past the cap.
        self.ledger.cap_listening(id);
        Ok(Listener::new(self.me.clone(), listening, events, service))
    }

    /// A name for a stream to keep, unique across processes and lives of a session.
    fn stream_name(&self) -> Arc<str> {
        let number = self.next_stream.fetch_add(1, Ordering::Relaxed);
        Arc::from(format!("{}{number:x}", self.tag))
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

    /// Starts keeping `receiver`'s events under `key` (logging them too when `writer` is
    /// given), until [`KEEP_ANSWERED`] after the last.
    fn keep(
        &self,
        key: (SessionId, Arc<str>),
        mut receiver: Receiver<ServerSseMessage>,
        busy: Busy,
        writer: Option<Writer>,
    ) -> Arc<Kept> {
        let kept = Arc::new(Kept::default());
        self.kept
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(key.clone(), Arc::clone(&kept));
        let pumped = Arc::clone(&kept);
        let all = Arc::clone(&self.kept);
        let asker = self.asker();
        // The log is written on a task of its own: a slow store never holds up the stream,
        // nor the session behind it.
        let log = writer.map(Writer::spawn);
        tokio::spawn(async move {
            let mut overflowed = false;
            while let Some(event) = receiver.recv().await {
                // What else is there already goes to the log in the same write.
                let mut batch = vec![event];
                while batch.len() < 64
                    && let Ok(event) = receiver.try_recv()
                {
                    batch.push(event);
                }
                let numbered = renamed(batch, &key.1, asker.as_deref());
                pumped.push(&numbered);
                if let Some(log) = &log
                    && log.try_send(numbered).is_err()
                    && !std::mem::replace(&mut overflowed, true)
                {
                    tracing::warn!(
                        stream = %key.1,
                        "the event log falls behind; events of this stream are not shared"
                    );
                }
            }
            pumped.events().ended = true;
            pumped.changed.notify_waiters();
            // The log's task ends the stream there once it has written the rest.
            drop(log);
            // The session stays awake while its events are kept.
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

    /// A client's stream of kept stream `stream`'s events from number `from` on, ended after
    /// `close_after` (when set) with a retry hint unless the events end first.
    fn stream_of(
        &self,
        (kept, stream): (Arc<Kept>, Arc<str>),
        from: usize,
        close_after: Option<Duration>,
    ) -> impl Stream<Item = ServerSseMessage> + Send + Sync + 'static {
        let deadline = close_after.map(|after| Instant::now() + after);
        let retry = self.retry();
        stream::unfold(Some(from), move |next| {
            let kept = Arc::clone(&kept);
            let stream = Arc::clone(&stream);
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
                    let Some(deadline) = deadline else {
                        changed.await;
                        continue;
                    };
                    tokio::select! {
                        () = changed => {}
                        () = tokio::time::sleep_until(deadline) => {
                            // The hint repeats the id of the last event sent (or of the one
                            // the client resumed from, when this stream sent none), so a
                            // client that tracks ids per stream still knows where it was.
                            let hint = match from.checked_sub(1) {
                                Some(last) => {
                                    ServerSseMessage::priming(format!("{last}/{stream}"), retry)
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

/// rmcp's events numbered, with ids naming the kept stream `stream`, and the requests they
/// carry naming process `asker` when sessions are shared.
fn renamed(
    events: Vec<ServerSseMessage>,
    stream: &str,
    asker: Option<&str>,
) -> Vec<(usize, ServerSseMessage)> {
    events
        .into_iter()
        .filter_map(|mut event| {
            let index = index_of(&event)?;
            event.event_id = Some(format!("{index}/{stream}"));
            if let Some(asker) = asker {
                event = tag_request(event, asker);
            }
            Some((index, event))
        })
        .collect()
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
        // rmcp's replay of the handshake, as it wakes the session.
        let restored = match &message {
            ClientJsonRpcMessage::Request(request) => request
                .request
                .extensions()
                .get::<SessionRestoreMarker>()
                .is_some(),
            _ => false,
        };
        let answer = self.local.initialize_session(id, message).await?;
        if restored {
            // Only now may its `GET` streams join the service: rmcp's worker takes nothing
            // before the handshake.
            self.ledger.woke(id);
        }
        Ok(answer)
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
        if busy.waking() {
            self.ledger.until_woken(id).await;
        }
        let handle = self.handle(id).await?;
        let receiver = handle.establish_request_wise_channel().await?;
        let http_request_id = receiver.http_request_id;
        let request_id = request_id(&message);
        handle.push_message(message, http_request_id).await?;
        let keeps = self.close_after.is_some() || self.log.is_some();
        Ok(match http_request_id {
            Some(_) if keeps => {
                let stream = self.stream_name();
                let writer = self.log.as_ref().map(|log| {
                    Writer::new(
                        Arc::clone(log),
                        Arc::from(&**id),
                        Arc::clone(&stream),
                        request_id,
                    )
                });
                let key = (id.clone(), Arc::clone(&stream));
                let kept = self.keep(key, receiver.inner, self.ledger.busy(id), writer);
                let events = self.stream_of((kept, stream), 0, self.close_after);
                in_use(events, busy).left_stream()
            }
            _ => Received::new(receiver.inner, busy).right_stream(),
        })
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        if self.ledger.touch(id) {
            self.ledger.until_woken(id).await;
        }
        let Some(asker) = self.asker() else {
            return self.local.accept_message(id, message).await;
        };
        match route(message, &asker) {
            Route::Here(message) => self.local.accept_message(id, message).await,
            Route::Relay(process, message) => {
                if let Some(store) = self.ledger.shared() {
                    relay(&**store, &process, id, &message).await;
                }
                Ok(())
            }
        }
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.listener(id, self.local.create_standalone_stream(id))
            .await
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let busy = self.ledger.busy(id);
        if busy.waking() {
            self.ledger.until_woken(id).await;
        }
        if let Some((index, stream)) = stream_of_id(&last_event_id) {
            let key = (id.clone(), Arc::<str>::from(stream));
            let kept = self
                .kept
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .get(&key)
                .cloned();
            if let Some(kept) = kept {
                let from = index.saturating_add(1);
                let events = self.stream_of((kept, key.1), from, self.close_after);
                return Ok(in_use(events, busy).left_stream().left_stream());
            }
            // Kept by another replica, if by any.
            if let Some(log) = &self.log {
                let from = u64::try_from(index).unwrap_or(u64::MAX).saturating_add(1);
                let Some(first) = first_read(&**log, id, stream, from).await else {
                    return Err(SessionError::InvalidEventId.into());
                };
                let names = (Arc::from(&**id), key.1);
                let when = (self.close_after, self.retry());
                let events = read_log(Arc::clone(log), names, from, first, when);
                return Ok(Received::new(events, busy).right_stream().left_stream());
            }
        }
        if !last_event_id.contains('/') {
            // The client's `GET` stream, resumed: it goes on while the session sleeps, as a
            // new one does.
            drop(busy);
            let listener = match listen::life_of(&last_event_id) {
                // From the service the session has now: the events after it.
                Some((service, index))
                    if self.ledger.service(id, Some(service)) == Service::Same =>
                {
                    self.listener(id, self.local.resume(id, index.to_owned()))
                        .await?
                }
                // From a service the session has had since: its events are gone.
                Some(_) => {
                    self.listener(id, self.local.create_standalone_stream(id))
                        .await?
                }
                // An id of rmcp's own (the stream's first event's).
                None => {
                    self.listener(id, self.local.resume(id, last_event_id))
                        .await?
                }
            };
            return Ok(listener.left_stream().right_stream());
        }
        let events = self.local.resume(id, last_event_id).await?;
        Ok(in_use(self.tagged(events), busy)
            .right_stream()
            .right_stream())
    }

    async fn restore_session(
        &self,
        id: SessionId,
    ) -> Result<RestoreOutcome<Self::Transport>, Self::Error> {
        let outcome = self.local.restore_session(id.clone()).await?;
        if matches!(outcome, RestoreOutcome::Restored(_)) && !self.ledger.waking(&id) {
            // Ended while it was being woken: the service just made goes, and the request
            // is told the session is not found.
            let handle = self.local.sessions.write().await.remove(&id);
            if let Some(handle) = handle {
                tokio::spawn(async move {
                    let _ = tokio::time::timeout(CLOSE_WITHIN, handle.close()).await;
                });
            }
            return Ok(RestoreOutcome::NotSupported);
        }
        Ok(outcome)
    }

    fn event_store(&self) -> Option<Arc<dyn EventStore>> {
        self.local.event_store()
    }
}
