//! Wrapping an MCP server's tools as dynamic tools of a tool server.

use std::collections::HashMap;
use std::fmt;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex, OnceLock, RwLock, Weak};

use crate::sync::{self, lock};

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CancelledNotification, CancelledNotificationParam,
    ClientCapabilities, ClientConfig, ClientNotification, ClientRequest, Implementation,
    NumberOrString, ProgressNotificationParam, ProgressToken, RequestId, ServerResult,
};
use rmcp::service::NotificationContext;
use rmcp::service::PeerRequestOptions;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, Peer, RoleClient, ServiceError, ServiceExt};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::McpError;
use super::convert::{definition_from_mcp, output_from_mcp};
use super::names::local_names;
use crate::tool::{AlephToolDyn, BoxFuture, ToolDefinition};
use crate::{AlephToolServer, Progress, RegistryError, ToolContext, ToolError, ToolOutput};

/// Where an MCP server is: a command that speaks MCP on its stdin and stdout, or a
/// streamable HTTP URL.
///
/// ```
/// use aleph_tools::mcp::McpEndpoint;
///
/// let local = McpEndpoint::command("npx")
///     .args(["-y", "@modelcontextprotocol/server-everything"])
///     .env("LOG_LEVEL", "warn");
/// let remote = McpEndpoint::url("http://127.0.0.1:8080/mcp");
/// assert_eq!(local.to_string(), "npx -y @modelcontextprotocol/server-everything");
/// assert_eq!(remote.to_string(), "http://127.0.0.1:8080/mcp");
/// ```
#[derive(Debug, Clone)]
pub struct McpEndpoint {
    kind: EndpointKind,
}

#[derive(Debug, Clone)]
enum EndpointKind {
    Command {
        program: String,
        args: Vec<String>,
        env: Vec<(String, String)>,
        dir: Option<PathBuf>,
    },
    Url(String),
}

impl McpEndpoint {
    /// A server started as `program`, speaking MCP over its stdin and stdout. Its stderr
    /// goes to this process's stderr.
    pub fn command(program: impl Into<String>) -> Self {
        Self {
            kind: EndpointKind::Command {
                program: program.into(),
                args: Vec::new(),
                env: Vec::new(),
                dir: None,
            },
        }
    }

    /// A server at a streamable HTTP URL (`http://host:port/mcp`).
    pub fn url(url: impl Into<String>) -> Self {
        Self {
            kind: EndpointKind::Url(url.into()),
        }
    }

    /// Adds an argument to the command. No effect on a URL.
    #[must_use]
    pub fn arg(self, arg: impl Into<String>) -> Self {
        self.args([arg])
    }

    /// Adds arguments to the command. No effect on a URL.
    #[must_use]
    pub fn args(mut self, more: impl IntoIterator<Item = impl Into<String>>) -> Self {
        if let EndpointKind::Command { args, .. } = &mut self.kind {
            args.extend(more.into_iter().map(Into::into));
        }
        self
    }

    /// Sets an environment variable for the command. No effect on a URL.
    #[must_use]
    pub fn env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        if let EndpointKind::Command { env, .. } = &mut self.kind {
            env.push((key.into(), value.into()));
        }
        self
    }

    /// Sets the command's working directory. No effect on a URL.
    #[must_use]
    pub fn current_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        if let EndpointKind::Command { dir: slot, .. } = &mut self.kind {
            *slot = Some(dir.into());
        }
        self
    }
}

impl fmt::Display for McpEndpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            EndpointKind::Command { program, args, .. } => {
                f.write_str(program)?;
                for arg in args {
                    write!(f, " {arg}")?;
                }
                Ok(())
            }
            EndpointKind::Url(url) => f.write_str(url),
        }
    }
}

/// Settings for a connection; from [`McpConnection::builder`].
#[derive(Debug, Clone)]
#[must_use]
pub struct McpConnectionBuilder {
    endpoint: McpEndpoint,
    prefix: Option<String>,
}

impl McpConnectionBuilder {
    /// Serves the tools as `{prefix}_{name}`, so that two servers' `search` tools can live
    /// side by side. Without a prefix the tools keep their (cleaned) names.
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = Some(prefix.into());
        self
    }

    /// Connects, lists the server's tools and serves them on `server`.
    ///
    /// # Errors
    ///
    /// [`McpError::Spawn`] when the command does not start, [`McpError::Connect`] when the
    /// handshake fails, [`McpError::ListTools`] when the tools cannot be listed. A tool that
    /// cannot be served (its name taken by another tool, its schema unusable) is skipped
    /// and reported by [`McpConnection::skipped`], not an error.
    pub async fn connect(self, server: &AlephToolServer) -> Result<McpConnection, McpError> {
        let label = self
            .prefix
            .clone()
            .filter(|p| !p.is_empty())
            .unwrap_or_else(|| self.endpoint.to_string());
        let inner = Arc::new(Inner {
            remote: Arc::new(Remote {
                label,
                link: RwLock::new(None),
                calls: Arc::default(),
            }),
            endpoint: self.endpoint,
            prefix: self.prefix,
            server: server.clone(),
            served: Mutex::new(Served::default()),
            refreshing: tokio::sync::Mutex::new(()),
        });
        inner.open().await?;
        inner.refresh().await?;
        Ok(McpConnection { inner })
    }
}

/// A connection to an MCP server whose tools are served beside the others.
///
/// Each remote tool becomes an [`McpToolWrapper`] named by [`clean_tool_name`] (with the
/// prefix), of category [`Mcp`](crate::ToolCategory::Mcp) and tagged `mcp:{prefix}`; calls
/// go through the server's whole pipeline, then to the remote tool by its own name. When
/// the remote server says its tools changed, they are listed again and swapped in one
/// change. Dropping the connection (or [`close`](Self::close)) removes its tools and stops
/// the server it started.
///
/// ```no_run
/// use aleph_tools::AlephToolServer;
/// use aleph_tools::mcp::{McpConnection, McpEndpoint};
/// use serde_json::json;
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let server = AlephToolServer::new();
/// let everything = McpConnection::builder(
///     McpEndpoint::command("npx").args(["-y", "@modelcontextprotocol/server-everything"]),
/// )
/// .prefix("everything")
/// .connect(&server)
/// .await?;
/// assert_eq!(everything.remote_name("everything_get-sum").as_deref(), Some("get-sum"));
/// let sum = server.call("everything_get-sum", json!({ "a": 2, "b": 3 })).await;
/// # Ok(())
/// # }
/// ```
///
/// [`clean_tool_name`]: super::clean_tool_name
pub struct McpConnection {
    inner: Arc<Inner>,
}

impl fmt::Debug for McpConnection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpConnection")
            .field("server", &self.inner.remote.label)
            .field("endpoint", &self.inner.endpoint.to_string())
            .field("connected", &self.is_connected())
            .field("tools", &self.tools())
            .finish()
    }
}

impl McpConnection {
    /// Starts a connection to `endpoint`; finish with
    /// [`connect`](McpConnectionBuilder::connect).
    pub fn builder(endpoint: McpEndpoint) -> McpConnectionBuilder {
        McpConnectionBuilder {
            endpoint,
            prefix: None,
        }
    }

    /// The server's label in messages: the prefix, else the command or URL.
    pub fn label(&self) -> &str {
        &self.inner.remote.label
    }

    /// The names this connection's tools are served under, sorted.
    pub fn tools(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .inner
            .served()
            .tools
            .iter()
            .map(|t| t.name.clone())
            .collect();
        names.sort_unstable();
        names
    }

    /// The remote server's name for the tool served as `local`.
    pub fn remote_name(&self, local: &str) -> Option<String> {
        self.inner
            .served()
            .tools
            .iter()
            .find(|t| t.name == local)
            .map(|t| t.remote_name.clone())
    }

    /// Tools the remote server lists that are not served, each with the reason (a name
    /// taken by another tool, a schema that cannot be used).
    pub fn skipped(&self) -> Vec<String> {
        self.inner.served().skipped.clone()
    }

    /// Whether the server is still connected. A server that exited, or an HTTP server
    /// that closed the session, is not.
    pub fn is_connected(&self) -> bool {
        self.inner
            .remote
            .current()
            .is_some_and(|link| !link.ended.is_cancelled())
    }

    /// The process id of a command's server, while it runs.
    pub fn process_id(&self) -> Option<u32> {
        self.inner.remote.current().and_then(|link| link.pid)
    }

    /// Lists the remote tools again and serves the new set in one change. It happens by
    /// itself when the server sends `notifications/tools/list_changed`.
    ///
    /// # Errors
    ///
    /// [`McpError::ListTools`] when the server is gone or refuses; the tools served stay.
    pub async fn refresh(&self) -> Result<(), McpError> {
        self.inner.refresh().await
    }

    /// Connects again (starting the command again), then lists and serves the tools. The
    /// tools stay served meanwhile and answer with an error until the server is back.
    ///
    /// # Errors
    ///
    /// As [`McpConnectionBuilder::connect`].
    pub async fn reconnect(&self) -> Result<(), McpError> {
        if let Some(old) = self.inner.remote.current() {
            old.stop.cancel();
        }
        self.inner.open().await?;
        self.inner.refresh().await
    }

    /// Removes the tools, closes the connection and waits until the server it started has
    /// stopped.
    pub async fn close(self) {
        let link = self.inner.remote.current();
        drop(self);
        if let Some(link) = link {
            link.ended.cancelled().await;
        }
    }
}

impl Drop for McpConnection {
    fn drop(&mut self) {
        let mut served = self.inner.served();
        // A refresh still running (after a `list_changed`) must not serve them again.
        served.closed = true;
        let names: Vec<String> = served.tools.drain(..).map(|t| t.name).collect();
        drop(served);
        if let Err(err) = self.inner.server.swap_tools(&names, Vec::new()) {
            tracing::warn!(server = %self.inner.remote.label, "could not remove MCP tools: {err}");
        }
        if let Some(link) = sync::write(&self.inner.remote.link).take() {
            link.stop.cancel();
        }
    }
}

/// The connection's state, shared with the task that follows `list_changed`.
struct Inner {
    remote: Arc<Remote>,
    endpoint: McpEndpoint,
    prefix: Option<String>,
    server: AlephToolServer,
    served: Mutex<Served>,
    refreshing: tokio::sync::Mutex<()>,
}

#[derive(Default)]
struct Served {
    /// The tools served (their local and remote names, their definitions).
    tools: Vec<McpToolWrapper>,
    skipped: Vec<String>,
    /// Set when the connection is dropped: nothing is served any more.
    closed: bool,
}

impl Inner {
    fn served(&self) -> std::sync::MutexGuard<'_, Served> {
        lock(&self.served)
    }

    /// Connects (or connects again) and makes the new link current.
    async fn open(self: &Arc<Self>) -> Result<(), McpError> {
        let label = self.remote.label.clone();
        let handler = Client {
            connection: Arc::downgrade(self),
            remote: Arc::downgrade(&self.remote),
        };
        let connect_error = |err: &dyn fmt::Display| McpError::Connect {
            server: label.clone(),
            message: err.to_string(),
        };
        let (running, pid) = match &self.endpoint.kind {
            EndpointKind::Command {
                program,
                args,
                env,
                dir,
            } => {
                let mut command = tokio::process::Command::new(program);
                command.args(args).envs(env.iter().map(|(k, v)| (k, v)));
                if let Some(dir) = dir {
                    command.current_dir(dir);
                }
                let (transport, _) = TokioChildProcess::builder(command)
                    .stderr(Stdio::inherit())
                    .spawn()
                    .map_err(|source| McpError::Spawn {
                        command: self.endpoint.to_string(),
                        source,
                    })?;
                let pid = transport.id();
                let running = handler
                    .serve(transport)
                    .await
                    .map_err(|e| connect_error(&e))?;
                (running, pid)
            }
            EndpointKind::Url(url) => {
                let transport = StreamableHttpClientTransport::from_uri(url.as_str());
                let running = handler
                    .serve(transport)
                    .await
                    .map_err(|e| connect_error(&e))?;
                (running, None)
            }
        };
        let link = Arc::new(Link {
            peer: running.peer().clone(),
            stop: CancellationToken::new(),
            ended: CancellationToken::new(),
            why_ended: OnceLock::new(),
            pid,
        });
        let watched = Arc::clone(&link);
        let cancel = running.cancellation_token();
        tokio::spawn(async move {
            let waiting = running.waiting();
            tokio::pin!(waiting);
            let outcome = tokio::select! {
                outcome = &mut waiting => outcome,
                () = watched.stop.cancelled() => {
                    cancel.cancel();
                    waiting.await
                }
            };
            let why = match outcome {
                Ok(rmcp::service::QuitReason::Cancelled) => "the connection was closed".to_owned(),
                Ok(rmcp::service::QuitReason::Closed) => {
                    "the server closed the connection".to_owned()
                }
                Ok(rmcp::service::QuitReason::JoinError(err)) | Err(err) => {
                    format!("the connection failed: {err}")
                }
                Ok(_) => "the connection ended".to_owned(),
            };
            let _ = watched.why_ended.set(why);
            watched.ended.cancel();
        });
        *sync::write(&self.remote.link) = Some(link);
        Ok(())
    }

    /// Lists the remote tools and serves them in place of the previous set.
    async fn refresh(&self) -> Result<(), McpError> {
        let _one_at_a_time = self.refreshing.lock().await;
        let list_error = |message: String| McpError::ListTools {
            server: self.remote.label.clone(),
            message,
        };
        let link = self
            .remote
            .current()
            .ok_or_else(|| list_error("not connected".into()))?;
        let listed = tokio::select! {
            listed = link.peer.list_all_tools() => listed.map_err(|err| list_error(err.to_string()))?,
            () = link.ended.cancelled() => return Err(list_error(link.why_ended())),
        };
        let names = local_names(
            self.prefix.as_deref(),
            listed.iter().map(|t| t.name.as_ref()),
        );
        let mut pending: Vec<McpToolWrapper> = listed
            .iter()
            .zip(names)
            .map(|(tool, name)| McpToolWrapper {
                definition: definition_from_mcp(&name, &self.remote.label, tool),
                name,
                remote_name: tool.name.to_string(),
                remote: Arc::clone(&self.remote),
            })
            .collect();
        let mut served = self.served();
        if served.closed {
            return Ok(());
        }
        let unchanged = served.skipped.is_empty()
            && pending.len() == served.tools.len()
            && pending.iter().zip(&served.tools).all(|(new, old)| {
                new.remote_name == old.remote_name && new.definition == old.definition
            });
        if unchanged {
            return Ok(());
        }
        let old: Vec<String> = served.tools.iter().map(|t| t.name.clone()).collect();
        let mut skipped = Vec::new();
        loop {
            let tools = pending
                .iter()
                .map(|t| Arc::new(t.clone()) as Arc<dyn AlephToolDyn>)
                .collect();
            match self.server.swap_tools(&old, tools) {
                Ok(()) => break,
                Err(
                    ref err @ (RegistryError::AlreadyServed { ref name }
                    | RegistryError::InvalidDefinition { ref name, .. }),
                ) if pending.iter().any(|t| t.name == *name) => {
                    pending.retain(|t| t.name != *name);
                    skipped.push(err.to_string());
                }
                Err(source) => {
                    return Err(McpError::Registry {
                        server: self.remote.label.clone(),
                        source,
                    });
                }
            }
        }
        for message in &skipped {
            tracing::warn!(server = %self.remote.label, "MCP tool not served: {message}");
        }
        served.tools = pending;
        served.skipped = skipped;
        Ok(())
    }
}

/// What the wrapped tools share: the current link to the server and the calls waiting for
/// progress.
struct Remote {
    label: String,
    link: RwLock<Option<Arc<Link>>>,
    /// Progress token → where the call's progress goes.
    calls: Arc<Mutex<HashMap<String, Progress>>>,
}

impl Remote {
    fn current(&self) -> Option<Arc<Link>> {
        sync::read(&self.link).clone()
    }

    fn calls(&self) -> std::sync::MutexGuard<'_, HashMap<String, Progress>> {
        lock(&self.calls)
    }
}

/// One connection to the server (a new one after each reconnect).
struct Link {
    peer: Peer<RoleClient>,
    /// Cancel to close the connection.
    stop: CancellationToken,
    /// Cancelled once the connection has ended, for whatever reason.
    ended: CancellationToken,
    why_ended: OnceLock<String>,
    pid: Option<u32>,
}

impl Link {
    fn why_ended(&self) -> String {
        self.why_ended
            .get()
            .cloned()
            .unwrap_or_else(|| "the connection ended".into())
    }
}

/// The client side of the connection: follows `list_changed`, routes progress.
struct Client {
    connection: Weak<Inner>,
    remote: Weak<Remote>,
}

impl ClientHandler for Client {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("aleph-tools", env!("CARGO_PKG_VERSION")),
        )
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let Some(connection) = self.connection.upgrade() else {
            return;
        };
        // Not inline: listing is a request, whose answer this handler's loop delivers.
        tokio::spawn(async move {
            if let Err(err) = connection.refresh().await {
                tracing::warn!("{err}");
            }
        });
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let Some(remote) = self.remote.upgrade() else {
            return;
        };
        let key = token_key(&params.progress_token);
        let progress = remote.calls().get(&key).cloned();
        if let Some(progress) = progress {
            progress.report(params.progress, params.total, params.message.as_deref());
        }
    }
}

fn token_key(token: &ProgressToken) -> String {
    match &token.0 {
        NumberOrString::Number(n) => n.to_string(),
        NumberOrString::String(s) => s.to_string(),
    }
}

/// One tool of an MCP server, served as a dynamic tool.
///
/// Made by [`McpConnection`]; calls go to the remote tool by its own name, with the
/// caller's cancellation (sent on as `notifications/cancelled`) and progress (asked for
/// when someone listens, and passed back).
#[derive(Clone)]
pub struct McpToolWrapper {
    name: String,
    remote_name: String,
    definition: ToolDefinition,
    remote: Arc<Remote>,
}

impl fmt::Debug for McpToolWrapper {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpToolWrapper")
            .field("name", &self.name)
            .field("remote_name", &self.remote_name)
            .field("server", &self.remote.label)
            .finish_non_exhaustive()
    }
}

impl McpToolWrapper {
    /// The tool's name on its MCP server.
    pub fn remote_name(&self) -> &str {
        &self.remote_name
    }

    fn down(&self, why: &str) -> ToolError {
        ToolError::Execution(format!(
            "the MCP server `{}` behind `{}` is not reachable: {why}. It has to be reconnected \
             before this tool can be called again.",
            self.remote.label, self.name
        ))
    }

    async fn call_remote(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let link = self
            .remote
            .current()
            .ok_or_else(|| self.down("the connection was closed"))?;
        if link.ended.is_cancelled() {
            return Err(self.down(&link.why_ended()));
        }
        let mut params = CallToolRequestParams::new(self.remote_name.clone());
        params.arguments = match args {
            Value::Object(map) => Some(map),
            _ => None,
        };
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let Ok(handle) = link
            .peer
            .send_request_with_option(request, PeerRequestOptions::no_options())
            .await
        else {
            return Err(self.down("the connection closed"));
        };
        // The SDK gives every request a progress token; the server's progress for this call
        // comes back under it.
        let progress = ctx.progress();
        let _forget = progress.is_listening().then(|| {
            let token = token_key(&handle.progress_token);
            self.remote.calls().insert(token.clone(), progress);
            ForgetCall {
                remote: &self.remote,
                token,
            }
        });
        let mut abandon = CancelOnDrop {
            peer: link.peer.clone(),
            request: Some(handle.id.clone()),
        };
        let cancel = ctx.cancellation_token();
        let outcome = tokio::select! {
            outcome = handle.await_response() => outcome,
            () = cancel.cancelled() => return Err(ToolError::Cancelled { tool: self.name.clone() }),
            () = link.ended.cancelled() => {
                return Err(self.down(&format!("{} during the call", link.why_ended())));
            }
        };
        abandon.request = None;
        match outcome {
            Ok(ServerResult::CallToolResult(result)) => output_from_mcp(result),
            Ok(_) => Err(ToolError::Execution(format!(
                "the MCP server `{}` answered `{}` with something other than a tool result \
                 (a request for more input, or a task), which wrapped tools do not take",
                self.remote.label, self.remote_name
            ))),
            Err(ServiceError::McpError(error)) => Err(ToolError::Execution(format!(
                "the MCP server `{}` refused the call to `{}`: {}",
                self.remote.label, self.remote_name, error.message
            ))),
            Err(ServiceError::TransportClosed | ServiceError::TransportSend(_)) => {
                Err(self.down("the connection closed during the call"))
            }
            Err(other) => Err(ToolError::Execution(format!(
                "the call to `{}` on the MCP server `{}` failed: {other}",
                self.remote_name, self.remote.label
            ))),
        }
    }
}

/// Tells the server a call was given up (the caller cancelled it, or its timeout struck),
/// unless the answer came.
struct CancelOnDrop {
    peer: Peer<RoleClient>,
    request: Option<RequestId>,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let Some(id) = self.request.take() else {
            return;
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let peer = self.peer.clone();
        runtime.spawn(async move {
            let param = CancelledNotificationParam::new(
                Some(id),
                Some("the caller gave up the call".into()),
            );
            let notice =
                ClientNotification::CancelledNotification(CancelledNotification::new(param));
            let _ = peer.send_notification(notice).await;
        });
    }
}

/// Stops routing a call's progress when the call ends, however it ends.
struct ForgetCall<'a> {
    remote: &'a Remote,
    token: String,
}

impl Drop for ForgetCall<'_> {
    fn drop(&mut self) {
        // The SDK hands each notification to its own task, so progress the server sent just
        // before its result can arrive just after it: keep routing a little longer.
        let token = std::mem::take(&mut self.token);
        let calls = Arc::clone(&self.remote.calls);
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(async move {
                    tokio::time::sleep(LATE_PROGRESS).await;
                    lock(&calls).remove(&token);
                });
            }
            Err(_) => {
                lock(&calls).remove(&token);
            }
        }
    }
}

/// How long progress is still routed to a call after its result came.
const LATE_PROGRESS: std::time::Duration = std::time::Duration::from_millis(200);

impl AlephToolDyn for McpToolWrapper {
    fn name(&self) -> &str {
        &self.name
    }

    fn definition(&self) -> ToolDefinition {
        self.definition.clone()
    }

    fn call<'a>(
        &'a self,
        args: Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(self.call_remote(args, ctx))
    }
}
