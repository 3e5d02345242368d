//! The live HTTP sessions: how many there are, whose, when each was last used and which
//! streams of it are open. From that, the caps on sessions (per identity and in all), the
//! idle timeout, and sleep: a session idle for a while gives up rmcp's per-session service
//! (its tasks and channels, about 95 KB) and keeps only what it needs to wake
//! ([`Record`], under a kilobyte), which rmcp's session restore brings back at the
//! session's next request. A client's `GET` stream does not keep its session awake: it
//! stays open while the session sleeps, and hears of the server's changes from here
//! ([`listening`]).

mod guards;
mod listening;
mod store;
#[cfg(test)]
mod tests;

pub(in crate::mcp) use self::guards::{Busy, Reservation};
pub(in crate::mcp) use self::listening::{Listening, Mail, Notice, Service};

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::InitializeRequestParams;
use rmcp::transport::streamable_http_server::session::SessionId;
use tokio::sync::Notify;
use tokio::time::Instant;

use self::listening::Inbox;
use crate::mcp::gauges;
use crate::mcp::serve::Remembered;
use crate::mcp::store::{SessionRecord, SessionStore as SharedSessions};
use crate::util::sync::lock;

/// How long a session may go without a request before it ends, unless set.
pub(in crate::mcp) const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_mins(5);
/// The most sessions one server holds at once, unless set.
pub(in crate::mcp) const DEFAULT_MAX_SESSIONS: usize = 1024;
/// The most sessions one identity holds at once, unless set.
pub(in crate::mcp) const DEFAULT_MAX_PER_IDENTITY: usize = 64;

/// How long a session keeps rmcp's service after a stream of it was cut short (at most;
/// half the idle timeout when that is shorter). As long as rmcp keeps a stream's events for
/// a client that resumes it, so sleep takes nothing a client could still ask for.
const KEEP_AWAKE: Duration = Duration::from_mins(1);

/// How long a session whose service holds nothing to resume stays awake without a request:
/// long enough that a client's next request right after the last finds it awake. Nothing is
/// left to resume when every stream of the session ran to its end (each event it carried
/// was handed on), or was cut short more than [`KEEP_AWAKE`] ago.
const QUIET: Duration = Duration::from_secs(5);

/// The caps and the idle timeout, as [`McpServer`](crate::mcp::McpServer) was given them.
#[derive(Debug, Clone, Copy)]
pub(in crate::mcp) struct SessionLimits {
    pub(in crate::mcp) idle_timeout: Duration,
    pub(in crate::mcp) max_sessions: usize,
    pub(in crate::mcp) max_per_identity: usize,
}

impl Default for SessionLimits {
    fn default() -> Self {
        Self {
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            max_sessions: DEFAULT_MAX_SESSIONS,
            max_per_identity: DEFAULT_MAX_PER_IDENTITY,
        }
    }
}

impl SessionLimits {
    /// How long a session stays awake after a stream of it carried an event.
    fn sleep_after(&self) -> Duration {
        KEEP_AWAKE.min(self.idle_timeout / 2)
    }

    /// How long a session with nothing to resume sits idle before it sleeps.
    fn quiet(&self) -> Duration {
        QUIET.min(self.sleep_after())
    }

    /// How often the sessions are looked over.
    pub(in crate::mcp) fn tick(&self) -> Duration {
        (self.sleep_after().min(self.idle_timeout) / 4)
            .clamp(Duration::from_millis(10), Duration::from_secs(5))
    }
}

/// Where a session is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// rmcp serves it.
    Awake,
    /// rmcp made a service for it again, which has not yet been given its handshake.
    Waking,
    /// rmcp was told to end its service, which has not ended yet.
    FallingAsleep,
    /// Only its [`Record`] is left; its next request wakes it.
    Asleep,
}

/// One session, as little as it can be while it sleeps.
struct Record {
    /// The subject of the identity that opened it, when the server has auth.
    owner: Option<Arc<str>>,
    /// The client's `initialize` params, which rmcp replays to wake the session.
    params: Option<Box<InitializeRequestParams>>,
    /// What the client set in the session (log level, subscriptions).
    remembered: Arc<Remembered>,
    last_used: Instant,
    /// When a stream of it that had carried events was last cut short: rmcp's service keeps
    /// those events for a client that resumes the stream.
    last_event: Option<Instant>,
    /// The session's request streams open now.
    busy: u32,
    /// Its `GET` streams open now: the session does not end while one is, but may sleep.
    listening: Vec<Arc<Inbox>>,
    phase: Phase,
    /// Which of rmcp's services of the session runs or ran last: one more at each wake.
    service: u32,
    /// Its handshake is in the shared store: put there by this process, or found there.
    shared: bool,
}

/// Why a session cannot be opened.
#[derive(Debug, Clone)]
pub(in crate::mcp) enum Full {
    /// The server holds as many as it may.
    Server { limit: usize },
    /// This identity holds as many as it may.
    Identity { owner: Arc<str>, limit: usize },
}

/// What [`Ledger::due`] found for a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::mcp) enum Due {
    /// Idle long enough to give up rmcp's service.
    Sleep,
    /// Idle past the timeout: the session ends.
    End,
}

#[derive(Default)]
struct Book {
    /// Looked up several times for every request. Its keys are ids the server made (or that
    /// another replica made and the shared store holds), never a client's choice, so a fast
    /// hasher is safe here.
    sessions: HashMap<SessionId, Record, foldhash::fast::RandomState>,
    /// Sessions per owner, for the per-identity cap.
    per_owner: HashMap<Arc<str>, usize>,
    /// Sessions being opened now (an `initialize` admitted and not yet answered).
    reserved: usize,
    reserved_per_owner: HashMap<Arc<str>, usize>,
}

impl Book {
    fn count(&self, owner: &Arc<str>) -> usize {
        self.per_owner.get(owner).copied().unwrap_or(0)
            + self.reserved_per_owner.get(owner).copied().unwrap_or(0)
    }

    fn remove(&mut self, id: &str) -> Option<Record> {
        let record = self.sessions.remove(id)?;
        gauges::sessions(-1);
        for inbox in &record.listening {
            inbox.end();
        }
        if let Some(owner) = &record.owner {
            decrement(&mut self.per_owner, owner);
        }
        Some(record)
    }
}

/// Takes one from `owner`'s count, forgetting owners at zero.
fn decrement(counts: &mut HashMap<Arc<str>, usize>, owner: &Arc<str>) {
    if let Some(count) = counts.get_mut(owner) {
        *count = count.saturating_sub(1);
        if *count == 0 {
            counts.remove(owner);
        }
    }
}

/// Every session of one HTTP server.
pub(in crate::mcp) struct Ledger {
    limits: SessionLimits,
    book: Mutex<Book>,
    /// Told when a session's phase changes, for a request waiting for it to fall asleep (to
    /// wake it) or to wake (to send it anything).
    moved: Notify,
    /// Where the handshakes are shared with other server processes, when they are.
    shared: Option<Arc<dyn SharedSessions>>,
}

impl Drop for Ledger {
    fn drop(&mut self) {
        let held = lock(&self.book).sessions.len();
        gauges::sessions(-i32::try_from(held).unwrap_or(i32::MAX));
    }
}

impl Ledger {
    pub(in crate::mcp) fn new(
        limits: SessionLimits,
        shared: Option<Arc<dyn SharedSessions>>,
    ) -> Arc<Self> {
        Arc::new(Self {
            limits,
            book: Mutex::default(),
            moved: Notify::new(),
            shared,
        })
    }

    /// Where the handshakes are shared, when they are.
    pub(in crate::mcp) fn shared(&self) -> Option<&Arc<dyn SharedSessions>> {
        self.shared.as_ref()
    }

    /// Whether session `id` is held here, awake or asleep.
    pub(in crate::mcp) fn knows(&self, id: &str) -> bool {
        lock(&self.book).sessions.contains_key(id)
    }

    /// Holds session `id`, which another process opened, asleep: its next request wakes it
    /// here with `params`, as a session of this process's own that slept.
    pub(in crate::mcp) fn adopt(
        &self,
        id: &str,
        owner: Option<Arc<str>>,
        params: InitializeRequestParams,
    ) {
        let mut book = lock(&self.book);
        if book.sessions.contains_key(id) {
            return;
        }
        if let Some(owner) = &owner {
            *book.per_owner.entry(Arc::clone(owner)).or_default() += 1;
        }
        book.sessions.insert(
            SessionId::from(id),
            Record {
                owner,
                params: Some(Box::new(params)),
                remembered: Arc::new(Remembered::told_apart()),
                last_used: Instant::now(),
                last_event: None,
                busy: 0,
                listening: Vec::new(),
                phase: Phase::Asleep,
                service: 0,
                shared: true,
            },
        );
        gauges::sessions(1);
    }

    pub(in crate::mcp) fn limits(&self) -> SessionLimits {
        self.limits
    }

    /// Holds a place for a session `owner` is opening, unless a cap is reached.
    pub(in crate::mcp) fn reserve(
        self: &Arc<Self>,
        owner: Option<Arc<str>>,
    ) -> Result<Reservation, Full> {
        let mut book = lock(&self.book);
        if book.sessions.len() + book.reserved >= self.limits.max_sessions {
            return Err(Full::Server {
                limit: self.limits.max_sessions,
            });
        }
        if let Some(owner) = &owner {
            if book.count(owner) >= self.limits.max_per_identity {
                return Err(Full::Identity {
                    owner: Arc::clone(owner),
                    limit: self.limits.max_per_identity,
                });
            }
            *book
                .reserved_per_owner
                .entry(Arc::clone(owner))
                .or_default() += 1;
        }
        book.reserved += 1;
        Ok(Reservation {
            ledger: Arc::clone(self),
            owner,
        })
    }

    /// rmcp opened session `id`.
    pub(in crate::mcp) fn opened(&self, id: &SessionId) {
        let before = lock(&self.book).sessions.insert(
            id.clone(),
            Record {
                owner: None,
                params: None,
                remembered: Arc::new(Remembered::told_apart()),
                last_used: Instant::now(),
                last_event: None,
                busy: 0,
                listening: Vec::new(),
                phase: Phase::Awake,
                service: 0,
                shared: false,
            },
        );
        if before.is_none() {
            gauges::sessions(1);
        }
    }

    /// Session `id` is being initialized, by `owner` with `params` (a first handshake, or
    /// rmcp's replay when it wakes); what the client set in it, for its handler.
    pub(in crate::mcp) fn initialized(
        &self,
        id: &str,
        owner: Option<Arc<str>>,
        params: Option<InitializeRequestParams>,
    ) -> Option<Arc<Remembered>> {
        let mut book = lock(&self.book);
        let book = &mut *book;
        let record = book.sessions.get_mut(id)?;
        record.last_used = Instant::now();
        if record.owner.is_none()
            && let Some(owner) = owner
        {
            *book.per_owner.entry(Arc::clone(&owner)).or_default() += 1;
            record.owner = Some(owner);
        }
        if record.params.is_none() {
            record.params = params.map(Box::new);
        }
        Some(Arc::clone(&record.remembered))
    }

    /// Shares session `id`'s handshake with the other processes, when sessions are shared:
    /// awaited before the client hears its session's id, so its next request finds the
    /// session on whichever replica it lands.
    pub(in crate::mcp) async fn share(&self, id: &str) {
        let Some(shared) = &self.shared else {
            return;
        };
        let handshake = {
            let mut book = lock(&self.book);
            let Some(record) = book.sessions.get_mut(id) else {
                return;
            };
            // Once: rmcp's replay of the handshake when a session wakes puts nothing back,
            // so a session its client ended elsewhere is not shared again.
            if record.shared {
                return;
            }
            let Some(params) = &record.params else {
                return;
            };
            record.shared = true;
            SessionRecord::new(
                record.owner.as_deref().map(str::to_owned),
                serde_json::to_value(params).unwrap_or_default(),
            )
        };
        if let Err(error) = shared.put(id, &handshake, self.limits.idle_timeout).await {
            tracing::warn!(session = %id, %error, "the session could not be shared");
        }
    }

    /// A request for session `id` came: it is in use now. Whether the session is waking.
    pub(in crate::mcp) fn touch(&self, id: &str) -> bool {
        let mut book = lock(&self.book);
        let Some(record) = book.sessions.get_mut(id) else {
            return false;
        };
        record.last_used = Instant::now();
        record.phase == Phase::Waking
    }

    /// A stream of session `id` opens; the session is busy until the guard is dropped.
    pub(in crate::mcp) fn busy(self: &Arc<Self>, id: &SessionId) -> Busy {
        let mut waking = false;
        if let Some(record) = lock(&self.book).sessions.get_mut(id) {
            record.busy += 1;
            record.last_used = Instant::now();
            waking = record.phase == Phase::Waking;
        }
        Busy {
            ledger: Arc::clone(self),
            id: id.clone(),
            carried: false,
            ended: false,
            waking,
        }
    }

    /// The subject that opened session `id`, if the session is known and was opened with a
    /// token.
    pub(in crate::mcp) fn owner_of(&self, id: &str) -> Option<Arc<str>> {
        lock(&self.book)
            .sessions
            .get(id)
            .and_then(|record| record.owner.clone())
    }

    /// The sessions that are due to sleep or end at `now`.
    pub(in crate::mcp) fn due(&self, now: Instant) -> Vec<(SessionId, Due)> {
        lock(&self.book)
            .sessions
            .iter()
            .filter_map(|(id, record)| Some((id.clone(), self.due_of(record, now)?)))
            .collect()
    }

    fn due_of(&self, record: &Record, now: Instant) -> Option<Due> {
        if record.busy > 0 {
            return None;
        }
        let idle = now.saturating_duration_since(record.last_used);
        // Events a client may still resume from keep the service awake.
        let keeps_events = record
            .last_event
            .is_some_and(|at| now.saturating_duration_since(at) < self.limits.sleep_after());
        if idle >= self.limits.idle_timeout && record.listening.is_empty() {
            Some(Due::End)
        } else if idle >= self.limits.quiet()
            && !keeps_events
            && matches!(record.phase, Phase::Awake | Phase::Waking)
            && record.params.is_some()
        {
            Some(Due::Sleep)
        } else {
            None
        }
    }

    /// Carries out `due` for session `id` if it is still due at `now` (a request may have
    /// come since it was found): true when rmcp's service must be ended.
    pub(in crate::mcp) fn carry_out(&self, id: &str, due: Due, now: Instant) -> bool {
        let mut book = lock(&self.book);
        let Some(record) = book.sessions.get_mut(id) else {
            return false;
        };
        if self.due_of(record, now) != Some(due) {
            return false;
        }
        match due {
            Due::Sleep => {
                record.phase = Phase::FallingAsleep;
                drop(book);
                self.moved.notify_waiters();
                true
            }
            Due::End => {
                let awake = matches!(record.phase, Phase::Awake | Phase::Waking);
                book.remove(id);
                drop(book);
                self.moved.notify_waiters();
                awake
            }
        }
    }

    /// rmcp's service of session `id` ended, or the client closed the session: a session
    /// falling asleep is asleep now (and `true` says so: its handle was taken away already,
    /// and the one under its id may be a new one, woken meanwhile), any other has ended.
    pub(in crate::mcp) fn closed(&self, id: &str) -> bool {
        let mut book = lock(&self.book);
        match book.sessions.get_mut(id) {
            Some(record) if record.phase == Phase::FallingAsleep => {
                record.phase = Phase::Asleep;
                drop(book);
                self.moved.notify_waiters();
                true
            }
            Some(_) => {
                book.remove(id);
                drop(book);
                self.moved.notify_waiters();
                false
            }
            None => false,
        }
    }

    /// The client ended session `id`.
    pub(in crate::mcp) fn forget(&self, id: &str) {
        lock(&self.book).remove(id);
        self.moved.notify_waiters();
    }

    /// Returns once session `id` is not waking (rmcp's worker of a waking session takes
    /// nothing before its replayed handshake, and quits at anything else), or after 30
    /// seconds.
    pub(in crate::mcp) async fn until_woken(&self, id: &str) {
        let waited = tokio::time::timeout(Duration::from_secs(30), async {
            loop {
                let moved = self.moved.notified();
                tokio::pin!(moved);
                moved.as_mut().enable();
                if !self.is_waking(id) {
                    return;
                }
                moved.await;
            }
        });
        let _ = waited.await;
    }

    /// Whether session `id` is waking.
    fn is_waking(&self, id: &str) -> bool {
        lock(&self.book)
            .sessions
            .get(id)
            .is_some_and(|record| record.phase == Phase::Waking)
    }

    /// The `initialize` params to wake session `id` with: once it is asleep (waiting for it
    /// to fall asleep first), none when it is not known.
    pub(in crate::mcp) async fn to_wake(&self, id: &str) -> Option<InitializeRequestParams> {
        let waited = tokio::time::timeout(Duration::from_secs(30), async {
            loop {
                let moved = self.moved.notified();
                tokio::pin!(moved);
                moved.as_mut().enable();
                {
                    let mut book = lock(&self.book);
                    let record = book.sessions.get_mut(id)?;
                    match record.phase {
                        Phase::Asleep => {
                            record.last_used = Instant::now();
                            return record.params.as_deref().cloned();
                        }
                        Phase::Awake | Phase::Waking => return None,
                        Phase::FallingAsleep => {}
                    }
                }
                moved.await;
            }
        });
        waited.await.ok().flatten()
    }

    /// rmcp made a service for session `id` again: false when the session is no longer
    /// known (it ended meanwhile), and the service must go.
    pub(in crate::mcp) fn waking(&self, id: &str) -> bool {
        let mut book = lock(&self.book);
        let Some(record) = book.sessions.get_mut(id) else {
            return false;
        };
        record.phase = Phase::Waking;
        record.last_used = Instant::now();
        true
    }

    /// rmcp's service of session `id` is back, its handshake given: its `GET` streams may
    /// join it.
    pub(in crate::mcp) fn woke(&self, id: &str) {
        let mut book = lock(&self.book);
        // Put to sleep or ended while its handshake was replayed: that stands.
        let Some(record) = book
            .sessions
            .get_mut(id)
            .filter(|record| record.phase == Phase::Waking)
        else {
            return;
        };
        record.phase = Phase::Awake;
        record.service = record.service.wrapping_add(1);
        record.last_used = Instant::now();
        for inbox in &record.listening {
            inbox.woke();
        }
        drop(book);
        self.moved.notify_waiters();
    }

    /// How many sessions there are, and how many of them are awake.
    pub(in crate::mcp) fn count(&self) -> SessionCount {
        let book = lock(&self.book);
        let awake = book
            .sessions
            .values()
            .filter(|record| record.phase != Phase::Asleep)
            .count();
        SessionCount {
            held: book.sessions.len(),
            awake,
        }
    }
}

/// The sessions a streamable HTTP server holds, from
/// [`McpHttpServer::sessions`](crate::mcp::McpHttpServer::sessions).
///
/// A session is awake while rmcp's service of it runs, which holds its tasks and channels
/// (about 95 KB): while a request of it is answered, for five to ten seconds after its last
/// request, and for a minute after a stream of it was cut short (its events are kept for a
/// client that resumes the stream). Otherwise it sleeps, holding under a kilobyte, and its
/// next request wakes it. A client's `GET` stream does not keep it awake: the stream stays
/// open while it sleeps, and carries the server's changes all the same.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct SessionCount {
    /// Sessions open, awake or asleep.
    pub held: usize,
    /// Of those, the sessions awake.
    pub awake: usize,
}
