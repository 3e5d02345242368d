//! Serving a tool server to MCP clients: [`McpServer`] (in `server.rs`) and `Session`,
//! the handler of one connection, which answers its requests.

#[cfg(feature = "mcp-http")]
mod changes;
pub(in crate::mcp) mod decode;
mod listen;
mod listing;
mod malformed;
mod resources;
mod server;
mod stdio;
pub(in crate::mcp) mod unreadable;

use std::collections::{HashSet, VecDeque};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, CustomRequest, CustomResult,
    GetPromptRequestParams, GetPromptResponse, GetPromptResult, GetTaskParams, GetTaskResult,
    InitializeRequestParams, InitializeResult, InputRequiredResult, JsonObject, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    ReadResourceRequestParams, ReadResourceResponse, ServerConfig, SubscribeRequestParams,
    SubscriptionFilter, UnsubscribeRequestParams, UpdateTaskParams,
};
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::Value;
use tokio::sync::broadcast;
use tokio_util::sync::{CancellationToken, DropGuard};

use self::listen::{ListenStart, next_change};
use self::listing::Listing;
use self::resources::ResourceEvent;
pub use self::server::McpServer;
use super::ask::{Round, RoundCall, Waiting, ask_the_peer};
use super::convert::{OutputShape, message_to_mcp, prompt_to_mcp, result_to_mcp};
use super::notify::{LogFloor, Notifier, log_level_from_mcp};
use super::prompts::{McpPrompt, PromptSource};
use super::resources::ResourceSource;
use super::running::InFlight;
use super::tasks::TaskTable;
use crate::schema::Dialect;
use crate::server::CallArgs;
use crate::util::sync::lock;
use crate::{AlephToolServer, Identity, ToolContext, ToolDefinition, ToolErrorKind, ToolResult};

/// What every session of a server shares: the tools and how they are served.
#[derive(Clone)]
pub(super) struct Served {
    tools: AlephToolServer,
    info: Arc<ServerConfig>,
    dialect: Dialect,
    /// The `tools/list` answer, cached per tool-table version and output shape.
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
    /// Calls of 2026-07-28 clients that wait for answers: each of their requests may come
    /// on a connection of its own.
    waiting: Arc<Waiting>,
    /// Calls running as tasks, for the same reason.
    tasks: Arc<TaskTable>,
    /// The tool calls running now, which a draining HTTP server waits for.
    in_flight: Arc<InFlight>,
}

/// What a client set in its session: kept apart from the session's handler, so an HTTP
/// session put to sleep while idle gets it back when it wakes.
pub(in crate::mcp) struct Remembered {
    /// The URIs the client subscribed to with `resources/subscribe`.
    subscribed: Arc<Mutex<HashSet<String>>>,
    /// The least severe [`LogLevel`](crate::LogLevel) the client hears, as `u8`.
    log_level: Arc<AtomicU8>,
    /// Whether the client hears of the server's changes from elsewhere than the session's
    /// service: an HTTP session's `GET` streams hear of them from the session ledger, asleep
    /// or awake.
    told_apart: bool,
}

impl Remembered {
    /// Nothing set yet.
    pub(in crate::mcp) fn new() -> Self {
        Self {
            subscribed: Arc::default(),
            log_level: Arc::new(AtomicU8::new(server::DEFAULT_LOG_LEVEL as u8)),
            told_apart: false,
        }
    }

    /// Nothing set yet, in a session whose client hears of the server's changes from
    /// elsewhere than the session's service.
    #[cfg_attr(not(feature = "mcp-http"), allow(dead_code))]
    pub(in crate::mcp) fn told_apart() -> Self {
        Self {
            told_apart: true,
            ..Self::new()
        }
    }

    /// Whether the client subscribed to `uri`.
    #[cfg_attr(not(feature = "mcp-http"), allow(dead_code))]
    pub(in crate::mcp) fn subscribed_to(&self, uri: &str) -> bool {
        lock(&self.subscribed).contains(uri)
    }
}

/// One client's connection: answers its requests from what the server serves.
pub(super) struct Session {
    served: Served,
    /// What the client set; an HTTP session's comes from the session ledger at `initialize`.
    remembered: OnceLock<Arc<Remembered>>,
    /// Where each accepted `subscriptions/listen` starts, oldest first: taken when rmcp
    /// accepts the subscription, before it sends the acknowledgment, so a change made
    /// right after the client hears the acknowledgment is never missed.
    listen_starts: Mutex<VecDeque<ListenStart>>,
    /// Sends progress and log notifications; started at the first call.
    notifier: OnceLock<Notifier>,
    /// Cancelled when the connection ends, which stops its `list_changed` task.
    closed: CancellationToken,
    _closed_on_drop: DropGuard,
}

impl Session {
    /// What the client set in this session.
    fn remembered(&self) -> &Remembered {
        self.remembered.get_or_init(|| Arc::new(Remembered::new()))
    }

    /// Every prompt, sorted by name; of two with the same name, the first source's.
    fn all_prompts(&self) -> Vec<McpPrompt> {
        let mut all: Vec<McpPrompt> = Vec::new();
        for source in self.served.prompts.iter() {
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
            Round::Done(result) => {
                let called = self.served.tools.offered(&call.tool);
                self.finish(&call.tool, result, called, OutputShape::Plain)
            }
            Round::Asks(asks) => match self.served.waiting.park(call) {
                Some(state) => Ok(InputRequiredResult::new(Some(asks), Some(state)).into()),
                None => Err(ErrorData::internal_error(
                    "too many calls wait for their clients' answers; try again later",
                    None,
                )),
            },
        }
    }

    /// The answer to a call of `tool` (offered as `called`) that ended with `result`, its
    /// output in `shape`.
    fn finish(
        &self,
        tool: &str,
        result: ToolResult,
        called: Option<Arc<ToolDefinition>>,
        shape: OutputShape,
    ) -> Result<CallToolResponse, ErrorData> {
        answer(
            &self.served.tools,
            self.served.unknown_tools_as_results,
            (tool, called),
            result,
            shape,
        )
        .map(Into::into)
    }

    /// Whether a call of the tool offered as `called` runs as a task: the tool is marked so,
    /// and the client takes task handles.
    fn runs_as_task(called: Option<&ToolDefinition>, context: &RequestContext<RoleServer>) -> bool {
        // The tool first: most are not tasks, and reading the capabilities copies them.
        called.is_some_and(|definition| definition.task)
            && context
                .client_capabilities()
                .is_some_and(|capabilities| capabilities.supports_tasks())
    }

    /// Starts a call as a task and answers with its handle. The task outlives the request:
    /// it ends with its tool, with `tasks/cancel`, or when it expires.
    async fn start_task(
        &self,
        request: CallToolRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let identity = identity_of(context);
        let (entry, answered) = self
            .served
            .tasks
            .open(identity.as_deref(), &self.served.in_flight)
            .await?;
        let heard = Arc::clone(&entry);
        let mut ctx = ToolContext::new().with_progress(move |_, event| heard.hear(&event));
        if let Some(identity) = identity {
            ctx = ctx.with_shared_identity(identity);
        }
        let name = request.name.to_string();
        let args = Value::Object(request.arguments.unwrap_or_default());
        let tools = self.served.tools.clone();
        let run = {
            let name = name.clone();
            move |ctx| -> crate::tool::BoxFuture<'static, ToolResult> {
                Box::pin(async move { tools.run(&name, CallArgs::Value(args), Some(ctx)).await })
            }
        };
        let capabilities = context.client_capabilities();
        let call = RoundCall::new(name.clone(), ctx, capabilities.as_ref(), run);
        let (tools, unknown) = (
            self.served.tools.clone(),
            self.served.unknown_tools_as_results,
        );
        let shape = OutputShape::of(&context.meta);
        let finish = move |result: &ToolResult| -> Result<JsonObject, ErrorData> {
            let called = tools.offered(&name);
            let call_result = answer(&tools, unknown, (&name, called), result.clone(), shape)?;
            match serde_json::to_value(call_result) {
                Ok(Value::Object(object)) => Ok(object),
                Ok(_) | Err(_) => Err(ErrorData::internal_error(
                    "the tool's result could not be written as JSON",
                    None,
                )),
            }
        };
        let running = self.served.in_flight.enter();
        Ok(self
            .served
            .tasks
            .run(entry, call, answered, finish, running)
            .into())
    }
}

/// The `CallToolResult` for a call of `tool` (offered as `called`) that ended with `result`,
/// its output in `shape`; a call of a tool not served is an error unless
/// `unknown_as_results`.
fn answer(
    tools: &AlephToolServer,
    unknown_as_results: bool,
    (tool, called): (&str, Option<Arc<ToolDefinition>>),
    result: ToolResult,
    shape: OutputShape,
) -> Result<rmcp::model::CallToolResult, ErrorData> {
    if result.error_kind == Some(ToolErrorKind::NotFound) && !unknown_as_results {
        return Err(ErrorData::invalid_params(
            result.model_text().into_owned(),
            Some(serde_json::json!({ "name": tool })),
        ));
    }
    // A repaired name ran another tool than the one called.
    let definition = match &result.repair {
        Some(repair) => tools.offered(&repair.repaired_name),
        None => called,
    };
    Ok(result_to_mcp(result, definition.as_deref(), shape))
}

impl ServerHandler for Session {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::clone(&self.served.info)
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        // An HTTP session (first opened, or woken from sleep) brings what its client set.
        if let Some(remembered) = context.extensions.get::<Arc<Remembered>>() {
            let _ = self.remembered.set(Arc::clone(remembered));
        }
        context.peer.set_peer_info(request.clone());
        self.negotiate_initialize(&request)
    }

    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        Err(malformed::unread_request(&request))
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let mut caller = ToolContext::new();
        if let Some(identity) = identity_of(&context) {
            caller = caller.with_shared_identity(identity);
        }
        self.tools_page(
            request.and_then(|request| request.cursor),
            OutputShape::of(&context.meta),
            &caller,
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
                .served
                .waiting
                .take(state, &request.name, identity.as_deref())
                .map_err(|why| ErrorData::invalid_params(why, None))?;
            call.answer(request.input_responses.unwrap_or_default());
            return self.play(call, &context.ct).await;
        }
        let called = self.served.tools.offered(&request.name);
        if Self::runs_as_task(called.as_deref(), &context) {
            return self.start_task(request, &context).await;
        }
        // A call carried on with answers was counted when it started; a task counts itself.
        let running = self.served.in_flight.enter();
        let args = Value::Object(request.arguments.unwrap_or_default());
        let notifier = self
            .notifier
            .get_or_init(|| Notifier::start(context.peer.clone()));
        // Requests without a handshake (2026-07-28) carry their protocol version.
        let stateless = context.meta.protocol_version().is_some();
        let log_floor = LogFloor::of(&context, stateless, &self.remembered().log_level);
        let (events, on_event) = notifier.for_call(context.meta.get_progress_token(), log_floor);
        let mut ctx = ToolContext::new()
            .with_cancellation(context.ct.clone())
            .with_progress(on_event);
        if let Some(identity) = identity_of(&context) {
            ctx = ctx.with_shared_identity(identity);
        }
        if stateless {
            // No handshake: the client takes no requests, so questions go out in rounds.
            let tools = self.served.tools.clone();
            let name = request.name.to_string();
            let capabilities = context.meta.client_capabilities();
            let call = RoundCall::new(name.clone(), ctx, capabilities.as_ref(), move |ctx| {
                Box::pin(async move { tools.run(&name, CallArgs::Value(args), Some(ctx)).await })
            })
            .counted(running);
            let outcome = self.play(call, &context.ct).await;
            events.flush().await;
            return outcome;
        }
        let ctx = ask_the_peer(ctx, &context.peer);
        let result = self
            .served
            .tools
            .run(&request.name, CallArgs::Value(args), Some(ctx))
            .await;
        drop(running);
        events.flush().await;
        self.finish(&request.name, result, called, OutputShape::Wrapped)
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        self.served
            .tasks
            .get(&request.task_id, identity_of(&context).as_deref())
            .await
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.served
            .tasks
            .update(
                &request.task_id,
                identity_of(&context).as_deref(),
                request.input_responses,
            )
            .await
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.served
            .tasks
            .cancel(&request.task_id, identity_of(&context).as_deref())
            .await
    }

    #[allow(deprecated)] // by MCP 2026-07-28; clients of the earlier revisions use it
    async fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let level = log_level_from_mcp(request.level);
        self.remembered()
            .log_level
            .store(level as u8, Ordering::Relaxed);
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
            let close = crate::util::names::suggestions(&request.name, names);
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
        lock(&self.remembered().subscribed).remove(&request.uri);
        Ok(())
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        if self.remembered().told_apart {
            return;
        }
        // Clients that connected with a handshake hear of changes as plain notifications.
        let peer = context.peer;
        self.forward_resource_events(&peer);
        let mut changes = self.served.tools.watch_tools();
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
        Some(self.accept_subscription(requested))
    }

    fn listen(
        &self,
        context: SubscriptionContext,
    ) -> impl Future<Output = Result<(), ErrorData>> + Send + '_ {
        // Boxed: rmcp runs each request in a task of its own, whose future is as large as the
        // largest handler's (this one's, unboxed: 7 KB) and is copied whole as the task
        // starts and ends, for every `tools/call` too.
        Box::pin(self.listened(context))
    }
}

/// The identity [`McpAuth`](crate::mcp::McpAuth) put on an HTTP request, if the server has
/// an authorizer.
#[cfg(feature = "mcp-http")]
fn identity_of(context: &RequestContext<RoleServer>) -> Option<Arc<Identity>> {
    context
        .extensions
        .get::<axum::http::request::Parts>()?
        .extensions
        .get::<Arc<Identity>>()
        .cloned()
}

/// No identity: without streamable HTTP, a request comes from whoever started the process.
#[cfg(not(feature = "mcp-http"))]
fn identity_of(_context: &RequestContext<RoleServer>) -> Option<Arc<Identity>> {
    None
}
