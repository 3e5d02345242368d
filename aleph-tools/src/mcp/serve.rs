//! Serving a tool server to MCP clients.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, GetPromptRequestParams, GetPromptResponse,
    GetPromptResult, Implementation, ListPromptsResult, ListToolsResult, NumberOrString,
    PaginatedRequestParams, ProgressNotificationParam, ProgressToken, PromptsCapability,
    ServerCapabilities, ServerConfig, SubscriptionFilter, Tool,
};
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
use rmcp::{ErrorData, Peer, RoleServer, ServerHandler, ServiceExt};
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{mpsc, oneshot, watch};
use tokio_util::sync::{CancellationToken, DropGuard};

use super::McpError;
use super::convert::{message_to_mcp, prompt_to_mcp, result_to_mcp, tool_to_mcp};
use super::prompts::{McpPrompt, PromptSource};
use crate::schema::{Dialect, Refs};
use crate::server::CallArgs;
use crate::sync::lock;
use crate::{AlephToolServer, ProgressEvent, ToolContext, ToolErrorKind};

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
    tools: AlephToolServer,
    info: Arc<ServerConfig>,
    dialect: Dialect,
    listing: Arc<Mutex<Listing>>,
    unknown_tools_as_results: bool,
    page_size: usize,
    prompts: Arc<[Arc<dyn PromptSource>]>,
    pub(super) allowed_hosts: Option<Arc<[String]>>,
    pub(super) router: Option<axum::Router>,
}

impl fmt::Debug for McpServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpServer")
            .field("name", &self.info.server_info.name)
            .field("tools", &self.tools.len())
            .finish_non_exhaustive()
    }
}

impl McpServer {
    /// Serves `tools` (an [`AlephToolServer`](crate::AlephToolServer)),
    /// introducing itself as `aleph-tools` with this crate's version.
    pub fn new(tools: &AlephToolServer) -> Self {
        Self {
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
            allowed_hosts: None,
            router: None,
        }
    }

    /// The name and version the server gives clients in its `initialize` answer.
    #[must_use]
    pub fn with_name(mut self, name: impl Into<String>, version: impl Into<String>) -> Self {
        Arc::make_mut(&mut self.info).server_info = Implementation::new(name, version);
        self
    }

    /// Instructions for the client's model: when to use these tools, how they fit together.
    #[must_use]
    pub fn with_instructions(mut self, instructions: impl Into<String>) -> Self {
        Arc::make_mut(&mut self.info).instructions = Some(instructions.into());
        self
    }

    /// What `tools/list` does with `$ref`s in input schemas. The default,
    /// [`Refs::Inline`], writes each referenced type out where it is used, since some MCP
    /// clients do not follow `$ref`; [`Refs::Keep`] lists schemas with their `$defs` as
    /// written, for clients that implement JSON Schema 2020-12 in full.
    #[must_use]
    pub fn with_schema_refs(mut self, refs: Refs) -> Self {
        self.dialect = Dialect::Mcp { refs };
        self.listing = Arc::default();
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
        self.unknown_tools_as_results = as_results;
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
        let mut sources = self.prompts.to_vec();
        sources.push(Arc::new(source));
        self.prompts = sources.into();
        Arc::make_mut(&mut self.info).capabilities.prompts = Some(PromptsCapability::default());
        self
    }

    /// How many tools one `tools/list` answer holds at most (500 unless set; at least 1).
    /// A longer list comes in pages, in name order: each answer but the last carries a
    /// `nextCursor` the client sends back for the next page. A cursor names the last tool
    /// of its page, so tools added or removed between pages neither repeat nor shift the
    /// rest.
    #[must_use]
    pub fn with_page_size(mut self, tools: usize) -> Self {
        self.page_size = tools.max(1);
        self
    }

    /// The `Host` headers [`serve_http`](Self::serve_http) accepts (names, or `host:port`).
    /// The default accepts only loopback names, which keeps web pages from reaching a local
    /// server through DNS rebinding; a server reachable from elsewhere lists its names here.
    #[must_use]
    pub fn with_allowed_hosts(
        mut self,
        hosts: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        self.allowed_hosts = Some(hosts.into_iter().map(Into::into).collect());
        self
    }

    /// Routes [`serve_http`](Self::serve_http) serves beside `/mcp`, such as a plugin
    /// manager's [`router`](crate::plugin::PluginManager::router) (feature `routes`). They
    /// get the same `Host` check as `/mcp`. Routes given more than once are merged.
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
    /// # Errors
    ///
    /// As [`serve_stdio`](Self::serve_stdio).
    pub async fn serve<R, W>(self, reader: R, writer: W) -> Result<(), McpError>
    where
        R: AsyncRead + Send + Unpin + 'static,
        W: AsyncWrite + Send + Unpin + 'static,
    {
        let running = self
            .session()
            .serve((reader, writer))
            .await
            .map_err(|err| McpError::Session(err.to_string()))?;
        running
            .waiting()
            .await
            .map_err(|err| McpError::Session(err.to_string()))?;
        Ok(())
    }

    /// The handler of one connection.
    pub(super) fn session(&self) -> Session {
        let closed = CancellationToken::new();
        Session {
            tools: self.tools.clone(),
            info: Arc::clone(&self.info),
            dialect: self.dialect,
            listing: Arc::clone(&self.listing),
            unknown_tools_as_results: self.unknown_tools_as_results,
            page_size: self.page_size,
            prompts: Arc::clone(&self.prompts),
            listen_from: AtomicU64::new(0),
            _closed_on_drop: closed.clone().drop_guard(),
            closed,
        }
    }
}

/// The most tools one `tools/list` answer holds unless
/// [`with_page_size`](McpServer::with_page_size) says otherwise.
const DEFAULT_PAGE_SIZE: usize = 500;

/// `tools/list` cursors: the last name of a page, base64 so that clients treat it as opaque.
mod cursor {
    use base64::Engine as _;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;

    pub(super) fn write(last_name: &str) -> String {
        URL_SAFE_NO_PAD.encode(last_name)
    }

    pub(super) fn read(cursor: &str) -> Option<String> {
        String::from_utf8(URL_SAFE_NO_PAD.decode(cursor).ok()?).ok()
    }
}

fn server_config(implementation: Implementation) -> ServerConfig {
    let capabilities = ServerCapabilities::builder()
        .enable_tools()
        .enable_tool_list_changed()
        .build();
    ServerConfig::new(capabilities).with_server_info(implementation)
}

/// The `tools/list` answer built for one version of the tools.
#[derive(Default)]
pub(super) struct Listing {
    version: u64,
    tools: Option<Arc<[Tool]>>,
}

impl Listing {
    fn get(&self, version: u64) -> Option<Arc<[Tool]>> {
        self.tools
            .as_ref()
            .filter(|_| self.version == version)
            .cloned()
    }

    fn put(&mut self, version: u64, tools: Arc<[Tool]>) {
        if self.tools.is_none() || version >= self.version {
            self.version = version;
            self.tools = Some(tools);
        }
    }
}

/// One client's connection: answers its requests from the shared tool server.
pub(super) struct Session {
    tools: AlephToolServer,
    info: Arc<ServerConfig>,
    dialect: Dialect,
    /// The `tools/list` answer, shared by every session of the server.
    listing: Arc<Mutex<Listing>>,
    /// Whether calls to tools not served are answered as `isError` results.
    unknown_tools_as_results: bool,
    /// The most tools one `tools/list` answer holds.
    page_size: usize,
    /// Where the prompts come from, in the order given.
    prompts: Arc<[Arc<dyn PromptSource>]>,
    /// The tool-change count when the last subscription was accepted.
    listen_from: AtomicU64,
    /// Cancelled when the connection ends, which stops its `list_changed` task.
    closed: CancellationToken,
    _closed_on_drop: DropGuard,
}

impl Session {
    /// Every prompt, sorted by name; of two with the same name, the first source's.
    fn all_prompts(&self) -> Vec<McpPrompt> {
        let mut all: Vec<McpPrompt> = Vec::new();
        for source in self.prompts.iter() {
            for prompt in source.prompts() {
                if !all.iter().any(|seen| seen.name == prompt.name) {
                    all.push(prompt);
                }
            }
        }
        all.sort_by(|a, b| a.name.cmp(&b.name));
        all
    }

    /// Builds the `tools/list` answer and keeps it for `version`.
    fn build_listing(&self, version: u64) -> Arc<[Tool]> {
        let tools: Arc<[Tool]> = self
            .tools
            .list_tools()
            .iter()
            .filter_map(|definition| match tool_to_mcp(definition, self.dialect) {
                Ok(tool) => Some(tool),
                Err(err) => {
                    tracing::warn!(tool = %definition.name, "not listed over MCP: {err}");
                    None
                }
            })
            .collect();
        lock(&self.listing).put(version, Arc::clone(&tools));
        tools
    }
}

impl ServerHandler for Session {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::clone(&self.info)
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let version = self.tools.tools_version();
        let cached = lock(&self.listing).get(version);
        let tools = cached.unwrap_or_else(|| self.build_listing(version));
        let start = match request.and_then(|request| request.cursor) {
            None => 0,
            Some(cursor) => {
                let after = cursor::read(&cursor).ok_or_else(|| {
                    ErrorData::invalid_params(
                        format!(
                            "`{cursor}` is not a cursor this server gave; list the tools again \
                             without a cursor to start from the first page"
                        ),
                        None,
                    )
                })?;
                // The list is in name order: the page goes on after the last name seen.
                tools.partition_point(|tool| *tool.name <= *after)
            }
        };
        let end = tools.len().min(start.saturating_add(self.page_size));
        let mut page = ListToolsResult::with_all_items(tools[start..end].to_vec());
        if end < tools.len() {
            page.next_cursor = Some(cursor::write(&tools[end - 1].name));
        }
        // Tools come and go at any time: a client may not cache the list.
        Ok(page.with_ttl_ms(0))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = Value::Object(request.arguments.unwrap_or_default());
        let mut ctx = ToolContext::new().with_cancellation(context.ct.clone());
        let progress = context
            .meta
            .get_progress_token()
            .map(|token| ProgressForwarder::start(context.peer.clone(), token));
        if let Some(forwarder) = &progress {
            ctx = ctx.with_progress(forwarder.callback());
        }
        let result = self
            .tools
            .run(&request.name, CallArgs::Value(args), Some(ctx))
            .await;
        if let Some(forwarder) = progress {
            forwarder.flush().await;
        }
        if result.error_kind == Some(ToolErrorKind::NotFound) && !self.unknown_tools_as_results {
            return Err(ErrorData::invalid_params(
                result.model_text().into_owned(),
                Some(serde_json::json!({ "name": request.name })),
            ));
        }
        let definition = self.tools.definition(result.tool_that_ran(&request.name));
        Ok(result_to_mcp(&result, definition.as_deref()).into())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        let prompts = self.all_prompts().iter().map(prompt_to_mcp).collect();
        Ok(ListPromptsResult::with_all_items(prompts).with_ttl_ms(0))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let prompts = self.all_prompts();
        let Some(prompt) = prompts.iter().find(|prompt| prompt.name == request.name) else {
            let names = prompts.iter().map(|prompt| prompt.name.as_str());
            let close = crate::names::suggestions(&request.name, names);
            return Err(ErrorData::invalid_params(
                format!(
                    "unknown prompt `{}`{}",
                    request.name,
                    crate::error::DidYouMean(&close)
                ),
                None,
            ));
        };
        let messages = prompt
            .render(&request.arguments.unwrap_or_default())
            .map_err(|message| ErrorData::invalid_params(message, None))?;
        let messages = messages.iter().map(message_to_mcp).collect();
        Ok(GetPromptResult::new(messages)
            .with_description(prompt.description.clone())
            .into())
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        // Clients that connected with a handshake hear of changes as plain notifications.
        let peer = context.peer;
        let mut changes = self.tools.watch_tools();
        changes.mark_unchanged();
        let closed = self.closed.clone();
        tokio::spawn(async move {
            while next_change(&mut changes, &closed).await {
                if peer.notify_tool_list_changed().await.is_err() {
                    break;
                }
            }
        });
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        // Called before the subscription is acknowledged: changes from here on are the
        // client's to hear, even those made before `listen` starts watching.
        self.listen_from
            .store(*self.tools.watch_tools().borrow(), Ordering::Release);
        let mut accepted = SubscriptionFilter::new();
        accepted.tools_list_changed = requested.tools_list_changed;
        Some(accepted)
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        // Clients without a handshake (2026-07-28) subscribe instead.
        let mut changes = self.tools.watch_tools();
        let acknowledged_at = self.listen_from.load(Ordering::Acquire);
        if *changes.borrow_and_update() != acknowledged_at
            && context.sink().notify_tool_list_changed().await.is_err()
        {
            return Ok(());
        }
        let ended = self.closed.child_token();
        loop {
            tokio::select! {
                () = context.cancelled() => return Ok(()),
                more = next_change(&mut changes, &ended) => {
                    if !more || context.sink().notify_tool_list_changed().await.is_err() {
                        return Ok(());
                    }
                }
            }
        }
    }
}

/// Waits for the next change to the tool set; false when the connection ended first.
async fn next_change(changes: &mut watch::Receiver<u64>, closed: &CancellationToken) -> bool {
    tokio::select! {
        () = closed.cancelled() => false,
        outcome = changes.changed() => outcome.is_ok(),
    }
}

/// Sends one call's progress to the client as `notifications/progress`, in order.
struct ProgressForwarder {
    events: mpsc::UnboundedSender<Forward>,
}

enum Forward {
    Progress(ProgressNotificationParam),
    Flush(oneshot::Sender<()>),
}

impl ProgressForwarder {
    fn start(peer: Peer<RoleServer>, token: ProgressToken) -> Self {
        let (events, mut queue) = mpsc::unbounded_channel::<Forward>();
        tokio::spawn(async move {
            while let Some(event) = queue.recv().await {
                match event {
                    Forward::Progress(mut param) => {
                        param.progress_token = token.clone();
                        if peer.notify_progress(param).await.is_err() {
                            break;
                        }
                    }
                    Forward::Flush(done) => {
                        let _ = done.send(());
                        break;
                    }
                }
            }
        });
        Self { events }
    }

    /// The context's progress function: reported progress becomes a notification;
    /// streamed chunks have no MCP counterpart and stay local.
    fn callback(&self) -> impl Fn(&str, ProgressEvent) + Send + Sync + 'static {
        let events = self.events.clone();
        move |_tool, event| {
            if let ProgressEvent::Progress {
                progress,
                total,
                message,
            } = event
            {
                // The token is filled in by the forwarding task.
                let mut param = ProgressNotificationParam::new(
                    ProgressToken(NumberOrString::Number(0)),
                    progress,
                );
                param.total = total;
                param.message = message;
                let _ = events.send(Forward::Progress(param));
            }
        }
    }

    /// Waits until every notification reported so far is sent, so that they reach the
    /// client before the result.
    async fn flush(self) {
        let (done, sent) = oneshot::channel();
        if self.events.send(Forward::Flush(done)).is_ok() {
            let _ = sent.await;
        }
    }
}
