//! `ToolContext`: what a running tool may know about its call (working directory, caller,
//! the identity behind it, typed state, progress, cancellation), whom it may ask (the user,
//! through elicitation; a model, through sampling), and the parameters `#[tool]` injects
//! from it.

mod elicit;
mod identity;
mod log;
#[cfg(feature = "tracing-layer")]
mod log_layer;
mod paths;
mod progress;
mod sample;

use std::any::{Any, TypeId};
use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
pub use tokio_util::sync::CancellationToken;

pub use self::elicit::{AskResult, Elicitation, ElicitationHandler, ElicitationRequest};
pub use self::identity::Identity;
pub use self::log::LogLevel;
pub(crate) use self::log::{carried, in_call, within_call};
#[cfg(feature = "tracing-layer")]
pub use self::log_layer::ToolLogLayer;
pub use self::progress::{Progress, ProgressEvent};
pub use self::sample::{Sampled, SamplingHandler, SamplingMessage, SamplingRequest, SamplingRole};

use crate::error::ToolError;

/// Who is calling a tool: the model in conversation, or code the model wrote.
///
/// A tool states who may call it (`#[tool(callers = [human, code_execution])]`); without
/// that, only [`Caller::Human`] may. A call's context says who is calling; a context that
/// does not say is [`Caller::Human`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Caller {
    /// The model calling the tool in its normal conversation with a person: every call made
    /// from a model's tool-call response is this. The name says whose conversation it is;
    /// it does not mean a person typed the call. The default.
    #[default]
    Human,
    /// Code the model wrote, running in a code-execution sandbox.
    CodeExecution,
}

type StateMap = HashMap<TypeId, Arc<dyn Any + Send + Sync>>;
type ProgressFn = dyn Fn(&str, ProgressEvent) + Send + Sync;

/// What a call's context needs of the server that took the call, without depending on it:
/// the server's handlers, used where the call has none of its own, and the server itself,
/// for [`ToolContext::server`].
pub(crate) trait CallHost: Any + Send + Sync {
    /// The server's handler for questions to the user.
    fn elicitation_handler(&self) -> Option<Arc<dyn ElicitationHandler>>;
    /// The server's handler for requests for a completion.
    fn sampling_handler(&self) -> Option<Arc<dyn SamplingHandler>>;
    /// The host, to find the server's type again.
    fn into_any(self: Arc<Self>) -> Arc<dyn Any + Send + Sync>;
}

/// Everything a running tool may learn about its call.
///
/// The server makes one per call; it is cheap to clone. A `#[tool]` function receives it by
/// taking a `&ToolContext` parameter, or receives parts of it through [`State`], [`Progress`]
/// and [`CancellationToken`] parameters.
#[derive(Clone)]
pub struct ToolContext {
    call_id: u64,
    caller: Caller,
    identity: Option<Arc<Identity>>,
    tool: Option<Arc<str>>,
    working_dir: Option<Arc<Path>>,
    allowed_paths: Option<Arc<[PathBuf]>>,
    state: StateMapHandle,
    progress: Option<Arc<ProgressFn>>,
    cancellation: Option<CancellationToken>,
    capabilities: Option<Arc<BTreeSet<String>>>,
    /// The server that took the call, seen through what the context needs of it;
    /// [`ToolContext::server`] gives the server back.
    pub(crate) server: Option<Arc<dyn CallHost>>,
    elicitation: Option<Arc<dyn ElicitationHandler>>,
    sampling: Option<Arc<dyn SamplingHandler>>,
}

impl fmt::Debug for ToolContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolContext")
            .field("call_id", &self.call_id)
            .field("caller", &self.caller)
            .field("identity", &self.identity)
            .field("tool", &self.tool)
            .field("working_dir", &self.working_dir)
            .field("allowed_paths", &self.allowed_paths)
            .field("state_types", &self.state.len())
            .field("progress", &self.progress.is_some())
            .field("cancellation", &self.cancellation)
            .field("capabilities", &self.capabilities)
            .field("server", &self.server.is_some())
            .field("elicitation", &self.elicitation.is_some())
            .field("sampling", &self.sampling.is_some())
            .finish()
    }
}

impl Default for ToolContext {
    fn default() -> Self {
        Self::EMPTY
    }
}

/// The context of a call made without one, lent to a tool that never reads its context.
pub(crate) static EMPTY_CONTEXT: ToolContext = ToolContext::EMPTY;

impl ToolContext {
    /// Nothing set: what [`new`](Self::new) gives, as a constant.
    const EMPTY: Self = Self {
        call_id: 0,
        caller: Caller::Human,
        identity: None,
        tool: None,
        working_dir: None,
        allowed_paths: None,
        state: StateMapHandle(None),
        progress: None,
        cancellation: None,
        capabilities: None,
        server: None,
        elicitation: None,
        sampling: None,
    };

    /// An empty context: human caller, no working directory, no state.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets who is calling.
    #[must_use]
    pub fn with_caller(mut self, caller: Caller) -> Self {
        self.caller = caller;
        self
    }

    /// The same context with nobody listening to its progress.
    #[cfg(feature = "builtin")]
    pub(crate) fn without_progress(mut self) -> Self {
        self.progress = None;
        self
    }

    /// Sets the working directory that relative paths are resolved against.
    #[must_use]
    pub fn with_working_dir(mut self, dir: impl AsRef<Path>) -> Self {
        self.working_dir = Some(Arc::from(dir.as_ref()));
        self
    }

    /// Restricts [`resolve_path`](Self::resolve_path) to these directories (and what is
    /// below them). Without any, every path resolves.
    #[must_use]
    pub fn with_allowed_paths(
        mut self,
        dirs: impl IntoIterator<Item = impl Into<PathBuf>>,
    ) -> Self {
        self.allowed_paths = Some(dirs.into_iter().map(Into::into).collect());
        self
    }

    /// Adds typed state that tools receive through a [`State<T>`] parameter. A second value
    /// of the same type replaces the first.
    #[must_use]
    pub fn with_state<T: Send + Sync + 'static>(mut self, value: T) -> Self {
        self.state.insert(value);
        self
    }

    /// Sets the function that receives progress events; it gets the tool's name and the event.
    #[must_use]
    pub fn with_progress(
        mut self,
        on_event: impl Fn(&str, ProgressEvent) + Send + Sync + 'static,
    ) -> Self {
        self.progress = Some(Arc::new(on_event));
        self
    }

    /// Sets the token that cancels this call. When it fires, the server ends the call at once
    /// with [`ToolError::Cancelled`], dropping whatever was running for it; the tool sees the
    /// token fire too, for work it handed to other threads or processes.
    #[must_use]
    pub fn with_cancellation(mut self, token: CancellationToken) -> Self {
        self.cancellation = Some(token);
        self
    }

    /// Grants capabilities (`"fs:write"`, `"network"`): names that the
    /// [`Permission`](crate::middleware::Permission) middleware requires of calls to some
    /// tools. Adds to those already granted.
    #[must_use]
    pub fn with_capabilities(
        mut self,
        capabilities: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        let set = Arc::make_mut(self.capabilities.get_or_insert_with(Arc::default));
        set.extend(capabilities.into_iter().map(Into::into));
        self
    }

    /// Sets who answers this call's [`elicit`](Self::elicit) questions, in place of the
    /// server's [`ElicitationHandler`]. An MCP server sets the client here.
    #[must_use]
    pub fn with_elicitation_handler(mut self, handler: impl ElicitationHandler) -> Self {
        self.elicitation = Some(Arc::new(handler));
        self
    }

    /// Sets who answers this call's [`sample`](Self::sample) requests, in place of the
    /// server's [`SamplingHandler`]. An MCP server sets the client here.
    #[must_use]
    pub fn with_sampling_handler(mut self, handler: impl SamplingHandler) -> Self {
        self.sampling = Some(Arc::new(handler));
        self
    }

    /// Sets both askers at once, sharing one value.
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    pub(crate) fn with_askers(
        mut self,
        elicitation: Arc<dyn ElicitationHandler>,
        sampling: Arc<dyn SamplingHandler>,
    ) -> Self {
        self.elicitation = Some(elicitation);
        self.sampling = Some(sampling);
        self
    }

    /// Whether this call was granted `capability`, by
    /// [`with_capabilities`](Self::with_capabilities) or as a scope of its
    /// [`identity`](Self::identity).
    pub fn has_capability(&self, capability: &str) -> bool {
        self.capabilities
            .as_ref()
            .is_some_and(|set| set.contains(capability))
            || self
                .identity
                .as_ref()
                .is_some_and(|who| who.has_scope(capability))
    }

    /// The capabilities granted to this call, and its identity's scopes, sorted, each once.
    pub fn capabilities(&self) -> impl Iterator<Item = &str> {
        let granted = self.capabilities.iter().flat_map(|set| set.iter());
        let scopes = self.identity.iter().flat_map(|who| who.scopes());
        let all: BTreeSet<&str> = granted.map(String::as_str).chain(scopes).collect();
        all.into_iter()
    }

    /// Uses the server's working directory when this context has none.
    pub(crate) fn default_working_dir(&mut self, dir: Option<&Arc<Path>>) {
        if self.working_dir.is_none() {
            self.working_dir = dir.cloned();
        }
    }

    /// Uses the server's allowed directories when this context has none.
    pub(crate) fn default_allowed_paths(&mut self, dirs: Option<&Arc<[PathBuf]>>) {
        if self.allowed_paths.is_none() {
            self.allowed_paths = dirs.cloned();
        }
    }

    /// Sends progress events to `listener` as well as to the function already set.
    pub(crate) fn add_progress_listener(
        &mut self,
        listener: impl Fn(&str, &ProgressEvent) + Send + Sync + 'static,
    ) {
        let previous = self.progress.take();
        self.progress = Some(Arc::new(move |tool: &str, event: ProgressEvent| {
            listener(tool, &event);
            if let Some(previous) = &previous {
                previous(tool, event);
            }
        }));
    }

    /// Gives the context what the server gives every call: its id, the tool's name and the
    /// server.
    pub(crate) fn for_call(
        mut self,
        call_id: u64,
        tool: Arc<str>,
        server: Arc<dyn CallHost>,
    ) -> Self {
        self.call_id = call_id;
        self.tool = Some(tool);
        self.server = Some(server);
        self
    }

    /// Fills in state types this context lacks from `defaults` (the server's state).
    pub(crate) fn merge_state_from(&mut self, defaults: &StateMapHandle) {
        let Some(theirs) = &defaults.0 else { return };
        match &mut self.state.0 {
            None => self.state.0 = Some(Arc::clone(theirs)),
            Some(mine) if Arc::ptr_eq(mine, theirs) => {}
            Some(mine) => {
                let mine = Arc::make_mut(mine);
                for (key, value) in theirs.iter() {
                    mine.entry(*key).or_insert_with(|| Arc::clone(value));
                }
            }
        }
    }

    /// The server-assigned id of this call, unique within one server.
    pub fn call_id(&self) -> u64 {
        self.call_id
    }

    /// Who is calling.
    pub fn caller(&self) -> Caller {
        self.caller
    }

    /// The name of the tool being called, once the server has resolved it.
    pub fn tool_name(&self) -> Option<&str> {
        self.tool.as_deref()
    }

    /// The working directory, if one was set.
    pub fn working_dir(&self) -> Option<&Path> {
        self.working_dir.as_deref()
    }

    /// The directories paths must stay in; empty when paths are not restricted.
    pub fn allowed_paths(&self) -> &[PathBuf] {
        self.allowed_paths.as_deref().unwrap_or_default()
    }

    /// Resolves a path a tool was given: a relative path joins the working directory (the
    /// process's when none is set), the result is canonicalized (symlinks followed, `.` and
    /// `..` applied), and, when allowed directories are set, it must lie inside one of them.
    /// A path that does not exist yet resolves through its longest existing ancestor.
    ///
    /// ```
    /// use aleph_tools::{ToolContext, ToolErrorKind};
    ///
    /// let root = std::env::temp_dir().canonicalize().unwrap();
    /// let ctx = ToolContext::new().with_working_dir(&root).with_allowed_paths([&root]);
    /// assert_eq!(ctx.resolve_path("notes/today.md").unwrap(), root.join("notes/today.md"));
    /// let escape = ctx.resolve_path("../../etc/passwd").unwrap_err();
    /// assert_eq!(escape.kind(), ToolErrorKind::PermissionDenied);
    /// ```
    ///
    /// # Errors
    ///
    /// [`ToolError::PermissionDenied`] for a path outside the allowed directories;
    /// [`ToolError::InvalidArgs`] for an empty path, one with a NUL byte, or one over 4,096
    /// bytes; [`ToolError::Execution`] when the file system cannot resolve it.
    pub fn resolve_path(&self, path: impl AsRef<Path>) -> Result<PathBuf, ToolError> {
        paths::resolve(
            self.tool_name().unwrap_or_default(),
            path.as_ref(),
            self.working_dir(),
            self.allowed_paths(),
        )
    }

    /// Typed state of type `T`, if the server or context was given one.
    pub fn state<T: Send + Sync + 'static>(&self) -> Option<State<T>> {
        let any = self.state.0.as_ref()?.get(&TypeId::of::<T>())?;
        Arc::clone(any).downcast::<T>().ok().map(State)
    }

    /// The call's progress reporter when someone listens to it.
    pub(crate) fn listened_progress(&self) -> Option<Progress> {
        self.has_progress_listener().then(|| self.progress())
    }

    /// The progress reporter of a call of `tool` with this context, when someone listens
    /// to it: for a context the server has not prepared for its call, which does not know
    /// the tool.
    pub(crate) fn listened_progress_of(&self, tool: &Arc<str>) -> Option<Progress> {
        let on_event = self.progress.as_ref()?;
        Some(Progress {
            tool: Some(Arc::clone(tool)),
            on_event: Some(Arc::clone(on_event)),
        })
    }

    /// Whether someone listens to this call's progress.
    pub(crate) fn has_progress_listener(&self) -> bool {
        self.progress.is_some()
    }

    /// A reporter for this call's progress.
    pub fn progress(&self) -> Progress {
        Progress {
            tool: self.tool.clone(),
            on_event: self.progress.clone(),
        }
    }

    /// The token that is cancelled when the caller gives up on this call. A context without
    /// one hands out a token that is never cancelled.
    pub fn cancellation_token(&self) -> CancellationToken {
        self.cancellation.clone().unwrap_or_default()
    }

    /// The caller's token, when the caller gave one.
    pub(crate) fn cancellation(&self) -> Option<&CancellationToken> {
        self.cancellation.as_ref()
    }

    /// Whether this call has been cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.cancellation
            .as_ref()
            .is_some_and(CancellationToken::is_cancelled)
    }
}

/// Typed state behind one `Arc`, so contexts clone it for free; `None` until a value is added.
#[derive(Clone, Default)]
pub(crate) struct StateMapHandle(Option<Arc<StateMap>>);

impl StateMapHandle {
    pub(crate) fn insert<T: Send + Sync + 'static>(&mut self, value: T) {
        let map = Arc::make_mut(self.0.get_or_insert_with(Arc::default));
        map.insert(TypeId::of::<T>(), Arc::new(value));
    }

    fn len(&self) -> usize {
        self.0.as_ref().map_or(0, |map| map.len())
    }

    pub(crate) fn contains(&self, ty: StateType) -> bool {
        self.0
            .as_ref()
            .is_some_and(|map| map.contains_key(&ty.id()))
    }
}

/// Typed state injected into a tool.
///
/// Give the value to the server with `with_state`, take `State<T>` as a parameter, and use it
/// through `Deref`. It is shared, never copied.
pub struct State<T: ?Sized>(Arc<T>);

impl<T: ?Sized> State<T> {
    /// Wraps shared state.
    pub fn new(value: Arc<T>) -> Self {
        Self(value)
    }

    /// The shared value.
    pub fn into_arc(self) -> Arc<T> {
        self.0
    }
}

impl<T: ?Sized> Deref for State<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T: ?Sized> Clone for State<T> {
    fn clone(&self) -> Self {
        Self(Arc::clone(&self.0))
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for State<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("State").field(&&*self.0).finish()
    }
}

/// A value a tool can take as a parameter, built from the call's [`ToolContext`] instead of
/// from the model's arguments.
///
/// `#[tool]` recognises [`State<T>`], [`Progress`], [`CancellationToken`], [`Caller`] and
/// `&ToolContext` by type, written bare or through `aleph_tools::`; mark a parameter
/// `#[arg(inject)]` to inject any other implementor, or `#[arg(model)]` to make a type of
/// your own that shares one of those names an argument the model fills in.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be injected into a tool from the call's context",
    label = "injected because of its type name",
    note = "`State<T>`, `Progress`, `CancellationToken`, `Caller`, `Identity` and `&ToolContext` parameters are injected; if `{Self}` is your own type for the model to fill in, mark the parameter `#[arg(model)]`",
    note = "to inject a type of your own, implement `aleph_tools::FromToolContext` for it and mark the parameter `#[arg(inject)]`"
)]
pub trait FromToolContext: Sized {
    /// Builds the value.
    ///
    /// # Errors
    ///
    /// A [`ToolError`] for the model when the context lacks what the value needs.
    fn from_tool_context(ctx: &ToolContext) -> Result<Self, ToolError>;

    /// The state type this value needs from the server, if any, so a server can report a
    /// missing one when it is built rather than at the first call. [`State<T>`] says `T`.
    fn required_state() -> Option<StateType> {
        None
    }
}

/// A state type a tool needs: what [`State<T>`] parameters declare and
/// [`ToolServerBuilder::build`](crate::ToolServerBuilder::build) checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct StateType {
    id: TypeId,
    name: &'static str,
}

impl StateType {
    /// The state type `T`.
    pub fn of<T: Send + Sync + 'static>() -> Self {
        Self {
            id: TypeId::of::<T>(),
            name: std::any::type_name::<T>(),
        }
    }

    /// The Rust name of the type.
    pub fn name(&self) -> &'static str {
        self.name
    }

    pub(crate) fn id(&self) -> TypeId {
        self.id
    }
}

impl<T: Send + Sync + 'static> FromToolContext for State<T> {
    fn from_tool_context(ctx: &ToolContext) -> Result<Self, ToolError> {
        ctx.state::<T>().ok_or_else(|| ToolError::MissingState {
            tool: ctx.tool_name().unwrap_or_default().to_owned(),
            type_name: std::any::type_name::<T>(),
        })
    }

    fn required_state() -> Option<StateType> {
        Some(StateType::of::<T>())
    }
}

impl FromToolContext for Progress {
    fn from_tool_context(ctx: &ToolContext) -> Result<Self, ToolError> {
        Ok(ctx.progress())
    }
}

impl FromToolContext for CancellationToken {
    fn from_tool_context(ctx: &ToolContext) -> Result<Self, ToolError> {
        Ok(ctx.cancellation_token())
    }
}

impl FromToolContext for ToolContext {
    fn from_tool_context(ctx: &ToolContext) -> Result<Self, ToolError> {
        Ok(ctx.clone())
    }
}

impl FromToolContext for Caller {
    fn from_tool_context(ctx: &ToolContext) -> Result<Self, ToolError> {
        Ok(ctx.caller())
    }
}
