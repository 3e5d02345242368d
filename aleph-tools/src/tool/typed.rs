//! What the server may do with a tool that deserializes its own arguments with serde (every
//! [`AlephTool`]): read them straight from the caller's JSON value, and check them against
//! the schema only when serde refuses.
//!
//! Every path a typed tool's call can take (the server's fast path, in place or in one
//! boxed future; the checked path; [`AlephToolDyn::call`](super::AlephToolDyn::call)) reads
//! its arguments with the one reader of [`crate::args`] and runs it through the one future
//! [`run`] makes, so `#[tool]` costs each tool one copy of each.

use std::any::Any;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use serde_json::Value;

use super::{AlephTool, BoxFuture};
use crate::args::read;
use crate::context::ToolContext;
use crate::error::ToolError;
use crate::result::{IntoToolOutput, ToolOutput};
use crate::schema;

/// How an [inline](AlephTool::INLINE) typed tool runs a call in place, on the server's
/// fast path: `tool` is the tool (as [`TypedArguments::as_any`] gives it), `ctx` its
/// context. `None` when serde refuses the arguments, for the checked path to say why.
#[doc(hidden)]
pub type RunInline = fn(&dyn Any, &Value, &ToolContext) -> Option<Result<ToolOutput, ToolError>>;

/// A tool whose arguments are a serde type. Not public API: the server's fast path.
#[doc(hidden)]
pub trait TypedArguments: Send + Sync {
    /// The schema generated from the arguments type. The server trusts serde only for a
    /// tool whose input schema is this one.
    fn own_schema(&self) -> Arc<Value>;

    /// The tool's call on `args`, made and not yet started, when they are an object serde
    /// reads whole into the arguments type.
    fn prepare<'a>(
        &'a self,
        args: &Value,
        ctx: &'a ToolContext,
    ) -> Option<BoxFuture<'a, Result<ToolOutput, ToolError>>>;

    /// Whether the tool reads its context (see [`AlephTool::READS_CONTEXT`]).
    fn reads_context(&self) -> bool;

    /// How the tool runs a call in place, when it is inline.
    fn inline_runner(&self) -> Option<RunInline>;

    /// The tool, to find its type again.
    fn as_any(&self) -> &dyn Any;
}

impl<T: AlephTool> TypedArguments for T {
    fn own_schema(&self) -> Arc<Value> {
        schema::arguments_schema_for::<T::Args>()
    }

    fn prepare<'a>(
        &'a self,
        args: &Value,
        ctx: &'a ToolContext,
    ) -> Option<BoxFuture<'a, Result<ToolOutput, ToolError>>> {
        if !args.is_object() {
            return None;
        }
        // A match, not `.ok()?`: that would compile two more functions for every tool.
        match read::<T::Args>(args) {
            Ok(args) => Some(Box::pin(run(self, args, ctx))),
            Err(_) => None,
        }
    }

    fn reads_context(&self) -> bool {
        T::READS_CONTEXT
    }

    fn inline_runner(&self) -> Option<RunInline> {
        // An `if`, not `then_some`: a tool that is not inline then compiles no runner.
        if T::INLINE {
            Some(run_in_place::<T>)
        } else {
            None
        }
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// A call of `tool` on arguments read: the tool's future, and its output made a
/// [`ToolOutput`].
pub(super) async fn run<T: AlephTool>(
    tool: &T,
    args: T::Args,
    ctx: &ToolContext,
) -> Result<ToolOutput, ToolError> {
    tool.call(args, ctx).await?.into_tool_output()
}

/// [`RunInline`] for `T`.
fn run_in_place<T: AlephTool>(
    tool: &dyn Any,
    args: &Value,
    ctx: &ToolContext,
) -> Option<Result<ToolOutput, ToolError>> {
    if !args.is_object() {
        return None;
    }
    let Ok(args) = read::<T::Args>(args) else {
        return None;
    };
    Some(match tool.downcast_ref::<T>() {
        Some(tool) => run_inline(tool, args, ctx),
        None => Err(another_type(T::NAME)),
    })
}

/// The error of a call whose fast path met a tool that is not a `T`. Never seen: the server
/// takes the fast path from the tool it calls.
#[cold]
fn another_type(tool: &str) -> ToolError {
    ToolError::execution(format!(
        "`{tool}` could not start: the server's fast path met a tool of another type (a bug in aleph-tools; please report it)"
    ))
}

/// Runs an [inline](AlephTool::INLINE) tool's call to its end in place: its future is
/// polled once, and one that waits fails the call.
fn run_inline<T: AlephTool>(
    tool: &T,
    args: T::Args,
    ctx: &ToolContext,
) -> Result<ToolOutput, ToolError> {
    let running = pin!(run(tool, args, ctx));
    match running.poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(outcome) => outcome,
        Poll::Pending => Err(waited(T::NAME)),
    }
}

#[cold]
fn waited(tool: &str) -> ToolError {
    ToolError::execution(format!(
        "`{tool}` says it is inline (`AlephTool::INLINE`) but its call waited; only a tool whose call never waits may say so"
    ))
}
