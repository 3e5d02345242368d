//! [`McpServer`]: what a tool server is served with (name, prompts, resources, auth, CORS,
//! paging) and how it is started, over stdio, any byte streams or streamable HTTP.

use std::fmt;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::model::{
    Implementation, PromptsCapability, ResourcesCapability, ServerCapabilities, ServerConfig,
};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use super::listing::DEFAULT_PAGE_SIZE;
use super::resources::{RESOURCE_EVENTS, ResourceEvent};
use super::stdio::LineTransport;
use super::unreadable::DEFAULT_MAX_REQUEST;
use super::{Served, Session};
use crate::mcp::http::drain::InFlight;
use crate::mcp::http::sessions::SessionLimits;
use crate::mcp::prompts::PromptSource;
use crate::mcp::resources::ResourceSource;
use crate::mcp::tasks::TaskTable;
use crate::mcp::{EventLog, McpAuth, McpError, McpTasks, SessionStore};
use crate::schema::{Dialect, Refs};
use crate::{AlephToolServer, LogLevel};

/// A tool server as an MCP server.
///
/// Cheap to clone; every clone serves the same tools. Each connection (a stdio pair, an HTTP
/// session) sees the tools as they are when it asks, and hears when they change.
///
/// ```no_run
/// use aleph_tools::AlephToolServer;
/// use aleph_tools::mcp::McpServer;
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let tools = AlephToolServer::from_registry()?;
/// McpServer::new(&tools)
///     .with_name("weather", "1.2.0")
///     .with_instructions("Weather for any city; call get_weather.")
///     .serve_stdio()
///     .await?;
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct McpServer {
    served: Served,
    pub(in crate::mcp) allowed_hosts: Option<Arc<[String]>>,
    pub(in crate::mcp) router: Option<axum::Router>,
    pub(in crate::mcp) auth: Option<McpAuth>,
    pub(in crate::mcp) cors_origins: Option<Arc<[String]>>,
    pub(in crate::mcp) sse_polling: Option<Duration>,
    pub(in crate::mcp) sse_retry: Option<Duration>,
    pub(in crate::mcp) sessions: SessionLimits,
    pub(in crate::mcp) shared_sessions: Option<Arc<dyn SessionStore>>,
    pub(in crate::mcp) shared_events: Option<Arc<dyn EventLog>>,
    pub(in crate::mcp) max_request: usize,
}

impl fmt::Debug for McpServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpServer")
            .field("name", &self.served.info.server_info.name)
            .field("tools", &self.served.tools.len())
            .finish_non_exhaustive()
    }
}

impl McpServer {
    /// Serves `tools` (an [`AlephToolServer`](crate::AlephToolServer)),
    /// introducing itself as `aleph-tools` with this crate's version.
    pub fn new(tools: &AlephToolServer) -> Self {
        Self {
            served: Served {
                tools: tools.clone(),
                info: Arc::new(server_config(Implementation::new(
                    "aleph-tools",
                    env!("CARGO_PKG_VERSION"),
                ))),
                dialect: Dialect::MCP,
                listing: Arc::default(),
                unknown_tools_as_results: false,
                page_size: DEFAULT_PAGE_SIZE,
                prompts: Arc::new([]),
                resources: Arc::new([]),
                resource_events: broadcast::channel(RESOURCE_EVENTS).0,
                waiting: Arc::default(),
                tasks: Arc::default(),
                in_flight: Arc::default(),
            },
            allowed_hosts: None,
            router: None,
            auth: None,
            cors_origins: None,
            sse_polling: None,
            sse_retry: None,
            sessions: SessionLimits::default(),
            shared_sessions: None,
            shared_events: None,
            max_request: DEFAULT_MAX_REQUEST,
        }
    }

    /// The name and version the server gives clients in its `initialize` answer.
    #[must_use]
    pub fn with_name(mut self, name: impl Into<String>, version: impl Into<String>) -> Self {
        Arc::make_mut(&mut self.served.info).server_info = Implementation::new(name, version);
        self
    }

    /// Instructions for the client's model: when to use these tools, how they fit together.
    #[must_use]
    pub fn with_instructions(mut self, instructions: impl Into<String>) -> Self {
        Arc::make_mut(&mut self.served.info).instructions = Some(instructions.into());
        self
    }

    /// What `tools/list` does with `$ref`s in input schemas. The default,
    /// [`Refs::Inline`], writes each referenced type out where it is used, since some MCP
    /// clients do not follow `$ref`; [`Refs::Keep`] lists schemas with their `$defs` as
    /// written, for clients that implement JSON Schema 2020-12 in full.
    #[must_use]
    pub fn with_schema_refs(mut self, refs: Refs) -> Self {
        self.served.dialect = Dialect::Mcp { refs };
        self.served.listing = Arc::default();
        self
    }

    /// How a call to a tool that is not served is answered. By default, as the protocol
    /// says: a JSON-RPC error (`-32602`, invalid params) whose message names the tool and
    /// the closest served names ("unknown tool `get_wether`; did you mean `get_weather`?").
    /// With `true`, as a tool result with `isError: true` and the same message, which a
    /// client hands to its model like any failed call, so the model reads the suggestion
    /// and can retry; some clients show protocol errors to the user instead.
    #[must_use]
    pub fn with_unknown_tools_as_results(mut self, as_results: bool) -> Self {
        self.served.unknown_tools_as_results = as_results;
        self
    }

    /// Serves the prompts of `source` (its prompts as they are at each request) beside the
    /// tools, and declares the `prompts` capability. Given more than once, every source is
    /// served; when two list the same name, the first source given wins.
    ///
    /// ```
    /// use aleph_tools::AlephToolServer;
    /// use aleph_tools::mcp::{McpPrompt, McpServer};
    ///
    /// let tools = AlephToolServer::new();
    /// let server = McpServer::new(&tools)
    ///     .with_prompts(McpPrompt::text("style", "House style.", "Answer in short sentences."));
    /// # let _ = server;
    /// ```
    #[must_use]
    pub fn with_prompts(mut self, source: impl PromptSource) -> Self {
        let mut sources = self.served.prompts.to_vec();
        sources.push(Arc::new(source));
        self.served.prompts = sources.into();
        Arc::make_mut(&mut self.served.info).capabilities.prompts =
            Some(PromptsCapability::default());
        self
    }

    /// Serves the resources and templates of `source` (as they are at each request) and
    /// declares the `resources` capability, with subscriptions and list changes. Given
    /// more than once, every source is served; when two have the same URI, the first
    /// source given wins, and a fixed resource wins over a template that matches its URI.
    ///
    /// ```
    /// use aleph_tools::AlephToolServer;
    /// use aleph_tools::mcp::{McpResource, McpServer};
    ///
    /// let tools = AlephToolServer::new();
    /// let server = McpServer::new(&tools).with_resources(McpResource::text(
    ///     "docs://style",
    ///     "style",
    ///     "text/markdown",
    ///     "Answer in short sentences.",
    /// ));
    /// // Later, when what `docs://style` reads has changed:
    /// server.resource_updated("docs://style");
    /// ```
    #[must_use]
    pub fn with_resources(mut self, source: impl ResourceSource) -> Self {
        let mut sources = self.served.resources.to_vec();
        sources.push(Arc::new(source));
        self.served.resources = sources.into();
        let mut capability = ResourcesCapability::default();
        capability.subscribe = Some(true);
        capability.list_changed = Some(true);
        Arc::make_mut(&mut self.served.info).capabilities.resources = Some(capability);
        self
    }

    /// Tells every client subscribed to `uri` that what it reads has changed
    /// (`notifications/resources/updated`), so it reads it again. Any clone of this server,
    /// serving or not, reaches every session of them all.
    pub fn resource_updated(&self, uri: impl Into<String>) {
        let _ = self
            .served
            .resource_events
            .send(ResourceEvent::Updated(uri.into()));
    }

    /// Tells every client that the list of resources or templates has changed
    /// (`notifications/resources/list_changed`), so it lists them again.
    pub fn resources_changed(&self) {
        let _ = self.served.resource_events.send(ResourceEvent::ListChanged);
    }

    /// How many tools one `tools/list` answer holds at most (500 unless set; at least 1).
    /// A longer list comes in pages, in name order: each answer but the last carries a
    /// `nextCursor` the client sends back for the next page. A cursor names the last tool
    /// of its page, so tools added or removed between pages neither repeat nor shift the
    /// rest.
    #[must_use]
    pub fn with_page_size(mut self, tools: usize) -> Self {
        self.served.page_size = tools.max(1);
        self
    }

    /// How the tasks clients start are kept: how long, how often clients poll, how many at
    /// once (see [`McpTasks`] for the defaults). A call runs as a task when its tool is
    /// marked `task` (`#[tool(task)]`, [`ToolDefinition::with_task`](crate::ToolDefinition::with_task),
    /// `task = true` in a plugin manifest) and the client declares the tasks extension
    /// (`io.modelcontextprotocol/tasks`) on the request or at the handshake; the client gets
    /// a task handle at once and polls `tasks/get`. Tasks already kept stay as they were
    /// started.
    ///
    /// ```
    /// use std::time::Duration;
    /// use aleph_tools::AlephToolServer;
    /// use aleph_tools::mcp::{McpServer, McpTasks};
    ///
    /// let tools = AlephToolServer::new();
    /// let server = McpServer::new(&tools)
    ///     .with_tasks(McpTasks::new().with_ttl(Duration::from_secs(600)));
    /// # let _ = server;
    /// ```
    #[must_use]
    pub fn with_tasks(mut self, tasks: McpTasks) -> Self {
        self.served.tasks = Arc::new(TaskTable::new(tasks));
        self
    }

    /// Shares [`serve_http`](Self::serve_http)'s sessions through `store` (such as a
    /// [`RedisStore`](crate::mcp::RedisStore)), so that replicas behind a load balancer
    /// without sticky sessions serve every session:
    ///
    /// - A request that lands on a replica that did not open its session wakes it there, as
    ///   a session that slept wakes. A session's handshake is kept for its idle timeout,
    ///   renewed as it is used; a request of another identity than the one that opened it
    ///   does not wake it.
    /// - Each request's events are logged as they are sent, so a client whose stream broke
    ///   resumes it (`Last-Event-ID`) on any replica: it gets what it missed, then the rest
    ///   as the replica answering the request sends it. When that replica stops before it
    ///   answers, the resumed stream ends with an error answer to the request, never in
    ///   silence.
    /// - A question a tool asks its caller (an elicitation, a sampling request) names the
    ///   replica that asked in its id; the client's answer, wherever it lands, is relayed
    ///   there.
    ///
    /// What a client set in its session (a log level, subscriptions) and the session's
    /// common stream (a `GET` without `Last-Event-ID`) stay with the replica that holds them.
    #[must_use]
    pub fn with_session_store<S: SessionStore + EventLog>(mut self, store: S) -> Self {
        let store = Arc::new(store);
        self.shared_sessions = Some(Arc::clone(&store) as Arc<dyn SessionStore>);
        self.shared_events = Some(store);
        self
    }

    /// The `Host` headers [`serve_http`](Self::serve_http) accepts (names, or `host:port`).
    /// The default accepts only loopback names, which keeps web pages from reaching a local
    /// server through DNS rebinding; a server reachable from elsewhere lists its names here.
    /// Pages served from these hosts (`http` or `https`, on the port given, or any port when
    /// none is) may call the server from a browser too.
    #[must_use]
    pub fn with_allowed_hosts(
        mut self,
        hosts: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        self.allowed_hosts = Some(hosts.into_iter().map(Into::into).collect());
        self
    }

    /// Requires a bearer token of every HTTP request, as [`McpAuth`] describes, and serves
    /// the protected-resource metadata document. Each call's [`ToolContext`](crate::ToolContext) carries the
    /// [`Identity`](crate::Identity) the authorizer returned, its scopes granted as
    /// capabilities, so tools, hooks and [`Permission`](crate::middleware::Permission) can
    /// tell callers apart. Stdio is not affected: its client is whoever started the process.
    ///
    /// ```no_run
    /// use aleph_tools::{AlephToolServer, Identity};
    /// use aleph_tools::mcp::{McpAuth, McpServer, StaticTokens};
    ///
    /// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// let tools = AlephToolServer::from_registry()?;
    /// let token = std::env::var("TOOLS_TOKEN")?;
    /// let auth = McpAuth::new(StaticTokens::new().with_token(token, Identity::new("ci")));
    /// McpServer::new(&tools)
    ///     .with_auth(auth)
    ///     .serve_http("127.0.0.1:8080")
    ///     .await?
    ///     .wait()
    ///     .await?;
    /// # Ok(())
    /// # }
    /// ```
    #[must_use]
    pub fn with_auth(mut self, auth: McpAuth) -> Self {
        self.auth = Some(auth);
        self
    }

    /// Lets web pages from these origins (`https://app.example.com`, scheme and host and
    /// any port the page uses) call the server from a browser; `"*"` lets any page. The
    /// answers carry the CORS headers MCP needs: `Authorization`, `Content-Type`,
    /// `Mcp-Session-Id`, `Mcp-Protocol-Version` and `Last-Event-ID` allowed,
    /// `Mcp-Session-Id` and `WWW-Authenticate` readable. Without it, no CORS headers are
    /// sent and browsers keep pages of other origins out.
    ///
    /// Whatever the browser does, a request whose `Origin` is not trusted is refused with
    /// `403 Forbidden`, as the MCP transport requires against DNS rebinding. Trusted are these
    /// origins, the server's own (`http://localhost:PORT`, `http://127.0.0.1:PORT`,
    /// `http://[::1]:PORT` on the port it serves) and pages of
    /// [`with_allowed_hosts`](Self::with_allowed_hosts). Requests without `Origin` (clients
    /// other than browsers) are not affected.
    #[must_use]
    pub fn with_cors_origins(
        mut self,
        origins: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        self.cors_origins = Some(origins.into_iter().map(Into::into).collect());
        self
    }

    /// Closes the event stream of an HTTP request still running after `after`, so no
    /// connection stays open longer than that, and proxies that cut long streams have none
    /// to cut. The client reconnects when the stream's last event tells it to (see
    /// [`with_sse_retry`](Self::with_sse_retry)) with a `GET` carrying `Last-Event-ID`, gets
    /// the events it missed and the answer when it comes, and is cut again after as long.
    /// This is SSE polling from the 2025-11-25 revision; the official SDKs' clients
    /// reconnect on their own. Only requests in a session (of clients that begin with
    /// `initialize`) are cut: a 2026-07-28 request without one has nowhere to resume, so it
    /// is answered on its own stream. Stdio has no streams to close.
    ///
    /// ```
    /// use std::time::Duration;
    /// use aleph_tools::AlephToolServer;
    /// use aleph_tools::mcp::McpServer;
    ///
    /// let tools = AlephToolServer::new();
    /// let server = McpServer::new(&tools)
    ///     .with_sse_polling(Duration::from_secs(30))
    ///     .with_sse_retry(Duration::from_secs(1));
    /// # let _ = server;
    /// ```
    #[must_use]
    pub fn with_sse_polling(mut self, after: Duration) -> Self {
        self.sse_polling = Some(after);
        self
    }

    /// How long an HTTP client waits before it reconnects when an event stream ends before
    /// its answer, whether the network dropped it or [`with_sse_polling`](Self::with_sse_polling)
    /// closed it: the SSE `retry` field of each stream's first event and of the last one
    /// before a close. Three seconds unless set.
    #[must_use]
    pub fn with_sse_retry(mut self, retry: Duration) -> Self {
        self.sse_retry = Some(retry);
        self
    }

    /// How long an HTTP session may go unused before it ends: five minutes unless set. A
    /// session is in use while a request of it runs or its client holds its `GET` event
    /// stream open (where notifications come); one without either for this long is closed,
    /// and its id then gets `404 Not Found`, which tells the client to open a new session.
    /// Clients that keep the `GET` stream open (the official SDKs do) never see it.
    ///
    /// An idle session gives up most of what it holds after a minute (or half this time,
    /// if shorter): it then costs about a kilobyte, and its next request brings it back.
    ///
    /// ```
    /// use std::time::Duration;
    /// use aleph_tools::AlephToolServer;
    /// use aleph_tools::mcp::McpServer;
    ///
    /// let tools = AlephToolServer::new();
    /// let server = McpServer::new(&tools)
    ///     .with_session_idle_timeout(Duration::from_secs(600))
    ///     .with_max_sessions(256)
    ///     .with_max_sessions_per_identity(16);
    /// # let _ = server;
    /// ```
    #[must_use]
    pub fn with_session_idle_timeout(mut self, idle: Duration) -> Self {
        self.sessions.idle_timeout = idle.max(Duration::from_millis(10));
        self
    }

    /// The most HTTP sessions the server holds at once: 1024 unless set (at least 1). An
    /// `initialize` past it is refused with `503 Service Unavailable` and a JSON-RPC error
    /// that says the limit and what to do: close sessions no longer used (`DELETE /mcp`)
    /// or wait for idle ones to end ([`with_session_idle_timeout`](Self::with_session_idle_timeout)).
    /// Requests of sessions already open, and requests without a session, are served.
    #[must_use]
    pub fn with_max_sessions(mut self, sessions: usize) -> Self {
        self.sessions.max_sessions = sessions.max(1);
        self
    }

    /// The most HTTP sessions one identity (the subject [`with_auth`](Self::with_auth)'s
    /// authorizer returns) holds at once: 64 unless set (at least 1), so one token holder
    /// cannot take every session. Past it, that identity's `initialize` is refused with
    /// `429 Too Many Requests` and a JSON-RPC error naming the limit. Without auth every
    /// client is anonymous and only [`with_max_sessions`](Self::with_max_sessions) applies.
    #[must_use]
    pub fn with_max_sessions_per_identity(mut self, sessions: usize) -> Self {
        self.sessions.max_per_identity = sessions.max(1);
        self
    }

    /// The largest request the server reads, in bytes: 8 MiB unless set. Over stdio a longer
    /// line, over HTTP a longer body, is answered with a JSON-RPC error naming the limit
    /// (HTTP status `413`), and the server goes on serving.
    #[must_use]
    pub fn with_max_request_size(mut self, bytes: usize) -> Self {
        self.max_request = bytes.max(1024);
        self
    }

    /// Routes [`serve_http`](Self::serve_http) serves beside `/mcp`, such as a plugin
    /// manager's [`router`](crate::plugin::PluginManager::router) (feature `routes`). They
    /// get the same `Host` check as `/mcp` and, with [`with_auth`](Self::with_auth), need
    /// the same token. Routes given more than once are merged.
    #[must_use]
    pub fn with_router(mut self, router: axum::Router) -> Self {
        self.router = Some(match self.router.take() {
            Some(before) => before.merge(router),
            None => router,
        });
        self
    }

    /// Serves one client over this process's stdin and stdout until the client closes them.
    /// Nothing else may write to stdout meanwhile; log to stderr.
    ///
    /// # Errors
    ///
    /// [`McpError::Session`] when the client breaks off before the handshake ends.
    pub async fn serve_stdio(self) -> Result<(), McpError> {
        self.serve(tokio::io::stdin(), tokio::io::stdout()).await
    }

    /// Serves one client over any byte stream pair (a socket's halves, a pipe, an in-memory
    /// duplex), newline-delimited JSON-RPC as on stdio, until the client closes its side.
    ///
    /// A line the server cannot read gets the JSON-RPC error that says why, with the
    /// request's `id` when it can be found (`null` otherwise), and the next line is read as
    /// if nothing happened: `-32700` for one that is not JSON, `-32600` for one nested
    /// deeper than 127 objects and arrays or longer than
    /// [`with_max_request_size`](Self::with_max_request_size), naming the limit.
    ///
    /// # Errors
    ///
    /// As [`serve_stdio`](Self::serve_stdio).
    pub async fn serve<R, W>(self, reader: R, writer: W) -> Result<(), McpError>
    where
        R: AsyncRead + Send + Unpin + 'static,
        W: AsyncWrite + Send + Unpin + 'static,
    {
        let transport = LineTransport::start(reader, writer, self.max_request);
        let running = self
            .session()
            .serve(transport)
            .await
            .map_err(|err| McpError::Session(err.to_string()))?;
        running
            .waiting()
            .await
            .map_err(|err| McpError::Session(err.to_string()))?;
        Ok(())
    }

    /// A count of its sessions' running calls of its own, apart from other clones': what
    /// one HTTP server waits for when it drains.
    pub(in crate::mcp) fn count_calls_apart(&mut self) -> Arc<InFlight> {
        self.served.in_flight = Arc::default();
        Arc::clone(&self.served.in_flight)
    }

    /// The tasks its sessions started.
    pub(in crate::mcp) fn task_store(&self) -> Arc<TaskTable> {
        Arc::clone(&self.served.tasks)
    }

    /// The handler of one connection.
    pub(in crate::mcp) fn session(&self) -> Session {
        let closed = CancellationToken::new();
        Session {
            served: self.served.clone(),
            remembered: OnceLock::new(),
            listen_starts: Mutex::default(),
            notifier: OnceLock::new(),
            _closed_on_drop: closed.clone().drop_guard(),
            closed,
        }
    }
}

/// The least severe log message a client hears before it sends `logging/setLevel`.
pub(super) const DEFAULT_LOG_LEVEL: LogLevel = LogLevel::Info;

#[allow(deprecated)] // logging, by MCP 2026-07-28; clients of the earlier revisions use it
fn server_config(implementation: Implementation) -> ServerConfig {
    let capabilities = ServerCapabilities::builder()
        .enable_tools()
        .enable_tool_list_changed()
        .enable_logging()
        .enable_tasks()
        .build();
    ServerConfig::new(capabilities).with_server_info(implementation)
}
