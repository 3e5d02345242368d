//! [`RedisStore`]: the shared stores in Redis (or Valkey), each change one atomic script.
//!
//! A session is a string `PREFIXsession:ID` holding its handshake as JSON, expiring when
//! the session would end idle. A task is a hash `PREFIXtask:ID` (its record as JSON in
//! `record`, and `cancel` once asked to stop) that expires with the task, beside a list
//! `PREFIXtask-input:ID` of the inputs not yet taken (the newest 16). A sorted set
//! `PREFIXtasks` holds every task's id by expiry, to count them. A list `PREFIXrelay:PROCESS`
//! holds the answers relayed to a process, not yet taken, while `PREFIXprocess:PROCESS` says
//! the process takes them. The event logs of request streams
//! are described in [`log`].

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use redis::Script;
use redis::aio::ConnectionManager;
use serde_json::Value;

use super::{
    Relayed, SessionRecord, SessionStore, StoreError, TaskRecord, TaskSignals, TaskStore,
    epoch_millis,
};
use crate::tool::BoxFuture;

mod log;

/// Keeps a task unless the index counts `most` live ones already.
const CREATE: &str = r"
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[3]) then return 0 end
redis.call('HSET', KEYS[2], 'record', ARGV[5])
redis.call('PEXPIRE', KEYS[2], ARGV[6])
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[4])
return 1
";

/// Sets one field of a hash that exists.
const SET_IF_KEPT: &str = r"
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return 1
";

/// Replaces the record of a task that is kept and has not ended.
const SAVE: &str = r"
local current = redis.call('HGET', KEYS[1], 'record')
if not current then return 0 end
local status = cjson.decode(current)['payload']['status']
if status == 'completed' or status == 'failed' or status == 'cancelled' then return 0 end
redis.call('HSET', KEYS[1], 'record', ARGV[1])
return 1
";

/// Appends to the input list of a task that exists, keeping the newest 16; the list
/// expires with the task.
const SEND_INPUT: &str = r"
local left = redis.call('PTTL', KEYS[1])
if left <= 0 then return 0 end
redis.call('RPUSH', KEYS[2], ARGV[1])
redis.call('LTRIM', KEYS[2], -16, -1)
redis.call('PEXPIRE', KEYS[2], left)
return 1
";

/// Reads the cancel flag and takes the inputs.
const SIGNALS: &str = r"
local cancel = redis.call('HGET', KEYS[1], 'cancel')
local inputs = redis.call('LRANGE', KEYS[2], 0, -1)
redis.call('DEL', KEYS[2])
if cancel then return {'1', inputs} end
return {'', inputs}
";

/// Appends to the relayed answers of a process that takes them, keeping the newest 1024
/// for a minute.
const RELAY: &str = r"
if redis.call('EXISTS', KEYS[2]) == 0 then return 0 end
redis.call('RPUSH', KEYS[1], ARGV[1])
redis.call('LTRIM', KEYS[1], -1024, -1)
redis.call('PEXPIRE', KEYS[1], 60000)
return 1
";

/// Takes the oldest of a process's relayed answers, and keeps the process known as one
/// that takes them.
const TAKE_RELAYED: &str = r"
redis.call('SET', KEYS[2], '1', 'PX', ARGV[2])
local taken = redis.call('LRANGE', KEYS[1], 0, tonumber(ARGV[1]) - 1)
redis.call('LTRIM', KEYS[1], #taken, -1)
return taken
";

/// Shared stores in Redis or Valkey: MCP tasks ([`TaskStore`]), the handshakes of HTTP
/// sessions ([`SessionStore`]) and the events of their requests' streams
/// ([`EventLog`](super::EventLog)).
///
/// ```no_run
/// use aleph_tools::mcp::{McpServer, McpTasks, RedisStore};
/// use aleph_tools::AlephToolServer;
///
/// # async fn run(tools: AlephToolServer) -> Result<(), Box<dyn std::error::Error>> {
/// let store = RedisStore::connect("redis://127.0.0.1:6379/").await?;
/// // Every replica started this way answers for the tasks any of them started.
/// let http = McpServer::new(&tools)
///     .with_tasks(McpTasks::new().with_store(store))
///     .serve_http("0.0.0.0:8080")
///     .await?;
/// # drop(http);
/// # Ok(())
/// # }
/// ```
///
/// The connection reconnects by itself after a failure; calls made meanwhile fail with
/// [`StoreError::Unavailable`]. Cloning is cheap and shares the connection.
#[derive(Clone)]
pub struct RedisStore {
    connection: ConnectionManager,
    prefix: Arc<str>,
    scripts: Arc<Scripts>,
}

struct Scripts {
    create: Script,
    save: Script,
    set_if_kept: Script,
    send_input: Script,
    signals: Script,
    relay: Script,
    take_relayed: Script,
    log: log::Scripts,
}

impl std::fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisStore")
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

fn unavailable(error: &redis::RedisError) -> StoreError {
    StoreError::Unavailable(error.to_string())
}

impl RedisStore {
    /// Connects to the Redis server at `url` (`redis://host:port/db`, `rediss://` for TLS
    /// when the `redis` crate is built with it), with keys under `aleph-tools:`.
    ///
    /// # Errors
    ///
    /// [`StoreError::Unavailable`] when the URL cannot be read or the server not reached.
    pub async fn connect(url: &str) -> Result<Self, StoreError> {
        let client = redis::Client::open(url).map_err(|e| unavailable(&e))?;
        let connection = ConnectionManager::new(client)
            .await
            .map_err(|e| unavailable(&e))?;
        Ok(Self {
            connection,
            prefix: Arc::from("aleph-tools:"),
            scripts: Arc::new(Scripts {
                create: Script::new(CREATE),
                save: Script::new(SAVE),
                set_if_kept: Script::new(SET_IF_KEPT),
                send_input: Script::new(SEND_INPUT),
                signals: Script::new(SIGNALS),
                relay: Script::new(RELAY),
                take_relayed: Script::new(TAKE_RELAYED),
                log: log::Scripts::new(),
            }),
        })
    }

    /// Keys under `prefix` instead of `aleph-tools:`, so that several deployments share one
    /// Redis without seeing each other's tasks.
    #[must_use]
    pub fn with_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = Arc::from(prefix.into());
        self
    }

    fn task_key(&self, id: &str) -> String {
        format!("{}task:{id}", self.prefix)
    }

    fn input_key(&self, id: &str) -> String {
        format!("{}task-input:{id}", self.prefix)
    }

    fn session_key(&self, id: &str) -> String {
        format!("{}session:{id}", self.prefix)
    }

    fn relay_key(&self, process: &str) -> String {
        format!("{}relay:{process}", self.prefix)
    }

    fn process_key(&self, process: &str) -> String {
        format!("{}process:{process}", self.prefix)
    }

    fn index_key(&self) -> String {
        format!("{}tasks", self.prefix)
    }

    async fn set_if_kept(&self, id: &str, field: &str, value: &str) -> Result<bool, StoreError> {
        let mut connection = self.connection.clone();
        let kept: i64 = self
            .scripts
            .set_if_kept
            .key(self.task_key(id))
            .arg(field)
            .arg(value)
            .invoke_async(&mut connection)
            .await
            .map_err(|e| unavailable(&e))?;
        Ok(kept == 1)
    }
}

fn now_ms() -> u64 {
    epoch_millis(SystemTime::now())
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis())
        .unwrap_or(u64::MAX)
        .max(1)
}

fn to_json(task: &TaskRecord) -> Result<String, StoreError> {
    serde_json::to_string(task)
        .map_err(|e| StoreError::Unavailable(format!("the task cannot be written: {e}")))
}

impl TaskStore for RedisStore {
    fn create<'a>(
        &'a self,
        task: &'a TaskRecord,
        ttl: Duration,
        most: usize,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            let record = to_json(task)?;
            let now = now_ms();
            let mut connection = self.connection.clone();
            let kept: i64 = self
                .scripts
                .create
                .key(self.index_key())
                .key(self.task_key(&task.id))
                .arg(now)
                .arg(now.saturating_add(millis(ttl)))
                .arg(most)
                .arg(&task.id)
                .arg(record)
                .arg(millis(ttl))
                .invoke_async(&mut connection)
                .await
                .map_err(|e| unavailable(&e))?;
            if kept == 1 {
                Ok(())
            } else {
                Err(StoreError::Full { most })
            }
        })
    }

    fn load<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<TaskRecord>, StoreError>> {
        Box::pin(async move {
            let mut connection = self.connection.clone();
            let record: Option<String> = redis::cmd("HGET")
                .arg(self.task_key(id))
                .arg("record")
                .query_async(&mut connection)
                .await
                .map_err(|e| unavailable(&e))?;
            record
                .map(|text| {
                    serde_json::from_str(&text).map_err(|e| {
                        StoreError::Unavailable(format!("the task `{id}` cannot be read: {e}"))
                    })
                })
                .transpose()
        })
    }

    fn save<'a>(&'a self, task: &'a TaskRecord) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(async move {
            let record = to_json(task)?;
            let mut connection = self.connection.clone();
            let saved: i64 = self
                .scripts
                .save
                .key(self.task_key(&task.id))
                .arg(record)
                .invoke_async(&mut connection)
                .await
                .map_err(|e| unavailable(&e))?;
            Ok(saved == 1)
        })
    }

    fn cancel<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(self.set_if_kept(id, "cancel", "1"))
    }

    fn send_input<'a>(
        &'a self,
        id: &'a str,
        input: &'a Value,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(async move {
            let mut connection = self.connection.clone();
            let kept: i64 = self
                .scripts
                .send_input
                .key(self.task_key(id))
                .key(self.input_key(id))
                .arg(input.to_string())
                .invoke_async(&mut connection)
                .await
                .map_err(|e| unavailable(&e))?;
            Ok(kept == 1)
        })
    }

    fn signals<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<TaskSignals, StoreError>> {
        Box::pin(async move {
            let mut connection = self.connection.clone();
            let (cancel, inputs): (String, Vec<String>) = self
                .scripts
                .signals
                .key(self.task_key(id))
                .key(self.input_key(id))
                .invoke_async(&mut connection)
                .await
                .map_err(|e| unavailable(&e))?;
            Ok(TaskSignals {
                cancelled: cancel == "1",
                inputs: inputs
                    .iter()
                    .filter_map(|text| serde_json::from_str(text).ok())
                    .collect(),
            })
        })
    }
}

impl SessionStore for RedisStore {
    fn put<'a>(
        &'a self,
        id: &'a str,
        record: &'a SessionRecord,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            let text = serde_json::to_string(record).map_err(|e| {
                StoreError::Unavailable(format!("the session cannot be written: {e}"))
            })?;
            let mut connection = self.connection.clone();
            redis::cmd("SET")
                .arg(self.session_key(id))
                .arg(text)
                .arg("PX")
                .arg(millis(ttl))
                .query_async::<()>(&mut connection)
                .await
                .map_err(|e| unavailable(&e))
        })
    }

    fn get<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<SessionRecord>, StoreError>> {
        Box::pin(async move {
            let mut connection = self.connection.clone();
            let text: Option<String> = redis::cmd("GET")
                .arg(self.session_key(id))
                .query_async(&mut connection)
                .await
                .map_err(|e| unavailable(&e))?;
            text.map(|text| {
                serde_json::from_str(&text).map_err(|e| {
                    StoreError::Unavailable(format!("the session `{id}` cannot be read: {e}"))
                })
            })
            .transpose()
        })
    }

    fn refresh<'a>(&'a self, id: &'a str, ttl: Duration) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            let mut connection = self.connection.clone();
            redis::cmd("PEXPIRE")
                .arg(self.session_key(id))
                .arg(millis(ttl))
                .query_async::<()>(&mut connection)
                .await
                .map_err(|e| unavailable(&e))
        })
    }

    fn remove<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            let mut connection = self.connection.clone();
            redis::cmd("DEL")
                .arg(self.session_key(id))
                .query_async::<()>(&mut connection)
                .await
                .map_err(|e| unavailable(&e))
        })
    }

    fn relay<'a>(
        &'a self,
        process: &'a str,
        session: &'a str,
        message: &'a str,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(async move {
            let entry = serde_json::to_string(&Relayed::new(session, message)).map_err(|e| {
                StoreError::Unavailable(format!("the answer cannot be written: {e}"))
            })?;
            let mut connection = self.connection.clone();
            let kept: i64 = self
                .scripts
                .relay
                .key(self.relay_key(process))
                .key(self.process_key(process))
                .arg(entry)
                .invoke_async(&mut connection)
                .await
                .map_err(|e| unavailable(&e))?;
            Ok(kept == 1)
        })
    }

    fn take_relayed<'a>(
        &'a self,
        process: &'a str,
        most: usize,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<Vec<Relayed>, StoreError>> {
        Box::pin(async move {
            let mut connection = self.connection.clone();
            let taken: Vec<String> = self
                .scripts
                .take_relayed
                .key(self.relay_key(process))
                .key(self.process_key(process))
                .arg(most)
                .arg(millis(ttl))
                .invoke_async(&mut connection)
                .await
                .map_err(|e| unavailable(&e))?;
            Ok(taken
                .iter()
                .filter_map(|entry| serde_json::from_str(entry).ok())
                .collect())
        })
    }
}
