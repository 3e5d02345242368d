//! Serving a tool server to MCP clients.

mod listing;
mod resources;

use std::collections::HashSet;
use std::fmt;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, GetPromptRequestParams, GetPromptResponse,
    GetPromptResult, Implementation, InputRequiredResult, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    PromptsCapability, ReadResourceRequestParams, ReadResourceResponse, ResourcesCapability,
    ServerCapabilities, ServerConfig, SubscribeRequestParams, SubscriptionFilter,
    UnsubscribeRequestParams,
};
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{broadcast, watch};
use tokio_util::sync::{CancellationToken, DropGuard};

use self::listing::{DEFAULT_PAGE_SIZE, Listing};
use self::resources::{RESOURCE_EVENTS, ResourceEvent, pass_on_resource_events};
use super::ask::{Round, RoundCall, Waiting, ask_the_peer};
use super::convert::{OutputShape, message_to_mcp, prompt_to_mcp, result_to_mcp};
use super::notify::{LogFloor, Notifier, log_level_from_mcp};
use super::prompts::{McpPrompt, PromptSource};
use super::resources::ResourceSource;
use super::{McpAuth, McpError};
use crate::schema::{Dialect, Refs};
use crate::server::CallArgs;
use crate::sync::lock;
use crate::{AlephToolServer, Identity, LogLevel, ToolContext, ToolErrorKind, ToolResult};

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
    resources: Arc<[Arc<dyn ResourceSource>]>,
    resource_events: broadcast::Sender<ResourceEvent>,
    waiting: Arc<Waiting>,
    pub(super) allowed_hosts: Option<Arc<[String]>>,
    pub(super) router: Option<axum::Router>,
    pub(super) auth: Option<McpAuth>,
    pub(super) cors_origins: Option<Arc<[String]>>,
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
            resources: Arc::new([]),
            resource_events: broadcast::channel(RESOURCE_EVENTS).0,
            waiting: Arc::default(),
            allowed_hosts: None,
            router: None,
            auth: None,
            cors_origins: None,
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
        let mut sources = self.resources.to_vec();
        sources.push(Arc::new(source));
        self.resources = sources.into();
        let mut capability = ResourcesCapability::default();
        capability.subscribe = Some(true);
        capability.list_changed = Some(true);
        Arc::make_mut(&mut self.info).capabilities.resources = Some(capability);
        self
    }

    /// Tells every client subscribed to `uri` that what it reads has changed
    /// (`notifications/resources/updated`), so it reads it again. Any clone of this server,
    /// serving or not, reaches every session of them all.
    pub fn resource_updated(&self, uri: impl Into<String>) {
        let _ = self
            .resource_events
            .send(ResourceEvent::Updated(uri.into()));
    }

    /// Tells every client that the list of resources or templates has changed
    /// (`notifications/resources/list_changed`), so it lists them again.
    pub fn resources_changed(&self) {
        let _ = self.resource_events.send(ResourceEvent::ListChanged);
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

    /// Requires a bearer token of every HTTP request, as [`McpAuth`] describes, and serves
    /// the protected-resource metadata document. Each call's [`ToolContext`] carries the
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
    #[must_use]
    pub fn with_cors_origins(
        mut self,
        origins: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        self.cors_origins = Some(origins.into_iter().map(Into::into).collect());
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
            resources: Arc::clone(&self.resources),
            resource_events: self.resource_events.clone(),
            subscribed: Arc::default(),
            waiting: Arc::clone(&self.waiting),
            listen_from: AtomicU64::new(0),
            notifier: OnceLock::new(),
            log_level: Arc::new(AtomicU8::new(DEFAULT_LOG_LEVEL as u8)),
            _closed_on_drop: closed.clone().drop_guard(),
            closed,
        }
    }
}

/// The least severe log message a client hears before it sends `logging/setLevel`.
const DEFAULT_LOG_LEVEL: LogLevel = LogLevel::Info;

#[allow(deprecated)] // logging, by MCP 2026-07-28; clients of the earlier revisions use it
fn server_config(implementation: Implementation) -> ServerConfig {
    let capabilities = ServerCapabilities::builder()
        .enable_tools()
        .enable_tool_list_changed()
        .enable_logging()
        .build();
    ServerConfig::new(capabilities).with_server_info(implementation)
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
    /// Where the resources come from, in the order given.
    resources: Arc<[Arc<dyn ResourceSource>]>,
    /// Changes to the resources, from [`McpServer::resource_updated`] and
    /// [`McpServer::resources_changed`].
    resource_events: broadcast::Sender<ResourceEvent>,
    /// The URIs the client subscribed to with `resources/subscribe`.
    subscribed: Arc<Mutex<HashSet<String>>>,
    /// Calls of 2026-07-28 clients that wait for answers, shared by every session.
    waiting: Arc<Waiting>,
    /// The tool-change count when the last subscription was accepted.
    listen_from: AtomicU64,
    /// Sends progress and log notifications; started at the first call.
    notifier: OnceLock<Notifier>,
    /// The least severe [`LogLevel`] the client hears, as `u8`.
    log_level: Arc<AtomicU8>,
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

    /// Carries a call of a 2026-07-28 client on until it finishes or asks the client
    /// something, which its `input_required` result then carries.
    async fn play(
        &self,
        mut call: RoundCall,
        request: &CancellationToken,
    ) -> Result<CallToolResponse, ErrorData> {
        match call.round(request).await {
            Round::Done(result) => self.finish(&call.tool, &result, OutputShape::Plain),
            Round::Asks(asks) => match self.waiting.park(call) {
                Some(state) => Ok(InputRequiredResult::new(Some(asks), Some(state)).into()),
                None => Err(ErrorData::internal_error(
                    "too many calls wait for their clients' answers; try again later",
                    None,
                )),
            },
        }
    }

    /// The answer to a call of `tool` that ended with `result`, its output in `shape`.
    fn finish(
        &self,
        tool: &str,
        result: &ToolResult,
        shape: OutputShape,
    ) -> Result<CallToolResponse, ErrorData> {
        if result.error_kind == Some(ToolErrorKind::NotFound) && !self.unknown_tools_as_results {
            return Err(ErrorData::invalid_params(
                result.model_text().into_owned(),
                Some(serde_json::json!({ "name": tool })),
            ));
        }
        let definition = self.tools.definition(result.tool_that_ran(tool));
        Ok(result_to_mcp(result, definition.as_deref(), shape).into())
    }
}

impl ServerHandler for Session {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::clone(&self.info)
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        self.tools_page(
            request.and_then(|request| request.cursor),
            OutputShape::of(&context.meta),
        )
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if let Some(state) = &request.request_state {
            // A 2026-07-28 client comes back with answers to a call's questions.
            let identity = identity_of(&context);
            let mut call = self
                .waiting
                .take(state, &request.name, identity.as_deref())
                .map_err(|why| ErrorData::invalid_params(why, None))?;
            call.answer(request.input_responses.unwrap_or_default());
            return self.play(call, &context.ct).await;
        }
        let args = Value::Object(request.arguments.unwrap_or_default());
        let notifier = self
            .notifier
            .get_or_init(|| Notifier::start(context.peer.clone()));
        // Requests without a handshake (2026-07-28) carry their protocol version.
        let stateless = context.meta.protocol_version().is_some();
        let log_floor = LogFloor::of(&context, stateless, &self.log_level);
        let (events, on_event) = notifier.for_call(context.meta.get_progress_token(), log_floor);
        let mut ctx = ToolContext::new()
            .with_cancellation(context.ct.clone())
            .with_progress(on_event);
        if let Some(identity) = identity_of(&context) {
            ctx = ctx.with_shared_identity(identity);
        }
        if stateless {
            // No handshake: the client takes no requests, so questions go out in rounds.
            let tools = self.tools.clone();
            let name = request.name.to_string();
            let capabilities = context.meta.client_capabilities();
            let call = RoundCall::new(name.clone(), ctx, capabilities.as_ref(), move |ctx| {
                Box::pin(async move { tools.run(&name, CallArgs::Value(args), Some(ctx)).await })
            });
            let outcome = self.play(call, &context.ct).await;
            events.flush().await;
            return outcome;
        }
        let ctx = ask_the_peer(ctx, &context.peer);
        let result = self
            .tools
            .run(&request.name, CallArgs::Value(args), Some(ctx))
            .await;
        events.flush().await;
        self.finish(&request.name, &result, OutputShape::Wrapped)
    }

    #[allow(deprecated)] // by MCP 2026-07-28; clients of the earlier revisions use it
    async fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let level = log_level_from_mcp(request.level);
        self.log_level.store(level as u8, Ordering::Relaxed);
        Ok(())
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

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Ok(self.listed_resources())
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        Ok(self.listed_templates())
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        Ok(self.read(&request.uri).await?.into())
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.subscribe_to(request.uri)
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        lock(&self.subscribed).remove(&request.uri);
        Ok(())
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        // Clients that connected with a handshake hear of changes as plain notifications.
        let peer = context.peer;
        self.forward_resource_events(&peer);
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
        if !self.resources.is_empty() {
            accepted.resources_list_changed = requested.resources_list_changed;
            accepted
                .resource_subscriptions
                .clone_from(&requested.resource_subscriptions);
        }
        Some(accepted)
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        // Clients without a handshake (2026-07-28) subscribe instead.
        let ended = self.closed.child_token();
        let accepted = context.accepted();
        let resources = async {
            let uris = accepted
                .resource_subscriptions
                .as_deref()
                .unwrap_or_default();
            let list = accepted.resources_list_changed == Some(true);
            if uris.is_empty() && !list {
                return;
            }
            let wanted = |event: &ResourceEvent| match event {
                ResourceEvent::Updated(uri) => uris.contains(uri),
                ResourceEvent::ListChanged => list,
            };
            let sink = context.sink();
            let send = |event| async move {
                match event {
                    ResourceEvent::Updated(uri) => sink.notify_resource_updated(uri).await,
                    ResourceEvent::ListChanged => sink.notify_resource_list_changed().await,
                }
                .is_ok()
            };
            pass_on_resource_events(self.resource_events.subscribe(), &ended, wanted, send).await;
        };
        let tools = async {
            let mut changes = self.tools.watch_tools();
            let acknowledged_at = self.listen_from.load(Ordering::Acquire);
            if *changes.borrow_and_update() != acknowledged_at
                && context.sink().notify_tool_list_changed().await.is_err()
            {
                return;
            }
            while next_change(&mut changes, &ended).await {
                if context.sink().notify_tool_list_changed().await.is_err() {
                    return;
                }
            }
        };
        tokio::select! {
            () = context.cancelled() => {}
            ((), ()) = async { tokio::join!(tools, resources) } => {}
        }
        Ok(())
    }
}

/// The identity [`McpAuth`] put on an HTTP request, if the server has an authorizer.
fn identity_of(context: &RequestContext<RoleServer>) -> Option<Arc<Identity>> {
    context
        .extensions
        .get::<axum::http::request::Parts>()?
        .extensions
        .get::<Arc<Identity>>()
        .cloned()
}

/// Waits for the next change to the tool set; false when the connection ended first.
async fn next_change(changes: &mut watch::Receiver<u64>, closed: &CancellationToken) -> bool {
    tokio::select! {
        () = closed.cancelled() => false,
        outcome = changes.changed() => outcome.is_ok(),
    }
}
