//! [`Layer`]: middleware added to a running server, with the [`Priority`] it runs at; and the
//! three shapes of layer a plugin's hooks take, each a [`Middleware`]: an [`Interceptor`]
//! changes or refuses the call, a [`Resolver`] may answer it in the tool's place, an
//! [`Observer`] hears every outcome on a task of its own.

use std::error::Error;
use std::fmt;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::FutureExt;
use serde_json::Value;

use super::{DynMiddleware, Middleware, Next, ToolCall};
use crate::context::Caller;
use crate::error::ToolError;
use crate::result::ToolOutput;

/// Where a layer added at run time runs among layers of its kind: `System` first, `Low`
/// last; layers of one priority run in the order they were added. Written in plugin
/// manifests in lowercase (`priority = "high"`).
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
pub enum Priority {
    /// Layers the host itself depends on, such as security checks.
    System,
    /// Layers that must see the call before ordinary ones.
    High,
    /// The default.
    #[default]
    Normal,
    /// Layers that should see the call after all others.
    Low,
}

impl Priority {
    /// The number layers are ordered by, lower first: -1000, -100, 0 and 100.
    pub const fn value(self) -> i32 {
        match self {
            Self::System => -1000,
            Self::High => -100,
            Self::Normal => 0,
            Self::Low => 100,
        }
    }
}

/// Names a layer added to a running server, to remove it later.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LayerId(pub(crate) u64);

/// Which part of the stack a layer belongs to. The stack runs the layers the builder was
/// given first, in the order given; then those added at run time: observers (so they hear
/// what every later layer did), interceptors and other middleware, resolvers; each part by
/// priority, then in the order added.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Stage {
    Built,
    Observe,
    Change,
    Answer,
}

/// A layer to add to a running server with
/// [`AlephToolServer::add_layer`](crate::AlephToolServer::add_layer): any [`Middleware`], or
/// an [`Interceptor`], a [`Resolver`] or an [`Observer`], with the priority it runs at.
///
/// ```
/// use aleph_tools::middleware::{Layer, Priority, ToolCall};
/// use aleph_tools::{AlephToolServer, ToolError};
///
/// let server = AlephToolServer::new();
/// let id = server.add_layer(Layer::interceptor(Priority::High, |call: ToolCall| async move {
///     if call.name() == "shutdown" {
///         return Err(ToolError::permission_denied(call.name(), "not today"));
///     }
///     Ok(call)
/// }));
/// assert!(server.remove_layer(id));
/// ```
pub struct Layer {
    pub(crate) priority: Priority,
    pub(crate) stage: Stage,
    pub(crate) inner: Arc<dyn DynMiddleware>,
}

impl Layer {
    /// Any middleware, run among the interceptors: it sees the call after the observers
    /// and before the resolvers.
    pub fn new(priority: Priority, layer: impl Middleware) -> Self {
        Self {
            priority,
            stage: Stage::Change,
            inner: Arc::new(layer),
        }
    }

    /// A layer that sees every call before the resolvers and the tool and may change or
    /// refuse it.
    pub fn interceptor(priority: Priority, interceptor: impl Interceptor) -> Self {
        Self {
            priority,
            stage: Stage::Change,
            inner: Arc::new(Intercepting(interceptor)),
        }
    }

    /// A layer that may answer calls in place of the tool; the first answer wins.
    pub fn resolver(priority: Priority, resolver: impl Resolver) -> Self {
        Self {
            priority,
            stage: Stage::Answer,
            inner: Arc::new(Resolving(resolver)),
        }
    }

    /// A layer that hears every finished call on its own task; its errors are logged.
    pub fn observer(priority: Priority, observer: impl Observer) -> Self {
        Self {
            priority,
            stage: Stage::Observe,
            inner: Arc::new(Observing(Arc::new(observer))),
        }
    }

    /// The priority it runs at.
    pub fn priority(&self) -> Priority {
        self.priority
    }
}

impl fmt::Debug for Layer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.stage {
            Stage::Built | Stage::Change => "middleware",
            Stage::Observe => "observer",
            Stage::Answer => "resolver",
        };
        f.debug_struct("Layer")
            .field("kind", &kind)
            .field("priority", &self.priority)
            .finish_non_exhaustive()
    }
}

/// A layer that sees each call before the tool runs and may change it or refuse it.
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

/// A layer that may answer a call in place of the tool, such as a cache.
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
    /// The arguments as the observer received them.
    pub arguments: Value,
    /// What the call returned.
    pub outcome: Result<ToolOutput, ToolError>,
    /// How long the layers after the observer and the tool took.
    pub duration: Duration,
}

/// A layer that hears every finished call, on its own task; it cannot change the outcome.
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

/// An [`Interceptor`] as middleware.
struct Intercepting<I>(I);

impl<I: Interceptor> Middleware for Intercepting<I> {
    async fn handle(&self, call: ToolCall, next: Next) -> Result<ToolOutput, ToolError> {
        let call = self.0.intercept(call).await?;
        next.run(call).await
    }
}

/// A [`Resolver`] as middleware.
struct Resolving<R>(R);

impl<R: Resolver> Middleware for Resolving<R> {
    async fn handle(&self, call: ToolCall, next: Next) -> Result<ToolOutput, ToolError> {
        match self.0.resolve(&call).await {
            Some(output) => Ok(output),
            None => next.run(call).await,
        }
    }
}

/// An [`Observer`] as middleware.
struct Observing<O>(Arc<O>);

impl<O: Observer> Middleware for Observing<O> {
    async fn handle(&self, call: ToolCall, next: Next) -> Result<ToolOutput, ToolError> {
        let started = Instant::now();
        let tool = call.name().to_owned();
        let call_id = call.context().call_id();
        let caller = call.context().caller();
        let arguments = call.arguments().clone();
        let outcome = next.run(call).await;
        let observed = ObservedCall {
            tool,
            call_id,
            caller,
            arguments,
            outcome: outcome.clone(),
            duration: started.elapsed(),
        };
        notify(Arc::clone(&self.0), Arc::new(observed));
        outcome
    }
}

/// Gives `call` to `observer` on a task of its own. Outside a Tokio runtime there is no
/// task to spawn: the observer is polled once in place, and dropped if not done.
fn notify<O: Observer>(observer: Arc<O>, call: Arc<ObservedCall>) {
    let task = async move {
        let tool = call.tool.clone();
        match AssertUnwindSafe(observer.observe(call))
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
