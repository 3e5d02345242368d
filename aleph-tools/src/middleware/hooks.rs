//! Hooks: what plugins and applications attach to a running server without rebuilding it.
//!
//! Interceptors run one after another before the tool and may change or refuse the call.
//! Resolvers may answer the call instead of the tool; the first answer wins. Observers hear
//! every outcome, fire-and-forget: they run on their own task and their errors are logged.
//! Within each kind, hooks run by [`HookPriority`], then in the order they were added.

use std::error::Error;
use std::fmt;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::FutureExt;
use serde_json::Value;

use super::ToolCall;
use crate::context::Caller;
use crate::error::ToolError;
use crate::result::ToolOutput;
use crate::tool::BoxFuture;

/// Where a hook runs among hooks of its kind: `System` first, `Low` last. Hooks of one
/// priority run in the order they were added. Written in plugin manifests in lowercase
/// (`priority = "high"`).
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    serde::Serialize,
    serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum HookPriority {
    /// Hooks the host itself depends on, such as security checks.
    System,
    /// Hooks that must see the call before ordinary ones.
    High,
    /// The default.
    #[default]
    Normal,
    /// Hooks that should see the call after all others.
    Low,
}

impl HookPriority {
    /// The number hooks are ordered by, lower first: -1000, -100, 0 and 100.
    pub const fn value(self) -> i32 {
        match self {
            Self::System => -1000,
            Self::High => -100,
            Self::Normal => 0,
            Self::Low => 100,
        }
    }
}

/// Names a hook added to a server, to remove it later.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct HookId(pub(crate) u64);

/// A hook that sees each call before the tool runs and may change it or refuse it.
///
/// Any `Fn(ToolCall) -> impl Future<Output = Result<ToolCall, ToolError>>` is one.
pub trait Interceptor: Send + Sync + 'static {
    /// Returns the call to go on with (changed or not), or the error that refuses it.
    fn intercept(&self, call: ToolCall)
    -> impl Future<Output = Result<ToolCall, ToolError>> + Send;
}

impl<F, Fut> Interceptor for F
where
    F: Fn(ToolCall) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<ToolCall, ToolError>> + Send,
{
    fn intercept(
        &self,
        call: ToolCall,
    ) -> impl Future<Output = Result<ToolCall, ToolError>> + Send {
        self(call)
    }
}

/// A hook that may answer a call in place of the tool, such as a cache.
///
/// Any `Fn(&ToolCall) -> impl Future<Output = Option<ToolOutput>>` is one (the future may
/// not borrow the call; copy out what it needs).
pub trait Resolver: Send + Sync + 'static {
    /// The answer to `call`, or `None` to let the next resolver, and then the tool, answer.
    fn resolve(&self, call: &ToolCall) -> impl Future<Output = Option<ToolOutput>> + Send;
}

impl<F, Fut> Resolver for F
where
    F: Fn(&ToolCall) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Option<ToolOutput>> + Send,
{
    fn resolve(&self, call: &ToolCall) -> impl Future<Output = Option<ToolOutput>> + Send {
        self(call)
    }
}

/// What an observer failing says; it is logged, never seen by the caller.
pub type ObserverError = Box<dyn Error + Send + Sync>;

/// A finished call, as observers hear of it.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ObservedCall {
    /// The tool that was called.
    pub tool: String,
    /// The call's id.
    pub call_id: u64,
    /// Who made the call.
    pub caller: Caller,
    /// The arguments as the hooks received them.
    pub arguments: Value,
    /// What the call returned.
    pub outcome: Result<ToolOutput, ToolError>,
    /// How long the hooks and the tool took.
    pub duration: Duration,
}

/// A hook that hears every finished call, on its own task; it cannot change the outcome.
///
/// Any `Fn(Arc<ObservedCall>) -> impl Future<Output = Result<(), ObserverError>>` is one.
pub trait Observer: Send + Sync + 'static {
    /// Handles one finished call. An error is logged with `tracing` and goes no further.
    fn observe(
        &self,
        call: Arc<ObservedCall>,
    ) -> impl Future<Output = Result<(), ObserverError>> + Send;
}

impl<F, Fut> Observer for F
where
    F: Fn(Arc<ObservedCall>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<(), ObserverError>> + Send,
{
    fn observe(
        &self,
        call: Arc<ObservedCall>,
    ) -> impl Future<Output = Result<(), ObserverError>> + Send {
        self(call)
    }
}

pub(crate) trait DynInterceptor: Send + Sync + 'static {
    fn intercept_boxed(&self, call: ToolCall) -> BoxFuture<'_, Result<ToolCall, ToolError>>;
}

impl<T: Interceptor> DynInterceptor for T {
    fn intercept_boxed(&self, call: ToolCall) -> BoxFuture<'_, Result<ToolCall, ToolError>> {
        Box::pin(self.intercept(call))
    }
}

pub(crate) trait DynResolver: Send + Sync + 'static {
    fn resolve_boxed<'a>(&'a self, call: &'a ToolCall) -> BoxFuture<'a, Option<ToolOutput>>;
}

impl<T: Resolver> DynResolver for T {
    fn resolve_boxed<'a>(&'a self, call: &'a ToolCall) -> BoxFuture<'a, Option<ToolOutput>> {
        Box::pin(self.resolve(call))
    }
}

pub(crate) trait DynObserver: Send + Sync + 'static {
    fn observe_boxed(&self, call: Arc<ObservedCall>) -> BoxFuture<'_, Result<(), ObserverError>>;
}

impl<T: Observer> DynObserver for T {
    fn observe_boxed(&self, call: Arc<ObservedCall>) -> BoxFuture<'_, Result<(), ObserverError>> {
        Box::pin(self.observe(call))
    }
}

/// A hook to add to a running server with
/// [`AlephToolServer::add_hook`](crate::AlephToolServer::add_hook): an [`Interceptor`], a
/// [`Resolver`] or an [`Observer`], with the priority it runs at among hooks of its kind.
///
/// ```
/// use aleph_tools::middleware::{Hook, HookPriority, ToolCall};
/// use aleph_tools::{AlephToolServer, ToolError};
///
/// let server = AlephToolServer::new();
/// let id = server.add_hook(Hook::interceptor(HookPriority::High, |call: ToolCall| async move {
///     if call.name() == "shutdown" {
///         return Err(ToolError::permission_denied(call.name(), "not today"));
///     }
///     Ok(call)
/// }));
/// assert!(server.remove_hook(id));
/// ```
pub struct Hook {
    priority: HookPriority,
    kind: HookKind,
}

enum HookKind {
    Interceptor(Arc<dyn DynInterceptor>),
    Resolver(Arc<dyn DynResolver>),
    Observer(Arc<dyn DynObserver>),
}

impl Hook {
    /// A hook that sees every call before the tool and may change or refuse it.
    /// Interceptors run one after another, by priority, then in the order added.
    pub fn interceptor(priority: HookPriority, hook: impl Interceptor) -> Self {
        Self {
            priority,
            kind: HookKind::Interceptor(Arc::new(hook)),
        }
    }

    /// A hook that may answer calls in place of the tool; the first answer wins.
    pub fn resolver(priority: HookPriority, hook: impl Resolver) -> Self {
        Self {
            priority,
            kind: HookKind::Resolver(Arc::new(hook)),
        }
    }

    /// A hook that hears every finished call on its own task; its errors are logged.
    pub fn observer(priority: HookPriority, hook: impl Observer) -> Self {
        Self {
            priority,
            kind: HookKind::Observer(Arc::new(hook)),
        }
    }

    /// The priority it runs at.
    pub fn priority(&self) -> HookPriority {
        self.priority
    }
}

impl fmt::Debug for Hook {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.kind {
            HookKind::Interceptor(_) => "interceptor",
            HookKind::Resolver(_) => "resolver",
            HookKind::Observer(_) => "observer",
        };
        f.debug_struct("Hook")
            .field("kind", &kind)
            .field("priority", &self.priority)
            .finish()
    }
}

/// A hook as a server holds it: with its id and priority.
struct Registered<T: ?Sized> {
    id: HookId,
    priority: HookPriority,
    inner: Arc<T>,
}

impl<T: ?Sized> Clone for Registered<T> {
    fn clone(&self) -> Self {
        Self {
            id: self.id,
            priority: self.priority,
            inner: Arc::clone(&self.inner),
        }
    }
}

/// The hooks a server runs; replaced whole on every change, read without locks.
#[derive(Clone, Default)]
pub(crate) struct HookSet {
    interceptors: Vec<Registered<dyn DynInterceptor>>,
    resolvers: Vec<Registered<dyn DynResolver>>,
    observers: Vec<Registered<dyn DynObserver>>,
}

/// Adds `hook` after every hook of the same or a higher priority.
fn insert<T: ?Sized>(
    list: &mut Vec<Registered<T>>,
    id: HookId,
    priority: HookPriority,
    hook: Arc<T>,
) {
    let at = list.partition_point(|h| h.priority <= priority);
    list.insert(
        at,
        Registered {
            id,
            priority,
            inner: hook,
        },
    );
}

impl HookSet {
    pub(crate) fn is_empty(&self) -> bool {
        self.interceptors.is_empty() && self.resolvers.is_empty() && self.observers.is_empty()
    }

    pub(crate) fn add(&mut self, id: HookId, hook: Hook) {
        let Hook { priority, kind } = hook;
        match kind {
            HookKind::Interceptor(h) => insert(&mut self.interceptors, id, priority, h),
            HookKind::Resolver(h) => insert(&mut self.resolvers, id, priority, h),
            HookKind::Observer(h) => insert(&mut self.observers, id, priority, h),
        }
    }

    /// Removes the hook `id`; says whether there was one.
    pub(crate) fn remove(&mut self, id: HookId) -> bool {
        let before = self.interceptors.len() + self.resolvers.len() + self.observers.len();
        self.interceptors.retain(|h| h.id != id);
        self.resolvers.retain(|h| h.id != id);
        self.observers.retain(|h| h.id != id);
        before != self.interceptors.len() + self.resolvers.len() + self.observers.len()
    }

    /// Runs the call through the hooks, with `tool` as the answer when no resolver gives one.
    pub(crate) async fn run<F, Fut>(&self, call: ToolCall, tool: F) -> Result<ToolOutput, ToolError>
    where
        F: FnOnce(ToolCall) -> Fut,
        Fut: Future<Output = Result<ToolOutput, ToolError>>,
    {
        let started = Instant::now();
        let heard = (!self.observers.is_empty()).then(|| {
            (
                call.name().to_owned(),
                call.context().call_id(),
                call.context().caller(),
                call.arguments().clone(),
            )
        });
        let outcome = self.answer(call, tool).await;
        if let Some((tool, call_id, caller, arguments)) = heard {
            self.notify(&Arc::new(ObservedCall {
                tool,
                call_id,
                caller,
                arguments,
                outcome: outcome.clone(),
                duration: started.elapsed(),
            }));
        }
        outcome
    }

    async fn answer<F, Fut>(&self, mut call: ToolCall, tool: F) -> Result<ToolOutput, ToolError>
    where
        F: FnOnce(ToolCall) -> Fut,
        Fut: Future<Output = Result<ToolOutput, ToolError>>,
    {
        for interceptor in &self.interceptors {
            call = interceptor.inner.intercept_boxed(call).await?;
        }
        for resolver in &self.resolvers {
            if let Some(output) = resolver.inner.resolve_boxed(&call).await {
                return Ok(output);
            }
        }
        tool(call).await
    }

    /// Gives `call` to every observer on its own task. Outside a Tokio runtime there is no
    /// task to spawn: each observer is polled once in place, and dropped if not done.
    fn notify(&self, call: &Arc<ObservedCall>) {
        for observer in &self.observers {
            let hook = Arc::clone(&observer.inner);
            let call = Arc::clone(call);
            let task = async move {
                let tool = call.tool.clone();
                match AssertUnwindSafe(hook.observe_boxed(call))
                    .catch_unwind()
                    .await
                {
                    Ok(Ok(())) => {}
                    Ok(Err(err)) => {
                        tracing::warn!(tool = %tool, error = %err, "a tool-call observer failed");
                    }
                    Err(_) => tracing::warn!(tool = %tool, "a tool-call observer panicked"),
                }
            };
            match tokio::runtime::Handle::try_current() {
                Ok(runtime) => {
                    runtime.spawn(task);
                }
                Err(_) => task.now_or_never().unwrap_or(()),
            }
        }
    }
}

impl fmt::Debug for HookSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HookSet")
            .field("interceptors", &self.interceptors.len())
            .field("resolvers", &self.resolvers.len())
            .field("observers", &self.observers.len())
            .finish()
    }
}
