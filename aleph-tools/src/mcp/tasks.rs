//! Calls that run as MCP tasks: the `io.modelcontextprotocol/tasks` extension.
//!
//! A call to a tool marked `task`, from a client that declares the extension, answers at once
//! with a task handle (`resultType: "task"`) and runs on a task of its own. The client polls
//! `tasks/get` for the task's state (working, waiting for input, or its final result),
//! answers the tool's questions with `tasks/update`, and stops it with `tasks/cancel`. The
//! tool's progress messages become the task's `statusMessage`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use chrono::{DateTime, SecondsFormat, Utc};
use rmcp::ErrorData;
use rmcp::model::{
    CreateTaskResult, DetailedTask, GetTaskResult, InputResponses, JsonObject, Task, TaskPayload,
};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::ask::{Round, RoundCall};
use super::gauges;
use super::http::drain::{InFlight, Running};
use crate::sync::lock;
use crate::{Identity, ProgressEvent, ToolErrorKind, ToolResult};

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
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct McpTasks {
    ttl: Duration,
    poll_interval: Duration,
    most: usize,
}

impl Default for McpTasks {
    fn default() -> Self {
        Self {
            ttl: Duration::from_hours(1),
            poll_interval: Duration::from_millis(500),
            most: 1024,
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
    #[must_use]
    pub fn with_most_tasks(mut self, tasks: usize) -> Self {
        self.most = tasks.max(1);
        self
    }
}

/// The tasks of one server, shared by all its sessions: a 2026-07-28 client may send each
/// request on a connection of its own.
#[derive(Default)]
pub(super) struct TaskStore {
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
    origin: Arc<InFlight>,
    /// The client's answers to the tool's questions, from `tasks/update`.
    answers: mpsc::UnboundedSender<InputResponses>,
    state: Mutex<State>,
}

struct State {
    payload: TaskPayload,
    message: Option<String>,
    updated: SystemTime,
}

impl TaskStore {
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
    /// `-32603` when the server keeps as many tasks as it may.
    pub(super) fn open(
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
        });
        let mut tasks = lock(&self.tasks);
        self.forget_expired(&mut tasks);
        if tasks.len() >= self.settings.most {
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
        tokio::spawn(async move {
            // Counted as running until it ends, so a draining server waits for it.
            let _running = running;
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
        });
        handle
    }

    /// The task `id` as `caller` may see it, for `tasks/get`.
    pub(super) fn get(
        &self,
        id: &str,
        caller: Option<&Identity>,
    ) -> Result<GetTaskResult, ErrorData> {
        let entry = self.find(id, caller)?;
        let state = lock(&entry.state);
        let detailed = DetailedTask::new(self.task(&entry, &state), state.payload.clone());
        Ok(GetTaskResult::new(detailed))
    }

    /// Hands the client's answers (`tasks/update`) to the task `id`. Answers to questions
    /// it does not wait on now are ignored, so a client cannot pile them up.
    pub(super) fn update(
        &self,
        id: &str,
        caller: Option<&Identity>,
        responses: InputResponses,
    ) -> Result<(), ErrorData> {
        let entry = self.find(id, caller)?;
        let outstanding: InputResponses = {
            let state = lock(&entry.state);
            let TaskPayload::InputRequired { input_requests } = &state.payload else {
                return Ok(());
            };
            responses
                .into_iter()
                .filter(|(key, _)| input_requests.contains_key(key))
                .collect()
        };
        if !outstanding.is_empty() {
            // A task that has just ended no longer reads answers; they are ignored too.
            let _ = entry.answers.send(outstanding);
        }
        Ok(())
    }

    /// Asks the task `id` to stop (`tasks/cancel`). A task that has ended keeps its end.
    pub(super) fn cancel(&self, id: &str, caller: Option<&Identity>) -> Result<(), ErrorData> {
        self.find(id, caller)?.cancel.cancel();
        Ok(())
    }

    fn find(&self, id: &str, caller: Option<&Identity>) -> Result<Arc<Entry>, ErrorData> {
        let mut tasks = lock(&self.tasks);
        self.forget_expired(&mut tasks);
        tasks
            .get(id)
            // Another identity's task is as unknown as one that never was.
            .filter(|entry| entry.owner.as_deref() == caller.map(Identity::subject))
            .cloned()
            .ok_or_else(|| {
                ErrorData::invalid_params(
                    format!(
                        "no task `{id}`: it expired ({:?} after it started), was never started, or was started on another server process",
                        self.settings.ttl
                    ),
                    None,
                )
            })
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

impl Drop for TaskStore {
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
    }

    fn note(&self, message: Option<String>) {
        let mut state = lock(&self.state);
        state.message = message;
        state.updated = SystemTime::now();
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
