//! One running plugin process: its pipes, the calls waiting for answers, and its end.
//!
//! Three tasks serve a process: the writer owns its stdin, the reader its stdout (answers
//! go to the waiting calls by id, in whatever order they come), and the keeper waits for
//! it to exit, kills its process group, and fails every call still waiting with the reason.

use std::collections::{HashMap, VecDeque};
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::sync::{broadcast, mpsc, oneshot, watch};
use tokio_util::sync::CancellationToken;

use super::NodeCallError;
use super::frame::{Frame, Lines};
use super::protocol::{
    CancelParams, ChunkParams, LogParams, Message, Notification, ProgressParams, ReceiveParams,
    Request, RpcError, code, leading_id,
};
use crate::context::Progress;
use crate::util::process::ProcessGroup;
use crate::util::sync::lock;

/// How many of a process's last stderr lines are kept for error messages.
const STDERR_TAIL: usize = 12;
/// The longest stderr line logged; the rest is cut.
const STDERR_LINE: usize = 4096;
/// How many withdrawn request ids are remembered.
const WITHDRAWN_KEPT: usize = 64;
/// How many protocol faults of one process are logged one by one.
const FAULTS_LOGGED: u64 = 10;

/// How to start a plugin's process.
#[derive(Debug, Clone)]
pub(super) struct Spawn {
    pub(super) node: PathBuf,
    pub(super) args: Vec<OsString>,
    pub(super) dir: PathBuf,
    pub(super) env: Vec<(String, OsString)>,
    /// The OS sandbox it runs in.
    pub(super) sandbox: crate::sandbox::Sandbox,
}

/// A running process and the calls waiting on it.
pub(super) struct Connection {
    plugin: Arc<str>,
    outbox: mpsc::UnboundedSender<Outgoing>,
    pending: Mutex<HashMap<u64, Pending>>,
    next_id: AtomicU64,
    max_message: u64,
    pid: Option<u32>,
    /// `Some(reason)` once the process is gone.
    exit: watch::Receiver<Option<Arc<str>>>,
    kill: CancellationToken,
    stderr: Arc<Mutex<VecDeque<String>>>,
    faults: AtomicU64,
    /// Requests given up lately: an answer to one crossed the `cancel` and is not a fault.
    withdrawn: Mutex<VecDeque<u64>>,
    /// Where `channels/receive` notifications go: `(channel, message)`.
    inbound: broadcast::Sender<(Arc<str>, Value)>,
}

struct Pending {
    reply: oneshot::Sender<Result<Value, NodeCallError>>,
    progress: Option<Progress>,
    /// Where the request's `chunk` notifications go, for a streaming request.
    chunks: Option<mpsc::UnboundedSender<Value>>,
}

enum Outgoing {
    Line(Vec<u8>),
    Close,
}

impl Connection {
    /// Starts the process and the tasks that serve it. Must run on the plugin runtime.
    pub(super) fn spawn(
        plugin: &str,
        spawn: &Spawn,
        max_message: u64,
        inbound: broadcast::Sender<(Arc<str>, Value)>,
    ) -> Result<Arc<Self>, String> {
        let mut command: Command = spawn
            .sandbox
            .command(&spawn.node)
            .map_err(|error| error.to_string())?;
        command
            .args(&spawn.args)
            .current_dir(&spawn.dir)
            .env_clear()
            .envs(spawn.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        #[cfg(unix)]
        command.process_group(0);
        let mut child = command
            .spawn()
            .map_err(|e| format!("cannot start `{}`: {e}", spawn.node.display()))?;
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err("the process's pipes could not be opened".into());
        };
        let (outbox, outgoing) = mpsc::unbounded_channel();
        let (exited, exit) = watch::channel(None);
        let connection = Arc::new(Self {
            plugin: plugin.into(),
            outbox,
            pending: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(1),
            max_message,
            pid: child.id(),
            exit,
            kill: CancellationToken::new(),
            stderr: Arc::new(Mutex::new(VecDeque::new())),
            faults: AtomicU64::new(0),
            withdrawn: Mutex::new(VecDeque::new()),
            inbound,
        });
        tokio::spawn(write(stdin, outgoing));
        let stderr_task = tokio::spawn(log_stderr(
            Arc::clone(&connection.plugin),
            stderr,
            Arc::clone(&connection.stderr),
        ));
        let reader = tokio::spawn(read(Arc::downgrade(&connection), stdout, max_message));
        tokio::spawn(keep(
            Arc::downgrade(&connection),
            child,
            reader,
            stderr_task,
            exited,
            connection.kill.clone(),
        ));
        Ok(connection)
    }

    /// The process id.
    pub(super) fn pid(&self) -> Option<u32> {
        self.pid
    }

    /// Why the process is gone, once it is.
    pub(super) fn exit_reason(&self) -> Option<Arc<str>> {
        self.exit.borrow().clone()
    }

    /// Waits until the process is gone and says why.
    pub(super) async fn exited(&self) -> Arc<str> {
        let mut exit = self.exit.clone();
        loop {
            if let Some(reason) = exit.borrow_and_update().clone() {
                return reason;
            }
            if exit.changed().await.is_err() {
                return "the plugin's process is gone".into();
            }
        }
    }

    /// The last lines the process wrote to stderr, joined, for error messages.
    pub(super) fn stderr_tail(&self) -> String {
        let tail = lock(&self.stderr);
        tail.iter().cloned().collect::<Vec<_>>().join("\n")
    }

    /// Sends a request and waits for its answer. Dropping the future withdraws the request and
    /// tells the plugin to cancel it.
    pub(super) async fn request(
        self: &Arc<Self>,
        method: &str,
        params: impl Serialize,
        progress: Option<Progress>,
    ) -> Result<Value, NodeCallError> {
        self.request_with(method, params, progress, None).await
    }

    /// As [`request`](Self::request), with the request's `chunk` notifications sent to
    /// `chunks` as they come.
    pub(super) async fn request_streaming(
        self: &Arc<Self>,
        method: &str,
        params: impl Serialize,
        chunks: mpsc::UnboundedSender<Value>,
    ) -> Result<Value, NodeCallError> {
        self.request_with(method, params, None, Some(chunks)).await
    }

    async fn request_with(
        self: &Arc<Self>,
        method: &str,
        params: impl Serialize,
        progress: Option<Progress>,
        chunks: Option<mpsc::UnboundedSender<Value>>,
    ) -> Result<Value, NodeCallError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let line = encode(&Request {
            jsonrpc: "2.0",
            id,
            method,
            params,
        })
        .map_err(NodeCallError::Protocol)?;
        if line.len() as u64 > self.max_message {
            return Err(NodeCallError::TooLarge {
                what: "request",
                size: line.len() as u64,
                limit: self.max_message,
            });
        }
        let (reply, answer) = oneshot::channel();
        {
            let mut pending = lock(&self.pending);
            if let Some(reason) = self.exit_reason() {
                return Err(NodeCallError::Exited(reason.to_string()));
            }
            pending.insert(
                id,
                Pending {
                    reply,
                    progress,
                    chunks,
                },
            );
        }
        let mut guard = Withdraw {
            connection: self,
            id: Some(id),
        };
        if self.outbox.send(Outgoing::Line(line)).is_err() {
            return Err(NodeCallError::Exited(
                "the plugin's input is closed".to_owned(),
            ));
        }
        let outcome = answer.await;
        guard.id = None;
        outcome.unwrap_or_else(|_| {
            Err(NodeCallError::Exited(self.exit_reason().map_or_else(
                || "the plugin's process is gone".to_owned(),
                |r| r.to_string(),
            )))
        })
    }

    /// Sends a notification; lost when the process is gone.
    pub(super) fn notify(&self, method: &str, params: impl Serialize) {
        if let Ok(line) = encode(&Notification {
            jsonrpc: "2.0",
            method,
            params,
        }) {
            let _ = self.outbox.send(Outgoing::Line(line));
        }
    }

    /// Stops the process: `shutdown`, its input closed, and after `grace` a kill.
    pub(super) async fn shutdown(self: &Arc<Self>, grace: Duration) {
        if self.exit_reason().is_none() {
            let asked = tokio::time::timeout(grace, self.request("shutdown", Value::Null, None));
            let _ = asked.await;
            let _ = self.outbox.send(Outgoing::Close);
            if tokio::time::timeout(grace, self.exited()).await.is_err() {
                tracing::warn!(
                    plugin = %self.plugin,
                    "the plugin did not exit within {}ms of `shutdown`; killing it",
                    grace.as_millis()
                );
            }
        }
        self.kill.cancel();
        self.exited().await;
    }

    /// Kills the process group now.
    pub(super) fn kill(&self) {
        self.kill.cancel();
    }

    fn dispatch(&self, message: Message) {
        match message {
            Message::Response { id, outcome } => {
                let Some(pending) = lock(&self.pending).remove(&id) else {
                    if lock(&self.withdrawn).contains(&id) {
                        return;
                    }
                    self.fault(&format!(
                        "answered request {id}, which is not waiting for an answer (an unknown id, or one answered twice)"
                    ));
                    return;
                };
                let outcome = outcome.map_err(|error| match error.code {
                    code::HANDLER_FAILED => NodeCallError::Handler(error.message),
                    code::CANCELLED => NodeCallError::Cancelled,
                    _ => NodeCallError::Protocol(format!(
                        "the plugin answered with error {}: {}",
                        error.code, error.message
                    )),
                });
                let _ = pending.reply.send(outcome);
            }
            Message::Notification { method, params } => self.notified(&method, params),
            Message::Request { id, method } => {
                let answer = serde_json::json!({
                    "jsonrpc": "2.0",
                    "id": id,
                    "error": RpcError {
                        code: -32601,
                        message: format!("the host serves no requests (`{method}`)"),
                        data: None,
                    },
                });
                if let Ok(line) = encode(&answer) {
                    let _ = self.outbox.send(Outgoing::Line(line));
                }
            }
        }
    }

    fn notified(&self, method: &str, params: Value) {
        match method {
            "progress" => {
                let Ok(p) = serde_json::from_value::<ProgressParams>(params) else {
                    self.fault("sent a `progress` notification without `id` and `progress`");
                    return;
                };
                let progress = lock(&self.pending)
                    .get(&p.id)
                    .and_then(|pending| pending.progress.clone());
                if let Some(progress) = progress {
                    progress.report(p.progress, p.total, p.message.as_deref());
                }
            }
            "chunk" => {
                let Ok(c) = serde_json::from_value::<ChunkParams>(params) else {
                    self.fault("sent a `chunk` notification without `id` and `chunk`");
                    return;
                };
                let chunks = lock(&self.pending)
                    .get(&c.id)
                    .and_then(|pending| pending.chunks.clone());
                match chunks {
                    Some(chunks) => {
                        let _ = chunks.send(c.chunk);
                    }
                    None => self.fault("sent a `chunk` for a request that does not stream"),
                }
            }
            "channels/receive" => {
                let Ok(r) = serde_json::from_value::<ReceiveParams>(params) else {
                    self.fault(
                        "sent a `channels/receive` notification without `channel` and `message`",
                    );
                    return;
                };
                // No one listening is not a fault: messages before `inbound()` are dropped.
                let _ = self.inbound.send((r.channel.into(), r.message));
            }
            "log" => {
                let Ok(log) = serde_json::from_value::<LogParams>(params) else {
                    self.fault("sent a `log` notification without `message`");
                    return;
                };
                let plugin = &*self.plugin;
                match log.level.as_deref() {
                    Some("error") => tracing::error!(plugin, "{}", log.message),
                    Some("warn" | "warning") => tracing::warn!(plugin, "{}", log.message),
                    Some("debug") => tracing::debug!(plugin, "{}", log.message),
                    Some("trace") => tracing::trace!(plugin, "{}", log.message),
                    _ => tracing::info!(plugin, "{}", log.message),
                }
            }
            other => tracing::debug!(plugin = %self.plugin, "ignored notification `{other}`"),
        }
    }

    fn fault(&self, message: &str) {
        let n = self.faults.fetch_add(1, Ordering::Relaxed);
        if n < FAULTS_LOGGED || n.is_power_of_two() {
            tracing::warn!(plugin = %self.plugin, "the plugin broke the protocol: it {message}");
        }
    }

    fn too_long(&self, head: &[u8], len: u64) {
        let error = NodeCallError::TooLarge {
            what: "answer",
            size: len,
            limit: self.max_message,
        };
        match leading_id(head).and_then(|id| lock(&self.pending).remove(&id)) {
            Some(pending) => {
                let _ = pending.reply.send(Err(error));
            }
            None => self.fault(&format!("wrote a line of {len} bytes: {error}")),
        }
    }

    /// Records why the process is gone and fails every waiting call with it. No call can
    /// start waiting after this: [`request`](Self::request) checks under the same lock.
    fn close(&self, reason: &Arc<str>, exited: &watch::Sender<Option<Arc<str>>>) {
        let waiting: Vec<Pending> = {
            let mut pending = lock(&self.pending);
            exited.send_replace(Some(Arc::clone(reason)));
            pending.drain().map(|(_, p)| p).collect()
        };
        for call in waiting {
            let _ = call
                .reply
                .send(Err(NodeCallError::Exited(reason.to_string())));
        }
    }
}

/// Nobody can call a process once its last handle is gone: it is killed, with its group.
impl Drop for Connection {
    fn drop(&mut self) {
        self.kill.cancel();
    }
}

/// Withdraws a request whose caller stopped waiting, and tells the plugin.
struct Withdraw<'a> {
    connection: &'a Connection,
    id: Option<u64>,
}

impl Drop for Withdraw<'_> {
    fn drop(&mut self) {
        let Some(id) = self.id else { return };
        if lock(&self.connection.pending).remove(&id).is_some() {
            let mut withdrawn = lock(&self.connection.withdrawn);
            if withdrawn.len() == WITHDRAWN_KEPT {
                withdrawn.pop_front();
            }
            withdrawn.push_back(id);
            drop(withdrawn);
            self.connection.notify("cancel", CancelParams { id });
        }
    }
}

fn encode(message: &impl Serialize) -> Result<Vec<u8>, String> {
    let mut line = serde_json::to_vec(message).map_err(|e| e.to_string())?;
    line.push(b'\n');
    Ok(line)
}

async fn write(mut stdin: ChildStdin, mut outgoing: mpsc::UnboundedReceiver<Outgoing>) {
    while let Some(Outgoing::Line(line)) = outgoing.recv().await {
        if stdin.write_all(&line).await.is_err() || stdin.flush().await.is_err() {
            break;
        }
    }
}

async fn read(connection: std::sync::Weak<Connection>, stdout: ChildStdout, max: u64) {
    let mut lines = Lines::new(
        BufReader::with_capacity(64 * 1024, stdout),
        usize::try_from(max).unwrap_or(usize::MAX),
    );
    while let Ok(Some(frame)) = lines.next().await {
        let Some(connection) = connection.upgrade() else {
            return;
        };
        match frame {
            Frame::Line(line) if line.iter().all(u8::is_ascii_whitespace) => {}
            Frame::Line(line) => match serde_json::from_slice::<super::protocol::Incoming>(&line)
                .map_err(|e| e.to_string())
                .and_then(super::protocol::Incoming::classify)
            {
                Ok(message) => connection.dispatch(message),
                Err(error) => {
                    let start = String::from_utf8_lossy(&line[..line.len().min(120)]).into_owned();
                    connection.fault(&format!(
                        "wrote a line that is not a JSON-RPC message ({error}): `{start}`"
                    ));
                }
            },
            Frame::TooLong { head, len } => connection.too_long(&head, len),
        }
    }
}

async fn log_stderr(
    plugin: Arc<str>,
    stderr: tokio::process::ChildStderr,
    tail: Arc<Mutex<VecDeque<String>>>,
) {
    let mut lines = Lines::new(BufReader::new(stderr), STDERR_LINE);
    while let Ok(Some(frame)) = lines.next().await {
        let line = match frame {
            Frame::Line(line) => String::from_utf8_lossy(&line).into_owned(),
            Frame::TooLong { head, len } => {
                format!("{}… ({len} bytes)", String::from_utf8_lossy(&head))
            }
        };
        tracing::info!(target: "aleph_tools::plugin::stderr", plugin = %plugin, "{line}");
        let mut tail = lock(&tail);
        if tail.len() == STDERR_TAIL {
            tail.pop_front();
        }
        tail.push_back(line);
    }
}

/// Waits for the process to end (or kills it when asked), then kills whatever is left of its
/// process group and fails the calls still waiting.
async fn keep(
    connection: std::sync::Weak<Connection>,
    mut child: Child,
    reader: tokio::task::JoinHandle<()>,
    stderr: tokio::task::JoinHandle<()>,
    exited: watch::Sender<Option<Arc<str>>>,
    kill: CancellationToken,
) {
    let mut group = ProcessGroup::new(child.id());
    let mut reader = reader;
    let mut read_all = false;
    // Its stdout closing means the process is gone or no longer speaks the protocol.
    let status = tokio::select! {
        status = child.wait() => status,
        _ = &mut reader => {
            read_all = true;
            tokio::select! {
                status = child.wait() => status,
                () = tokio::time::sleep(Duration::from_millis(200)) => {
                    group.kill();
                    child.wait().await
                }
            }
        }
        () = kill.cancelled() => {
            group.kill();
            child.wait().await
        }
    };
    // Whatever the plugin started dies with it. The group is killed once, right after the
    // process is reaped, and never later, when its number may belong to someone else.
    group.kill_and_forget();
    // Answers written just before the end are still read before the calls are failed.
    if !read_all {
        let _ = tokio::time::timeout(Duration::from_millis(500), &mut reader).await;
        reader.abort();
    }
    let _ = tokio::time::timeout(Duration::from_millis(200), stderr).await;
    let reason: Arc<str> = match status {
        Ok(status) => describe(status).into(),
        Err(e) => format!("the plugin's process could not be waited for: {e}").into(),
    };
    match connection.upgrade() {
        Some(connection) => connection.close(&reason, &exited),
        None => {
            exited.send_replace(Some(reason));
        }
    }
}

fn describe(status: std::process::ExitStatus) -> String {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(signal) = status.signal() {
            let name = nix::sys::signal::Signal::try_from(signal)
                .map_or_else(|_| signal.to_string(), |s| s.as_str().to_owned());
            return format!("the process was killed by {name}");
        }
    }
    match status.code() {
        Some(code) => format!("the process exited with code {code}"),
        None => "the process exited".to_owned(),
    }
}
