//! Middleware: the one way to step into a server's calls, in the style of
//! `axum::middleware::from_fn` — a layer gets the call and the rest of the stack, and may
//! change the call, answer it itself, refuse it, or look at what came back.
//!
//! Built in: [`Permission`] (capabilities a call's context must hold), [`Audit`] (`tracing`
//! spans and events with secrets redacted), [`ConcurrencyLimit`] (calls at once, per tool
//! and overall), [`Listen`] (a [`ToolProgressHandler`] told of each call's start,
//! progress and result); with the feature `rate-limit`, `RateLimit` (calls per time, per
//! tool and overall); and with the feature `metrics`, `Metrics` (calls, errors and latency
//! per tool). [`Interceptor`], [`Resolver`] and [`Observer`] are the shapes of layer a
//! plugin's hooks take.
//!
//! # The stack
//!
//! Every call runs through one stack of layers. The builder's layers
//! ([`with_middleware`](crate::ToolServerBuilder::with_middleware)) come first, in the order
//! given: the first added is the outermost and sees the call first and its outcome last.
//! Layers added to a running server ([`AlephToolServer::add_layer`](crate::AlephToolServer::add_layer),
//! and every plugin's hooks) follow: observers, then interceptors and other middleware,
//! then resolvers, each by [`Priority`] and then in the order added. Calls that start
//! after a change run the new stack; calls already running keep theirs.
//!
//! # Order of a call
//!
//! 1. Admission: the name is resolved (and repaired), the filter and the tool's allowed
//!    callers are checked. A call refused here reaches no layer.
//! 2. The stack, outermost layer first.
//! 3. The arguments the last layer passed on are repaired (when the server does), checked
//!    against the tool's schema and read into the tool's arguments type, once: what a
//!    layer changed is checked like what the caller sent.
//! 4. Confirmation, for tools that need it.
//! 5. The tool, under its time limit, with a panic contained.
//!
//! With no layer, no confirmation and no argument repair, a call takes the fast path: its
//! arguments are read straight from the caller's JSON value into the tool's arguments type,
//! with no schema check unless serde refuses them.

mod audit;
mod concurrency;
mod layer;
mod listen;
#[cfg(feature = "metrics")]
mod metrics;
mod permission;
#[cfg(feature = "rate-limit")]
mod rate_limit;
mod stack;

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use serde_json::Value;

pub use self::audit::{Audit, REDACTED};
pub use self::concurrency::ConcurrencyLimit;
pub use self::layer::{
    Interceptor, Layer, LayerId, ObservedCall, Observer, ObserverError, Priority, Resolver,
};
pub use self::listen::{Listen, ToolProgressHandler};
#[cfg(feature = "metrics")]
pub use self::metrics::{CALL_DURATION, CALLS, CALLS_RUNNING, Metrics};
pub use self::permission::Permission;
#[cfg(feature = "rate-limit")]
#[cfg_attr(docsrs, doc(cfg(feature = "rate-limit")))]
pub use self::rate_limit::{Rate, RateLimit};
pub use self::stack::Next;
pub(crate) use self::stack::{Chain, Endpoint, Stack};
use crate::context::ToolContext;
use crate::error::ToolError;
use crate::result::ToolOutput;
use crate::tool::{BoxFuture, ToolDefinition};

/// One call on its way through the middleware chain.
///
/// The tool is fixed (its name and definition are read-only); the arguments and the context
/// may be changed by a layer before it passes the call on.
pub struct ToolCall {
    name: Arc<str>,
    definition: Arc<ToolDefinition>,
    arguments: Value,
    context: ToolContext,
}

impl ToolCall {
    pub(crate) fn new(
        name: Arc<str>,
        definition: Arc<ToolDefinition>,
        arguments: Value,
        context: ToolContext,
    ) -> Self {
        Self {
            name,
            definition,
            arguments,
            context,
        }
    }

    /// The name of the tool being called (after name repair).
    pub fn name(&self) -> &str {
        &self.name
    }

    pub(crate) fn shared_name(&self) -> &Arc<str> {
        &self.name
    }

    /// The definition of the tool being called.
    pub fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    /// The arguments as the caller sent them (`null` read as `{}`), or as an earlier layer
    /// changed them. They are checked against the tool's schema after the last layer.
    pub fn arguments(&self) -> &Value {
        &self.arguments
    }

    /// The arguments, to change before passing the call on. They are checked after the
    /// last layer, so a change that breaks them fails the call with an argument error.
    pub fn arguments_mut(&mut self) -> &mut Value {
        &mut self.arguments
    }

    /// The call's context: caller, call id, capabilities, state, cancellation.
    pub fn context(&self) -> &ToolContext {
        &self.context
    }

    /// The call's context, to change before passing the call on.
    pub fn context_mut(&mut self) -> &mut ToolContext {
        &mut self.context
    }

    pub(crate) fn into_parts(self) -> (Value, ToolContext) {
        (self.arguments, self.context)
    }
}

impl fmt::Debug for ToolCall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolCall")
            .field("name", &self.name)
            .field("arguments", &self.arguments)
            .field("call_id", &self.context.call_id())
            .finish_non_exhaustive()
    }
}

/// A layer around every call a server runs.
///
/// Write one with [`from_fn`], or implement this trait for a type that keeps state. Add it
/// with [`ToolServerBuilder::with_middleware`](crate::ToolServerBuilder::with_middleware).
///
/// ```
/// use aleph_tools::middleware::{self, Middleware, Next, ToolCall};
/// use aleph_tools::{ToolError, ToolOutput};
///
/// /// Refuses every call on Sundays; passes the rest on.
/// struct ClosedOnSundays {
///     sunday: bool,
/// }
///
/// impl Middleware for ClosedOnSundays {
///     async fn handle(&self, call: ToolCall, next: Next) -> Result<ToolOutput, ToolError> {
///         if self.sunday {
///             return Err(ToolError::permission_denied(call.name(), "the shop is closed"));
///         }
///         next.run(call).await
///     }
/// }
/// ```
pub trait Middleware: Send + Sync + 'static {
    /// Handles `call`: pass it on with [`Next::run`], or answer it without the tool.
    fn handle(
        &self,
        call: ToolCall,
        next: Next,
    ) -> impl Future<Output = Result<ToolOutput, ToolError>> + Send;

    /// Whether a caller with `context` is offered `tool` where tools are listed: MCP
    /// `tools/list`, [`ToolList::context`](crate::ToolList::context), the
    /// agent loop's tools array and the `list_tools` meta tool. Every tool, unless a layer
    /// says otherwise.
    ///
    /// A layer that refuses some callers a tool says so here as well, so that they are not
    /// shown what they cannot call ([`Permission`] does). Leaving a tool out of listings
    /// does not refuse calls to it: [`handle`](Self::handle) still must.
    fn offers(&self, tool: &ToolDefinition, context: &ToolContext) -> bool {
        let _ = (tool, context);
        true
    }
}

/// [`Middleware`] behind a pointer: one boxed future per layer per call.
pub(crate) trait DynMiddleware: Send + Sync + 'static {
    fn handle_boxed(
        &self,
        call: ToolCall,
        next: Next,
    ) -> BoxFuture<'_, Result<ToolOutput, ToolError>>;

    fn offers_dyn(&self, tool: &ToolDefinition, context: &ToolContext) -> bool;
}

impl<M: Middleware> DynMiddleware for M {
    fn handle_boxed(
        &self,
        call: ToolCall,
        next: Next,
    ) -> BoxFuture<'_, Result<ToolOutput, ToolError>> {
        Box::pin(self.handle(call, next))
    }

    fn offers_dyn(&self, tool: &ToolDefinition, context: &ToolContext) -> bool {
        self.offers(tool, context)
    }
}

/// Middleware from an async function or closure of the call and the rest of the chain.
///
/// ```
/// use aleph_tools::middleware::{self, Next, ToolCall};
/// use aleph_tools::AlephToolServer;
///
/// let server = AlephToolServer::builder().with_middleware(middleware::from_fn(
///     |call: ToolCall, next: Next| async move {
///         let name = call.name().to_owned();
///         let outcome = next.run(call).await;
///         println!("{name} finished: ok = {}", outcome.is_ok());
///         outcome
///     },
/// ))
/// .build()
/// .unwrap();
/// # drop(server);
/// ```
pub fn from_fn<F, Fut>(f: F) -> FromFn<F>
where
    F: Fn(ToolCall, Next) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<ToolOutput, ToolError>> + Send + 'static,
{
    FromFn { f }
}

/// Middleware made by [`from_fn`].
#[derive(Clone)]
pub struct FromFn<F> {
    f: F,
}

impl<F> fmt::Debug for FromFn<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FromFn").finish_non_exhaustive()
    }
}

impl<F, Fut> Middleware for FromFn<F>
where
    F: Fn(ToolCall, Next) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<ToolOutput, ToolError>> + Send + 'static,
{
    fn handle(
        &self,
        call: ToolCall,
        next: Next,
    ) -> impl Future<Output = Result<ToolOutput, ToolError>> + Send {
        (self.f)(call, next)
    }
}
