//! `NodejsRuntime`: plugins that are Node.js programs, run as supervised child processes and
//! spoken to in JSON-RPC 2.0 over their stdin and stdout.
//!
//! `protocol` holds the messages, `frame` reads them a line at a time under the size limit,
//! `connection` is one running process, `supervisor` keeps it running, `sandbox` finds
//! `node` and turns the manifest's grants into its flags.
//!
//! Every process is served by a small runtime of the library's own (two threads, started by
//! the first Node.js plugin), so plugins' I/O never runs on the application's workers and
//! loading works from synchronous code.

mod connection;
mod frame;
mod protocol;
mod sandbox;
mod supervisor;

use std::sync::{Arc, Mutex, OnceLock};

use serde_json::{Value, json};
use tokio::sync::{broadcast, oneshot, watch};
use tokio_util::sync::CancellationToken;

pub use self::protocol::PROTOCOL_VERSION;
use self::protocol::{
    CallParams, CommandParams, Declared, DeclaredAdapter, DeclaredHook, DeclaredRoute,
    DeclaredService, HookParams, InitializeParams, Limits, PluginRef, RouteParams,
};
use self::sandbox::NodeBinary;
use self::supervisor::{Phase, Supervisor};
use super::code::AdapterCall;
use super::config::NodeConfig;
use super::error::PluginError;
use super::manager::PluginStatus;
use super::manifest::LoadedManifest;
use crate::context::{Progress, ToolContext};
use crate::error::ToolError;
use crate::result::ToolOutput;
use crate::tool::{BoxFuture, ToolDefinition, ToolHandler};
use crate::util::sync::lock;

/// How many received channel messages wait for slow listeners before the oldest are dropped.
const INBOUND_BUFFER: usize = 256;

/// Starts Node.js plugins with the settings of one [`NodeConfig`].
#[derive(Debug, Default)]
pub struct NodejsRuntime {
    config: NodeConfig,
    /// The `node` found last; looked up again when the lookup failed.
    binary: Mutex<Option<NodeBinary>>,
}

impl NodejsRuntime {
    /// A runtime with these settings.
    pub fn new(config: NodeConfig) -> Self {
        Self {
            config,
            binary: Mutex::new(None),
        }
    }

    /// The settings.
    pub fn config(&self) -> &NodeConfig {
        &self.config
    }

    /// The version of the `node` plugins run on.
    ///
    /// # Errors
    ///
    /// Why `node` cannot be used: not found, not Node.js, or outside `node_version`.
    pub fn node_version(&self) -> Result<semver::Version, String> {
        self.binary().map(|binary| binary.version)
    }

    /// Starts the process of a `nodejs` plugin and waits until it answers `initialize`
    /// (at most `start_timeout_ms`). Blocks the calling thread while it waits; from async
    /// code, call it inside `tokio::task::spawn_blocking`.
    ///
    /// # Errors
    ///
    /// [`PluginError::Load`] saying why: no usable `node`, a process that exits, never answers,
    /// speaks another protocol version, or lacks a handler its manifest names (with the last
    /// lines it wrote to stderr).
    pub fn start(&self, loaded: &LoadedManifest) -> Result<NodePlugin, PluginError> {
        let id = loaded.manifest.plugin.id.clone();
        let fail = |message: String| PluginError::Load {
            plugin: id.clone(),
            message,
        };
        let binary = self.binary().map_err(&fail)?;
        let (spawn, sandbox) = sandbox::spawn_for(&binary, loaded, &self.config);
        let initialize = initialize_params(loaded, &self.config);
        let (phase, phase_rx) = watch::channel(Phase::Starting);
        let (inbound, _) = broadcast::channel(INBOUND_BUFFER);
        let supervisor = Supervisor {
            id: id.clone(),
            spawn,
            initialize,
            config: self.config.clone(),
            phase,
            inbound: inbound.clone(),
        };
        let stop = CancellationToken::new();
        let (first, started) = oneshot::channel();
        runtime()
            .map_err(&fail)?
            .spawn(supervisor.run(stop.clone(), first));
        let init = started
            .blocking_wait()
            .ok_or_else(|| fail("the plugin runtime stopped".into()))?
            .map_err(&fail)?;
        Ok(NodePlugin {
            inner: Arc::new(Handle {
                id,
                phase: phase_rx,
                stop,
                sandbox,
                schemas: init.schemas,
                timeout: self.config.timeout(),
                inbound,
            }),
        })
    }

    fn binary(&self) -> Result<NodeBinary, String> {
        let mut found = lock(&self.binary);
        if let Some(binary) = &*found {
            return Ok(binary.clone());
        }
        let binary = NodeBinary::find(&self.config)?;
        *found = Some(binary.clone());
        Ok(binary)
    }
}

/// Waiting for a oneshot answer from synchronous code, on any thread.
trait BlockingWait<T> {
    fn blocking_wait(self) -> Option<T>;
}

impl<T: Send + 'static> BlockingWait<T> for oneshot::Receiver<T> {
    fn blocking_wait(self) -> Option<T> {
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        let runtime = runtime().ok()?;
        runtime.spawn(async move {
            let _ = tx.send(self.await.ok());
        });
        rx.recv().ok().flatten()
    }
}

/// The runtime plugin processes are served on.
fn runtime() -> Result<&'static tokio::runtime::Runtime, String> {
    static RUNTIME: OnceLock<Result<tokio::runtime::Runtime, String>> = OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .thread_name("aleph-node-plugins")
                .enable_all()
                .build()
                .map_err(|e| format!("cannot start the Node.js plugin runtime: {e}"))
        })
        .as_ref()
        .map_err(Clone::clone)
}

fn initialize_params(loaded: &LoadedManifest, config: &NodeConfig) -> Value {
    let m = &loaded.manifest;
    let params = InitializeParams {
        protocol_version: PROTOCOL_VERSION,
        plugin: PluginRef {
            id: &m.plugin.id,
            version: m.plugin.version.to_string(),
        },
        tools: m
            .tools
            .iter()
            .map(|t| Declared {
                name: &t.name,
                handler: t.handler(),
            })
            .collect(),
        commands: m
            .commands
            .iter()
            .map(|c| Declared {
                name: &c.name,
                handler: &c.handler,
            })
            .collect(),
        hooks: m
            .hooks
            .iter()
            .map(|h| DeclaredHook {
                event: enum_name(&h.event),
                kind: enum_name(&h.kind),
                handler: &h.handler,
            })
            .collect(),
        services: m
            .services
            .iter()
            .map(|s| DeclaredService {
                name: &s.name,
                start_handler: &s.start_handler,
                stop_handler: &s.stop_handler,
            })
            .collect(),
        routes: m
            .http_routes
            .iter()
            .map(|r| DeclaredRoute {
                method: &r.method,
                path: &r.path,
                handler: &r.handler,
            })
            .collect(),
        channels: m
            .channels
            .iter()
            .map(|c| DeclaredAdapter {
                name: &c.name,
                handlers: vec![&c.connect_handler, &c.disconnect_handler, &c.send_handler],
            })
            .collect(),
        providers: m
            .providers
            .iter()
            .map(|p| DeclaredAdapter {
                name: &p.name,
                handlers: [
                    Some(p.list_models_handler.as_str()),
                    Some(p.chat_handler.as_str()),
                    p.stream_handler.as_deref(),
                    p.embed_handler.as_deref(),
                ]
                .into_iter()
                .flatten()
                .collect(),
            })
            .collect(),
        limits: Limits {
            max_message: config.max_message.bytes(),
        },
    };
    serde_json::to_value(params).unwrap_or_else(|_| json!({}))
}

fn enum_name(value: &impl serde::Serialize) -> String {
    serde_json::to_value(value)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// A running Node.js plugin: its process, restarted when it dies. Cloning is cheap and shares
/// the process; when the last clone is dropped the process is sent `shutdown` and killed after
/// the grace period. Calls that hold a clone finish first, so a reload lets the old process
/// answer what it was asked.
#[derive(Clone)]
pub struct NodePlugin {
    inner: Arc<Handle>,
}

struct Handle {
    id: String,
    phase: watch::Receiver<Phase>,
    stop: CancellationToken,
    sandbox: String,
    schemas: serde_json::Map<String, Value>,
    /// The time limit of a direct command.
    timeout: std::time::Duration,
    /// Messages the plugin's channels receive.
    inbound: broadcast::Sender<(Arc<str>, Value)>,
}

impl Drop for Handle {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

impl std::fmt::Debug for NodePlugin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NodePlugin")
            .field("id", &self.inner.id)
            .field("status", &self.status())
            .field("pid", &self.process_id())
            .finish_non_exhaustive()
    }
}

/// Why a call into a Node.js plugin failed. `Display` is written for the model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NodeCallError {
    /// The handler threw, or its promise was rejected: the error's message.
    #[error("{0}")]
    Handler(String),
    /// The process died during the call.
    #[error(
        "the plugin stopped during the call ({0}); it restarts by itself, so the call may be tried again"
    )]
    Exited(String),
    /// The plugin is not running: it crashed too often, or it was stopped.
    #[error("the plugin is not running: {0}")]
    Unavailable(String),
    /// The request or the answer is larger than `max_message`.
    #[error(
        "the {what} is {size} bytes, more than the {limit} bytes a message may have (`[plugins.runtimes.nodejs] max_message`)"
    )]
    TooLarge {
        /// `request` or `answer`.
        what: &'static str,
        /// Its size in bytes.
        size: u64,
        /// The limit.
        limit: u64,
    },
    /// The plugin gave the call up after the host cancelled it.
    #[error("the call was cancelled")]
    Cancelled,
    /// The call ran past its time limit; the plugin was told to cancel it.
    #[error("the plugin did not answer within {}ms (`[plugins.runtimes.nodejs] timeout_ms`)", .0.as_millis())]
    Timeout(std::time::Duration),
    /// The plugin answered outside the protocol.
    #[error("{0}")]
    Protocol(String),
}

impl NodePlugin {
    /// The plugin's id.
    pub fn id(&self) -> &str {
        &self.inner.id
    }

    /// [`Running`](PluginStatus::Running) while the process answers;
    /// [`Error`](PluginStatus::Error) while it restarts after a crash (saying why) and after
    /// it crashed too often; [`Stopped`](PluginStatus::Stopped) once stopped.
    pub fn status(&self) -> PluginStatus {
        match &*self.inner.phase.borrow() {
            Phase::Ready(_) => PluginStatus::Running,
            Phase::Starting => PluginStatus::Error("the process is starting again".into()),
            Phase::Restarting { reason, attempt } => {
                PluginStatus::Error(format!("{reason}; restart {attempt} is due"))
            }
            Phase::Failed(message) => PluginStatus::Error(message.clone()),
            Phase::Stopped => PluginStatus::Stopped,
        }
    }

    /// The id of the process answering calls now.
    pub fn process_id(&self) -> Option<u32> {
        match &*self.inner.phase.borrow() {
            Phase::Ready(connection) => connection.pid(),
            _ => None,
        }
    }

    /// What the sandbox enforces for this plugin, in one sentence: the OS sandbox's files,
    /// network and limits, the Node.js version and its own permission flags, and the
    /// environment.
    pub fn sandbox(&self) -> &str {
        &self.inner.sandbox
    }

    /// Input schemas the plugin gave for tools whose manifest has none.
    pub(super) fn schemas(&self) -> &serde_json::Map<String, Value> {
        &self.inner.schemas
    }

    /// Calls the tool `tool` (its manifest `handler` is `handler`) with `arguments`. Waits for
    /// a restarting process; `progress` receives the plugin's progress notifications.
    /// Dropping the future cancels the call in the plugin.
    ///
    /// # Errors
    ///
    /// [`NodeCallError`] for everything a plugin can do wrong; the plugin keeps serving.
    pub async fn call_tool(
        &self,
        tool: &str,
        handler: &str,
        arguments: &Value,
        progress: Option<Progress>,
    ) -> Result<Value, NodeCallError> {
        let connection = self.connection().await?;
        let params = CallParams {
            tool,
            handler,
            arguments,
        };
        connection.request("tools/call", params, progress).await
    }

    /// Runs the direct command `command` (its manifest `handler` is `handler`) with `input`,
    /// within the runtime's `timeout_ms`.
    ///
    /// # Errors
    ///
    /// As [`call_tool`](Self::call_tool), and [`NodeCallError::Timeout`].
    pub async fn run_command(
        &self,
        command: &str,
        handler: &str,
        input: &Value,
    ) -> Result<Value, NodeCallError> {
        let params = CommandParams {
            command,
            handler,
            input,
        };
        self.timed("commands/execute", params, None).await
    }

    /// Runs the hook `handler` for `event` with `context`, within the runtime's `timeout_ms`.
    ///
    /// # Errors
    ///
    /// As [`run_command`](Self::run_command).
    pub async fn run_hook(
        &self,
        event: &str,
        handler: &str,
        context: &Value,
    ) -> Result<Value, NodeCallError> {
        let params = HookParams {
            event,
            handler,
            context,
        };
        self.timed("hooks/run", params, None).await
    }

    /// Starts (`start`) or stops the background service `service`, within the runtime's
    /// `timeout_ms`.
    ///
    /// # Errors
    ///
    /// As [`run_command`](Self::run_command).
    pub async fn run_service(&self, service: &str, start: bool) -> Result<Value, NodeCallError> {
        let method = if start {
            "services/start"
        } else {
            "services/stop"
        };
        self.timed(method, json!({ "service": service }), None)
            .await
    }

    /// Answers an HTTP request to a route with `handler`, within the runtime's `timeout_ms`.
    ///
    /// # Errors
    ///
    /// As [`run_command`](Self::run_command).
    pub async fn run_route(&self, handler: &str, request: &Value) -> Result<Value, NodeCallError> {
        self.timed("routes/handle", RouteParams { handler, request }, None)
            .await
    }

    /// Runs the channel's or provider's handler `call` names (by `channels/call` or
    /// `providers/call`), within the runtime's `timeout_ms`. With `chunks`, the handler's
    /// `chunk` notifications are sent there as they come.
    pub(in crate::plugin) async fn run_adapter(
        &self,
        call: &AdapterCall<'_>,
        chunks: Option<tokio::sync::mpsc::UnboundedSender<Value>>,
    ) -> Result<Value, NodeCallError> {
        let key = if call.method.starts_with("channels") {
            "channel"
        } else {
            "provider"
        };
        let params = json!({
            key: call.adapter,
            "role": call.role,
            "handler": call.handler,
            "input": call.input,
        });
        self.timed(call.method, params, chunks).await
    }

    /// Sends a request once the process is running and waits for its answer within the
    /// runtime's `timeout_ms`; with `chunks`, its `chunk` notifications go there.
    async fn timed(
        &self,
        method: &str,
        params: impl serde::Serialize,
        chunks: Option<tokio::sync::mpsc::UnboundedSender<Value>>,
    ) -> Result<Value, NodeCallError> {
        let connection = self.connection().await?;
        let timeout = self.inner.timeout;
        let answer = async {
            match chunks {
                Some(chunks) => connection.request_streaming(method, params, chunks).await,
                None => connection.request(method, params, None).await,
            }
        };
        tokio::time::timeout(timeout, answer)
            .await
            .unwrap_or(Err(NodeCallError::Timeout(timeout)))
    }

    /// Messages the plugin's channels receive from now on, as `(channel, message)`.
    pub(in crate::plugin) fn inbound(&self) -> broadcast::Receiver<(Arc<str>, Value)> {
        self.inner.inbound.subscribe()
    }

    /// Kills the process now, as a crash would: calls in flight fail and the supervisor
    /// restarts it. For tests of what a crash costs, and for a process known to be wedged.
    pub fn kill(&self) {
        if let Phase::Ready(connection) = &*self.inner.phase.borrow() {
            connection.kill();
        }
    }

    /// Stops the process gracefully and waits until it is gone: `shutdown`, then a kill after
    /// the grace period. Later calls fail with [`NodeCallError::Unavailable`].
    pub async fn shutdown(&self) {
        let running = match &*self.inner.phase.borrow() {
            Phase::Ready(connection) => Some(Arc::clone(connection)),
            _ => None,
        };
        self.inner.stop.cancel();
        let mut phase = self.inner.phase.clone();
        let _ = phase.wait_for(|p| matches!(p, Phase::Stopped)).await;
        if let Some(connection) = running {
            connection.exited().await;
        }
    }

    async fn connection(&self) -> Result<Arc<connection::Connection>, NodeCallError> {
        let mut phase = self.inner.phase.clone();
        loop {
            match &*phase.borrow_and_update() {
                Phase::Ready(connection) if connection.exit_reason().is_none() => {
                    return Ok(Arc::clone(connection));
                }
                Phase::Failed(message) => {
                    return Err(NodeCallError::Unavailable(message.clone()));
                }
                Phase::Stopped => {
                    return Err(NodeCallError::Unavailable("it was stopped".into()));
                }
                _ => {}
            }
            if phase.changed().await.is_err() {
                return Err(NodeCallError::Unavailable("it was stopped".into()));
            }
        }
    }
}

/// Runs a Node.js plugin's tool.
pub(super) struct NodeHandler {
    pub(super) plugin: NodePlugin,
    pub(super) handler: String,
}

impl ToolHandler for NodeHandler {
    fn call<'a>(
        &'a self,
        definition: &'a ToolDefinition,
        args: Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let progress = ctx.progress();
            let progress = progress.is_listening().then_some(progress);
            self.plugin
                .call_tool(&definition.name, &self.handler, &args, progress)
                .await
                .map(ToolOutput::json)
                .map_err(|error| match error {
                    NodeCallError::Handler(message) => ToolError::Execution(message),
                    NodeCallError::Cancelled => ToolError::cancelled(&definition.name),
                    other => {
                        ToolError::Execution(format!("plugin `{}`: {other}", self.plugin.id()))
                    }
                })
        })
    }
}
