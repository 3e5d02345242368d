//! Stores that server processes share, so that a client whose requests land on different
//! replicas behind a load balancer finds what it started on another.
//!
//! [`TaskStore`] keeps MCP tasks: a task runs in the process whose replica the client started
//! it on, which writes its state to the store as it changes; any replica answers
//! `tasks/get` from the store, and `tasks/cancel` and `tasks/update` reach the running
//! process through it. The running process renews a lease on each of its tasks; a task whose
//! lease ran out (its process stopped) is reported failed, never left working.
//!
//! [`SessionStore`] keeps the handshakes of streamable HTTP sessions, so that a replica that
//! did not open a session wakes it when one of its requests lands there, as a replica wakes
//! a session of its own that slept; it also relays a client's answer to a question (an
//! elicitation, a sampling request) to the replica whose tool asked it. [`EventLog`] keeps the events each request sent on its
//! stream, so that a client whose stream broke resumes it (`Last-Event-ID`) on any replica,
//! while the request still runs on the one it landed on.
//!
//! Without stores, tasks and sessions live in the memory of the process that holds them.
//! [`RedisStore`] (feature `redis`) keeps all three in Redis or Valkey.

use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::tool::BoxFuture;

#[cfg(feature = "redis")]
mod redis;

#[cfg(feature = "redis")]
pub use self::redis::RedisStore;

/// A task as the store keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct TaskRecord {
    /// The task's id (random: a client cannot guess another's).
    pub id: String,
    /// The subject of the identity that started it, when the server authenticates; nobody
    /// else finds it.
    pub owner: Option<String>,
    /// When it started, in milliseconds since the Unix epoch.
    pub created_ms: u64,
    /// When its state last changed, in milliseconds since the Unix epoch.
    pub updated_ms: u64,
    /// Where it is, as MCP writes a task in `tasks/get` (`{"taskId": …, "status":
    /// "working", …}`, with `inputRequests`, `result` or `error` as its status has them).
    pub payload: Value,
    /// What the tool last said of its progress.
    pub message: Option<String>,
    /// Until when the process running it vouches that it runs, in milliseconds since the
    /// Unix epoch; renewed while it runs.
    pub lease_until_ms: u64,
}

impl TaskRecord {
    /// A record of the task `id` with this payload; times and lease left at zero.
    pub fn new(id: impl Into<String>, payload: Value) -> Self {
        Self {
            id: id.into(),
            owner: None,
            created_ms: 0,
            updated_ms: 0,
            payload,
            message: None,
            lease_until_ms: 0,
        }
    }
}

/// What other processes asked of a running task since its process last looked.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct TaskSignals {
    /// `tasks/cancel` was called.
    pub cancelled: bool,
    /// The `inputResponses` objects of the `tasks/update` calls, oldest first; taken, so
    /// each is handed over once.
    pub inputs: Vec<Value>,
}

/// Why a store could not do what it was asked.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The store keeps as many tasks as the server allows.
    #[error("the store keeps {most} tasks already; try again when older ones have expired")]
    Full {
        /// The limit.
        most: usize,
    },
    /// The store could not be reached or refused the command.
    #[error("the shared store failed: {0}")]
    Unavailable(String),
}

/// Where server processes keep the MCP tasks they share.
///
/// Every method is one short command; the running process calls
/// [`signals`](Self::signals) and [`save`](Self::save) a few times a second per task. An
/// implementation keeps each task for the `ttl` it was created with, from its creation.
pub trait TaskStore: Send + Sync + 'static {
    /// Keeps `task` for `ttl`, unless `most` tasks are kept already
    /// ([`StoreError::Full`]).
    fn create<'a>(
        &'a self,
        task: &'a TaskRecord,
        ttl: Duration,
        most: usize,
    ) -> BoxFuture<'a, Result<(), StoreError>>;

    /// The task `id`, if it is kept.
    fn load<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<TaskRecord>, StoreError>>;

    /// Replaces the record of a kept task (its state, message and lease), keeping its
    /// expiry; `false`, changing nothing, when the task is no longer kept or its record
    /// says it ended (completed, failed or cancelled), since an end stands.
    fn save<'a>(&'a self, task: &'a TaskRecord) -> BoxFuture<'a, Result<bool, StoreError>>;

    /// Asks the task `id` to stop; `false` when it is not kept.
    fn cancel<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<bool, StoreError>>;

    /// Hands `input` (a `tasks/update`'s `inputResponses`) to the task `id`; `false` when it
    /// is not kept.
    fn send_input<'a>(
        &'a self,
        id: &'a str,
        input: &'a Value,
    ) -> BoxFuture<'a, Result<bool, StoreError>>;

    /// Whether the task `id` was asked to stop, and the inputs sent to it since the last
    /// call, which are taken.
    fn signals<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<TaskSignals, StoreError>>;
}

/// A streamable HTTP session's handshake, as a store keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SessionRecord {
    /// The subject of the identity that opened it, when the server authenticates; a request
    /// of another identity does not wake it.
    pub owner: Option<String>,
    /// The client's `initialize` params, which wake the session.
    pub initialize: Value,
}

impl SessionRecord {
    /// The handshake of a session `owner` opened with `initialize`.
    pub fn new(owner: Option<String>, initialize: Value) -> Self {
        Self { owner, initialize }
    }
}

/// Where server processes keep the handshakes of the streamable HTTP sessions they share.
///
/// A record lives for the `ttl` given when it was last put or refreshed: the session's idle
/// timeout, renewed as the session is used.
pub trait SessionStore: Send + Sync + 'static {
    /// Keeps the handshake of session `id` for `ttl`.
    fn put<'a>(
        &'a self,
        id: &'a str,
        record: &'a SessionRecord,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<(), StoreError>>;

    /// The handshake of session `id`, if it is kept.
    fn get<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<SessionRecord>, StoreError>>;

    /// Keeps session `id` for `ttl` from now, if it is kept.
    fn refresh<'a>(&'a self, id: &'a str, ttl: Duration) -> BoxFuture<'a, Result<(), StoreError>>;

    /// Forgets session `id` (its client ended it).
    fn remove<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<(), StoreError>>;

    /// Hands `message` (a client's answer, as JSON, to a question that process `process`
    /// asked in session `session`) to that process; `false`, keeping nothing, when no such
    /// process takes answers (it has not called [`take_relayed`](Self::take_relayed) within
    /// its `ttl`). An implementation keeps what a live process has not taken for a minute,
    /// and at most its newest 1024.
    fn relay<'a>(
        &'a self,
        process: &'a str,
        session: &'a str,
        message: &'a str,
    ) -> BoxFuture<'a, Result<bool, StoreError>>;

    /// Takes at most `most` of the messages relayed to process `process`, oldest first, each
    /// with its session; and keeps `process` known as one that takes answers for `ttl`.
    fn take_relayed<'a>(
        &'a self,
        process: &'a str,
        most: usize,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<Vec<Relayed>, StoreError>>;
}

/// A client's answer relayed to the process that asked (see [`SessionStore::relay`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Relayed {
    /// The session it was sent in.
    pub session: String,
    /// The JSON-RPC message, as JSON.
    pub message: String,
}

impl Relayed {
    /// `message`, sent in `session`.
    pub fn new(session: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            session: session.into(),
            message: message.into(),
        }
    }
}

/// One event of a request's stream, as an [`EventLog`] keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LoggedEvent {
    /// Its number in the stream, from zero; the client names it to resume after it.
    pub index: u64,
    /// The event, as JSON the server wrote and reads back.
    pub event: String,
}

impl LoggedEvent {
    /// Event number `index` of a stream.
    pub fn new(index: u64, event: impl Into<String>) -> Self {
        Self {
            index,
            event: event.into(),
        }
    }
}

/// Where a request's stream is, as an [`EventLog`] keeps it beside its events.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct StreamState {
    /// The answer was sent: no event follows.
    pub ended: bool,
    /// Until when the process answering the request vouches that it runs, in milliseconds
    /// since the Unix epoch; renewed while it runs. A stream that has not ended when its
    /// lease runs out is ended with an error by the first reader to see it.
    pub lease_until_ms: u64,
    /// The JSON-RPC id of the request, which that error answers.
    pub request_id: Value,
}

impl StreamState {
    /// The state of a stream answering the request `request_id`: not ended, its lease at
    /// zero.
    pub fn new(request_id: Value) -> Self {
        Self {
            ended: false,
            lease_until_ms: 0,
            request_id,
        }
    }
}

/// What [`EventLog::read`] found: the events asked for and where the stream is.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct LogRead {
    /// The events from the number asked for on, in order.
    pub events: Vec<LoggedEvent>,
    /// Where the stream is.
    pub state: StreamState,
}

/// Where server processes keep the events of the requests they answer over streamable
/// HTTP, for a client that resumes a broken stream on another replica.
///
/// A stream is named by its session and a name unique across processes. Its process
/// appends events as they are sent and renews its lease a few times a lease; readers poll
/// [`read`](Self::read) a few times a second. An implementation keeps a stream for the `ttl`
/// of its last append, and at most its newest 4096 events.
pub trait EventLog: Send + Sync + 'static {
    /// Appends `events` (numbered from where the stream is) to stream `stream` of session
    /// `session`, records `state`, and keeps the stream for `ttl` from now; `false`,
    /// changing nothing, when the stream has ended (a reader ended it when its lease ran
    /// out, and an end stands).
    fn append<'a>(
        &'a self,
        session: &'a str,
        stream: &'a str,
        events: &'a [LoggedEvent],
        state: &'a StreamState,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<bool, StoreError>>;

    /// At most `most` events of the stream from number `from` on, and its state; `None` when
    /// the stream is not kept.
    fn read<'a>(
        &'a self,
        session: &'a str,
        stream: &'a str,
        from: u64,
        most: usize,
    ) -> BoxFuture<'a, Result<Option<LogRead>, StoreError>>;

    /// Ends a stream whose lease ran out before `now_ms` without its answer, appending
    /// `event` after its last, numbered `from` at least (a reader may hold numbers the log
    /// has not been given yet); `false`, changing nothing, when it ended or its lease still
    /// runs (or it is not kept).
    fn end_lapsed<'a>(
        &'a self,
        session: &'a str,
        stream: &'a str,
        event: &'a str,
        now_ms: u64,
        from: u64,
    ) -> BoxFuture<'a, Result<bool, StoreError>>;
}

/// How long a lease runs past its renewal: a task whose process has not renewed it for this
/// long is reported failed.
pub(crate) const LEASE: Duration = Duration::from_secs(10);

/// `time` in milliseconds since the Unix epoch, as the stores write times.
pub(crate) fn epoch_millis(time: SystemTime) -> u64 {
    time.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |since| {
            u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
        })
}
