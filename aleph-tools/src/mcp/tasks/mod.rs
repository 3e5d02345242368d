//! Calls that run as MCP tasks: the `io.modelcontextprotocol/tasks` extension.
//!
//! A call to a tool marked `task`, from a client that declares the extension, answers at once
//! with a task handle (`resultType: "task"`) and runs on a task of its own. The client polls
//! `tasks/get` for the task's state (working, waiting for input, or its final result),
//! answers the tool's questions with `tasks/update`, and stops it with `tasks/cancel`. The
//! tool's progress messages become the task's `statusMessage`.

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use chrono::{DateTime, SecondsFormat, Utc};
use rmcp::ErrorData;
use rmcp::model::{
    CreateTaskResult, DetailedTask, GetTaskResult, InputResponses, JsonObject, Task, TaskPayload,
};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use self::shared::{
    MAX_STORED_INPUT, SYNC_MAX, SYNC_MIN, failed_record, from_millis, lapsed, plausible_id,
    save_end, store_failed, stored_payload, sync,
};
use super::ask::{Round, RoundCall};
use super::gauges;
use super::running::{InFlight, Running};
use super::store::{LEASE, StoreError, TaskRecord, TaskStore, epoch_millis};
use crate::tool::BoxFuture;
use crate::util::sync::lock;
use crate::{Identity, ProgressEvent, ToolErrorKind, ToolResult};

mod shared;

/// How a server keeps the tasks its clients start (see
/// [`McpServer::with_tasks`](super::McpServer::with_tasks)).
///
/// ```
/// use std::time::Duration;
/// use aleph_tools::mcp::McpTasks;
///
/// let tasks = McpTasks::new()
///     .with_ttl(Duration::from_secs(15 * 60))
///     .with_poll_interval(Duration::from_secs(2))
///     .with_most_tasks(64);
/// # let _ = tasks;
/// ```
#[derive(Clone)]
pub struct McpTasks {
    ttl: Duration,
    poll_interval: Duration,
    most: usize,
    store: Option<Arc<dyn TaskStore>>,
}

impl fmt::Debug for McpTasks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpTasks")
            .field("ttl", &self.ttl)
            .field("poll_interval", &self.poll_interval)
            .field("most", &self.most)
            .field("shared", &self.store.is_some())
            .finish()
    }
}

impl Default for McpTasks {
    fn default() -> Self {
        Self {
            ttl: Duration::from_hours(1),
            poll_interval: Duration::from_millis(500),
            most: 1024,
            store: None,
        }
    }
}

impl McpTasks {
    /// The defaults: tasks kept an hour, polled every half second, at most 1,024 at once.
    pub fn new() -> Self {
        Self::default()
    }

    /// How long a task is kept from its start, result included (an hour unless set). A task
    /// still running then is stopped, and `tasks/get` no longer finds it. Clients read it as
    /// the task's `ttlMs`.
    #[must_use]
    pub fn with_ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl;
        self
    }

    /// How often clients are asked to poll (`pollIntervalMs`; half a second unless set).
    #[must_use]
    pub fn with_poll_interval(mut self, interval: Duration) -> Self {
        self.poll_interval = interval;
        self
    }

    /// The most tasks kept at once, across every client (1,024 unless set; at least 1). A
    /// call that would start one more is refused with an error until older ones expire.
    /// With a [store](Self::with_store), the limit counts the tasks of every process that
    /// shares it.
    #[must_use]
    pub fn with_most_tasks(mut self, tasks: usize) -> Self {
        self.most = tasks.max(1);
        self
    }

    /// Keeps the tasks in `store`, which other server processes share (such as a
    /// [`RedisStore`](super::RedisStore)): a task started through one replica is polled,
    /// answered and cancelled through any, and one whose process stopped is reported failed
    /// once its lease (10 s) runs out. Without a store, a task lives in the memory of the
    /// process that runs it.
    #[must_use]
    pub fn with_store(mut self, store: impl TaskStore) -> Self {
        self.store = Some(Arc::new(store));
        self
    }
}

/// The tasks of one server, shared by all its sessions (a 2026-07-28 client may send each
/// request on a connection of its own): those it runs, and through a [`TaskStore`] those
/// other processes run.
#[derive(Default)]
pub(super) struct TaskTable {
    settings: McpTasks,
    tasks: Mutex<HashMap<String, Arc<Entry>>>,
}

/// One task.
pub(super) struct Entry {
    id: String,
    /// Who started it, when the server authenticates; nobody else finds it.
    owner: Option<String>,
    created: SystemTime,
    started: Instant,
    /// Fired by `tasks/cancel`, or when the task expires.
    cancel: CancellationToken,
    /// The calls of the server that started it (an HTTP server cancels its own when its
    /// drain's time is up).
    #[cfg_attr(
        not(feature = "mcp-http"),
        allow(dead_code, reason = "only HTTP drains")
    )]
    origin: Arc<InFlight>,
    /// The client's answers to the tool's questions, from `tasks/update`.
    answers: mpsc::UnboundedSender<InputResponses>,
    state: Mutex<State>,
    /// Counts the changes of `state`, so a shared store is written only when it changed.
    changes: AtomicU64,
}

struct State {
    payload: TaskPayload,
    message: Option<String>,
    updated: SystemTime,
}

impl TaskTable {
    pub(super) fn new(settings: McpTasks) -> Self {
        Self {
            settings,
            tasks: Mutex::default(),
        }
    }

    /// Makes room for a task `owner` starts and keeps it, working, until [`run`](Self::run)
    /// gives it its call. The receiver carries the client's answers to that call.
    ///
    /// # Errors
    ///
    /// `-32603` when the server (or, with a store, every process sharing it) keeps as many
    /// tasks as it may, or the store cannot be reached.
    pub(super) async fn open(
        &self,
        owner: Option<&Identity>,
        origin: &Arc<InFlight>,
    ) -> Result<(Arc<Entry>, mpsc::UnboundedReceiver<InputResponses>), ErrorData> {
        let (answers, answered) = mpsc::unbounded_channel();
        let now = SystemTime::now();
        let entry = Arc::new(Entry {
            // Random: a client cannot guess another's task.
            id: uuid::Uuid::new_v4().to_string(),
            owner: owner.map(|who| who.subject().to_owned()),
            created: now,
            started: Instant::now(),
            cancel: CancellationToken::new(),
            origin: Arc::clone(origin),
            answers,
            state: Mutex::new(State {
                payload: TaskPayload::Working,
                message: None,
                updated: now,
            }),
            changes: AtomicU64::new(0),
        });
        if let Some(store) = &self.settings.store {
            store
                .create(&entry.record(), self.settings.ttl, self.settings.most)
                .await
                .map_err(|error| store_failed(&error))?;
        }
        let mut tasks = lock(&self.tasks);
        self.forget_expired(&mut tasks);
        if self.settings.store.is_none() && tasks.len() >= self.settings.most {
            return Err(ErrorData::internal_error(
                format!(
                    "the server keeps {} tasks already; try again when older ones have expired",
                    tasks.len()
                ),
                None,
            ));
        }
        tasks.insert(entry.id.clone(), Arc::clone(&entry));
        gauges::tasks(1);
        Ok((entry, answered))
    }

    /// Runs `call` as `entry`'s task until it ends; `finish` turns its result into the
    /// `CallToolResult` the task completes with. Returns the handle the client is given.
    pub(super) fn run(
        &self,
        entry: Arc<Entry>,
        mut call: RoundCall,
        mut answered: mpsc::UnboundedReceiver<InputResponses>,
        finish: impl FnOnce(&ToolResult) -> Result<JsonObject, ErrorData> + Send + 'static,
        running: Running,
    ) -> CreateTaskResult {
        let handle = CreateTaskResult::new(self.task(&entry, &lock(&entry.state)));
        let store = self.settings.store.clone();
        let every = self.settings.poll_interval.clamp(SYNC_MIN, SYNC_MAX);
        tokio::spawn(async move {
            // Counted as running until it ends, so a draining server waits for it.
            let _running = running;
            let ended = CancellationToken::new();
            // Syncing stops with this task, however it ends.
            let _ended = ended.clone().drop_guard();
            let syncing = store.as_ref().map(|store| {
                tokio::spawn(sync(
                    Arc::clone(store),
                    Arc::clone(&entry),
                    every,
                    ended.clone(),
                ))
            });
            let result = loop {
                match call.round(&entry.cancel).await {
                    Round::Done(result) => break result,
                    Round::Asks(asks) => {
                        entry.set(TaskPayload::InputRequired {
                            input_requests: asks,
                        });
                        tokio::select! {
                            Some(responses) = answered.recv() => call.answer(responses),
                            () = entry.cancel.cancelled() => call.stop(),
                        }
                        entry.set(TaskPayload::Working);
                    }
                }
            };
            let payload = if entry.cancel.is_cancelled()
                && result.error_kind == Some(ToolErrorKind::Cancelled)
            {
                TaskPayload::Cancelled
            } else {
                match finish(&result) {
                    Ok(result) => TaskPayload::Completed { result },
                    Err(error) => {
                        entry.note(Some(error.message.to_string()));
                        TaskPayload::Failed {
                            error: error_object(&error),
                        }
                    }
                }
            };
            entry.set(payload);
            // The end is written last: a write of the state before it, still on its way,
            // lands first.
            ended.cancel();
            if let Some(syncing) = syncing {
                let _ = syncing.await;
            }
            if let Some(store) = &store {
                save_end(store.as_ref(), &entry).await;
            }
        });
        handle
    }

    /// The task `id` as `caller` may see it, for `tasks/get`: from this process when it
    /// runs it, else from the store.
    pub(super) async fn get(
        &self,
        id: &str,
        caller: Option<&Identity>,
    ) -> Result<GetTaskResult, ErrorData> {
        if let Some(entry) = self.local(id, caller) {
            let state = lock(&entry.state);
            let detailed = DetailedTask::new(self.task(&entry, &state), state.payload.clone());
            return Ok(GetTaskResult::new(detailed));
        }
        let record = self.stored(id, caller).await?;
        let payload = stored_payload(&record);
        let mut task = Task::new(
            record.id.clone(),
            payload.status(),
            timestamp(from_millis(record.created_ms)),
            timestamp(from_millis(record.updated_ms)),
        )
        .with_ttl_ms(millis(self.settings.ttl))
        .with_poll_interval_ms(millis(self.settings.poll_interval));
        task.status_message.clone_from(&record.message);
        Ok(GetTaskResult::new(DetailedTask::new(task, payload)))
    }

    /// Hands the client's answers (`tasks/update`) to the task `id`. Answers to questions
    /// it does not wait on now are ignored, so a client cannot pile them up.
    pub(super) async fn update(
        &self,
        id: &str,
        caller: Option<&Identity>,
        responses: InputResponses,
    ) -> Result<(), ErrorData> {
        if let Some(entry) = self.local(id, caller) {
            let outstanding = outstanding(&lock(&entry.state).payload, responses);
            if !outstanding.is_empty() {
                // A task that has just ended no longer reads answers; they are ignored too.
                let _ = entry.answers.send(outstanding);
            }
            return Ok(());
        }
        self.stored(id, caller).await?;
        // Handed on whole: the stored state may be a moment behind the running one, which
        // keeps the answers to the questions it waits on.
        let input = serde_json::to_value(&responses).unwrap_or_default();
        if input.to_string().len() > MAX_STORED_INPUT {
            return Err(ErrorData::invalid_params(
                format!("the answers hold more than {MAX_STORED_INPUT} bytes of JSON"),
                None,
            ));
        }
        self.store_call(|store| store.send_input(id, &input))
            .await
            .map(drop)
    }

    /// Asks the task `id` to stop (`tasks/cancel`). A task that has ended keeps its end.
    pub(super) async fn cancel(
        &self,
        id: &str,
        caller: Option<&Identity>,
    ) -> Result<(), ErrorData> {
        if let Some(entry) = self.local(id, caller) {
            entry.cancel.cancel();
            return Ok(());
        }
        self.stored(id, caller).await?;
        self.store_call(|store| store.cancel(id)).await.map(drop)
    }

    /// The task `id`, when this process runs it and `caller` may see it.
    fn local(&self, id: &str, caller: Option<&Identity>) -> Option<Arc<Entry>> {
        self.find(id, caller).ok()
    }

    /// The task `id` from the store, when there is one and `caller` may see it.
    async fn stored(&self, id: &str, caller: Option<&Identity>) -> Result<TaskRecord, ErrorData> {
        let Some(store) = &self.settings.store else {
            return Err(self.unknown(id));
        };
        // Ids are the server's own: anything else names no task, and never reaches the store.
        if !plausible_id(id) {
            return Err(self.unknown(id));
        }
        let record = store
            .load(id)
            .await
            .map_err(|error| store_failed(&error))?
            // Another identity's task is as unknown as one that never was.
            .filter(|record| record.owner.as_deref() == caller.map(Identity::subject))
            .ok_or_else(|| self.unknown(id))?;
        if lapsed(&record) {
            // Its process stopped: the failure is written, so every replica reports the
            // same end from now on, and the process, should it come back, stops the tool.
            let failed = failed_record(&record);
            if let Err(error) = store.save(&failed).await {
                tracing::warn!(task = %id, %error, "the task's failure could not be stored");
            }
            return Ok(failed);
        }
        Ok(record)
    }

    async fn store_call<'a, T>(
        &'a self,
        call: impl FnOnce(&'a dyn TaskStore) -> BoxFuture<'a, Result<T, StoreError>>,
    ) -> Result<T, ErrorData> {
        let Some(store) = &self.settings.store else {
            return Err(ErrorData::internal_error("no task store", None));
        };
        call(store.as_ref())
            .await
            .map_err(|error| store_failed(&error))
    }

    fn unknown(&self, id: &str) -> ErrorData {
        let elsewhere = if self.settings.store.is_some() {
            ""
        } else {
            ", or was started on another server process"
        };
        ErrorData::invalid_params(
            format!(
                "no task `{id}`: it expired ({:?} after it started) or was never started{elsewhere}",
                self.settings.ttl
            ),
            None,
        )
    }

    fn find(&self, id: &str, caller: Option<&Identity>) -> Result<Arc<Entry>, ErrorData> {
        let mut tasks = lock(&self.tasks);
        self.forget_expired(&mut tasks);
        tasks
            .get(id)
            // Another identity's task is as unknown as one that never was.
            .filter(|entry| entry.owner.as_deref() == caller.map(Identity::subject))
            .cloned()
            .ok_or_else(|| self.unknown(id))
    }

    /// Stops and forgets the tasks older than the TTL.
    fn forget_expired(&self, tasks: &mut HashMap<String, Arc<Entry>>) {
        tasks.retain(|_, entry| {
            let keep = entry.started.elapsed() < self.settings.ttl;
            if !keep {
                entry.cancel.cancel();
                gauges::tasks(-1);
            }
            keep
        });
    }

    /// Cancels the tasks started by the server counted by `origin` (its drain's time is
    /// up); those of other servers sharing the store run on.
    #[cfg(feature = "mcp-http")]
    pub(super) fn cancel_started_by(&self, origin: &Arc<InFlight>) {
        for entry in lock(&self.tasks).values() {
            if Arc::ptr_eq(&entry.origin, origin) {
                entry.cancel.cancel();
            }
        }
    }

    fn task(&self, entry: &Entry, state: &State) -> Task {
        let mut task = Task::new(
            entry.id.clone(),
            state.payload.status(),
            timestamp(entry.created),
            timestamp(state.updated),
        )
        .with_ttl_ms(millis(self.settings.ttl))
        .with_poll_interval_ms(millis(self.settings.poll_interval));
        task.status_message.clone_from(&state.message);
        task
    }
}

impl Drop for TaskTable {
    fn drop(&mut self) {
        let kept = lock(&self.tasks).len();
        gauges::tasks(-i32::try_from(kept).unwrap_or(i32::MAX));
    }
}

impl Entry {
    fn set(&self, payload: TaskPayload) {
        let mut state = lock(&self.state);
        state.payload = payload;
        state.updated = SystemTime::now();
        self.changes.fetch_add(1, Ordering::Relaxed);
    }

    fn note(&self, message: Option<String>) {
        let mut state = lock(&self.state);
        state.message = message;
        state.updated = SystemTime::now();
        self.changes.fetch_add(1, Ordering::Relaxed);
    }

    /// The task as a store keeps it, vouched for by this process for one more lease.
    fn record(&self) -> TaskRecord {
        let state = lock(&self.state);
        // Written as MCP writes a task, so the payload reads back with rmcp's own types.
        let task = Task::new(
            self.id.clone(),
            state.payload.status(),
            timestamp(self.created),
            timestamp(state.updated),
        );
        let detailed = DetailedTask::new(task, state.payload.clone());
        let mut record = TaskRecord::new(
            self.id.clone(),
            serde_json::to_value(&detailed).unwrap_or_default(),
        );
        record.owner.clone_from(&self.owner);
        record.created_ms = epoch_millis(self.created);
        record.updated_ms = epoch_millis(state.updated);
        record.message.clone_from(&state.message);
        record.lease_until_ms = epoch_millis(SystemTime::now() + LEASE);
        record
    }

    /// The tool's progress, as the task's status message.
    pub(super) fn hear(&self, event: &ProgressEvent) {
        if let ProgressEvent::Progress {
            progress,
            total,
            message,
        } = event
        {
            self.note(Some(match (message, total) {
                (Some(message), _) => message.clone(),
                (None, Some(total)) => format!("{progress} of {total}"),
                (None, None) => progress.to_string(),
            }));
        }
    }
}

/// The answers among `responses` to questions `payload` waits on.
fn outstanding(payload: &TaskPayload, responses: InputResponses) -> InputResponses {
    let TaskPayload::InputRequired { input_requests } = payload else {
        return InputResponses::default();
    };
    responses
        .into_iter()
        .filter(|(key, _)| input_requests.contains_key(key))
        .collect()
}

/// A JSON-RPC error as the object a failed task carries.
fn error_object(error: &ErrorData) -> JsonObject {
    match serde_json::to_value(error) {
        Ok(serde_json::Value::Object(object)) => object,
        _ => JsonObject::from_iter([
            ("code".to_owned(), error.code.0.into()),
            ("message".to_owned(), error.message.to_string().into()),
        ]),
    }
}

fn timestamp(time: SystemTime) -> String {
    DateTime::<Utc>::from(time).to_rfc3339_opts(SecondsFormat::Millis, true)
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}
