//! [`McpServer`]: what a tool server is served with (name, prompts, resources, auth, CORS,
//! paging) and how it is started, over stdio, any byte streams or streamable HTTP.

use std::fmt;
use std::sync::{Arc, Mutex, OnceLock};

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
#[cfg(feature = "mcp-http")]
use crate::mcp::http::HttpOptions;
use crate::mcp::prompts::PromptSource;
use crate::mcp::resources::ResourceSource;
#[cfg(feature = "mcp-http")]
use crate::mcp::running::InFlight;
use crate::mcp::tasks::TaskTable;
use crate::mcp::{McpError, McpTasks};
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
    pub(super) served: Served,
    /// What serving over streamable HTTP takes (hosts, auth, CORS, SSE, sessions, routes).
    #[cfg(feature = "mcp-http")]
    pub(in crate::mcp) http: HttpOptions,
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
            #[cfg(feature = "mcp-http")]
            http: HttpOptions::default(),
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

    /// The largest request the server reads, in bytes: 8 MiB unless set. Over stdio a longer
    /// line, over HTTP a longer body, is answered with a JSON-RPC error naming the limit
    /// (HTTP status `413`), and the server goes on serving.
    #[must_use]
    pub fn with_max_request_size(mut self, bytes: usize) -> Self {
        self.max_request = bytes.max(1024);
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
    #[cfg(feature = "mcp-http")]
    pub(in crate::mcp) fn count_calls_apart(&mut self) -> Arc<InFlight> {
        self.served.in_flight = Arc::default();
        Arc::clone(&self.served.in_flight)
    }

    /// The tasks its sessions started.
    #[cfg(feature = "mcp-http")]
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
