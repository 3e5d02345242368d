//! Middleware: code that wraps every call a server runs, in the style of
//! `axum::middleware::from_fn` — a layer gets the call and the rest of the chain, and may
//! change the call, answer it itself, refuse it, or look at what came back.
//!
//! Built in: [`Permission`] (capabilities a call's context must hold), [`Audit`] (`tracing`
//! spans and events with secrets redacted), [`ConcurrencyLimit`] (calls at once, per tool
//! and overall); with the feature `rate-limit`, `RateLimit` (calls per time, per tool and
//! overall); and with the feature `metrics`, `Metrics` (calls, errors and latency per
//! tool). Hooks ([`Interceptor`], [`Observer`], [`Resolver`]) plug into the same chain at
//! run time.
//!
//! # Order
//!
//! A call passes the server's own checks first (name, filter, allowed callers, argument
//! validation), then the middleware in the order it was added — the first added is the
//! outermost and sees the call first and the outcome last — then the hooks (interceptors,
//! then resolvers; observers hear the outcome), then confirmation, then the tool.

mod audit;
mod concurrency;
mod hooks;
#[cfg(feature = "metrics")]
mod metrics;
mod permission;
#[cfg(feature = "rate-limit")]
mod rate_limit;

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use serde_json::Value;

pub use self::audit::{Audit, REDACTED};
pub use self::concurrency::ConcurrencyLimit;
pub(crate) use self::hooks::HookSet;
pub use self::hooks::{
    Hook, HookId, HookPriority, Interceptor, ObservedCall, Observer, ObserverError, Resolver,
};
#[cfg(feature = "metrics")]
pub use self::metrics::{CALL_DURATION, CALLS, CALLS_RUNNING, Metrics};
pub use self::permission::Permission;
#[cfg(feature = "rate-limit")]
#[cfg_attr(docsrs, doc(cfg(feature = "rate-limit")))]
pub use self::rate_limit::{Rate, RateLimit};
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

    /// The arguments, already checked against the tool's schema.
    pub fn arguments(&self) -> &Value {
        &self.arguments
    }

    /// The arguments, to change before passing the call on. The tool still deserializes
    /// them, so a change that breaks them fails the call with an argument error.
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

/// The layers a server runs, outermost first.
pub(crate) type Chain = Arc<[Arc<dyn DynMiddleware>]>;

/// What runs after the last layer: the hooks, confirmation and the tool.
pub(crate) trait Endpoint: Send + Sync + 'static {
    fn call(self: Arc<Self>, call: ToolCall) -> BoxFuture<'static, Result<ToolOutput, ToolError>>;
}

/// The rest of the chain after the current layer.
pub struct Next {
    chain: Chain,
    index: usize,
    endpoint: Arc<dyn Endpoint>,
}

impl Next {
    pub(crate) fn new(chain: Chain, endpoint: Arc<dyn Endpoint>) -> Self {
        Self {
            chain,
            index: 0,
            endpoint,
        }
    }

    /// Runs the rest of the chain, and in the end the tool, on `call`.
    ///
    /// # Errors
    ///
    /// Whatever a later layer, a hook or the tool fails with.
    pub async fn run(self, call: ToolCall) -> Result<ToolOutput, ToolError> {
        let Self {
            chain,
            index,
            endpoint,
        } = self;
        match chain.get(index).map(Arc::clone) {
            Some(layer) => {
                let next = Self {
                    chain,
                    index: index + 1,
                    endpoint,
                };
                layer.handle_boxed(call, next).await
            }
            None => endpoint.call(call).await,
        }
    }
}

impl fmt::Debug for Next {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Next")
            .field("layers_left", &(self.chain.len() - self.index))
            .finish_non_exhaustive()
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
