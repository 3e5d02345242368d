//! What the server may do with a tool that deserializes its own arguments with serde (every
//! [`AlephTool`]): try serde first and check against the schema only when serde refuses,
//! and read JSON text straight into the arguments type.

use std::any::Any;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use serde::de::DeserializeOwned;
use serde_json::Value;

use super::AlephTool;
use crate::context::ToolContext;
use crate::error::ToolError;
use crate::result::{IntoToolOutput, ToolOutput};
use crate::schema;
use crate::server::{Prepared, ToolCallFuture};
use crate::util::objects_only::ObjectsOnly;

/// A call's arguments as the caller holds them.
#[doc(hidden)]
#[derive(Debug, Clone, Copy)]
pub enum RawArguments<'a> {
    /// A JSON value.
    Json(&'a Value),
    /// JSON text.
    Text(&'a str),
}

/// How a typed tool starts a call on the server's fast path: with its arguments read into
/// its arguments type, the whole call (tool, time limit, result) in one boxed future, or
/// run at once for an inline tool; or, when they do not read, the prepared call handed back
/// for the checked path.
#[doc(hidden)]
pub type StartTyped =
    for<'a, 'b> fn(Prepared<'a>, RawArguments<'b>) -> Result<ToolCallFuture<'a>, Prepared<'a>>;

/// How an [inline](AlephTool::INLINE) typed tool that never reads its context runs a call
/// in place, on the server's fast path: `tool` is the tool (as [`TypedArguments::as_any`]
/// gives it), `ctx` the context as the caller gave it. `None` when serde refuses the
/// arguments, for the checked path to say why.
#[doc(hidden)]
pub type RunInline =
    fn(&dyn Any, RawArguments<'_>, &ToolContext) -> Option<Result<ToolOutput, ToolError>>;

/// A tool whose arguments are a serde type. Not public API: the server's fast path.
#[doc(hidden)]
pub trait TypedArguments: Send + Sync {
    /// The schema generated from the arguments type. The server trusts serde only for a
    /// tool whose input schema is this one.
    fn own_schema(&self) -> Arc<Value>;

    /// Whether `args` are an object that deserializes into the arguments type.
    fn accepts(&self, args: &Value) -> bool;

    /// Whether the tool reads its context (see [`AlephTool::READS_CONTEXT`]).
    fn reads_context(&self) -> bool;

    /// How the tool starts a call on the fast path.
    fn starter(&self) -> StartTyped;

    /// How the tool runs a call in place, when it is inline and never reads its context.
    fn inline_runner(&self) -> Option<RunInline>;

    /// The tool, to find its type again.
    fn as_any(&self) -> &dyn Any;
}

impl<T: AlephTool> TypedArguments for T {
    fn own_schema(&self) -> Arc<Value> {
        schema::arguments_schema_for::<T::Args>()
    }

    fn accepts(&self, args: &Value) -> bool {
        parse_value::<T::Args>(args).is_some()
    }

    fn reads_context(&self) -> bool {
        T::READS_CONTEXT
    }

    fn starter(&self) -> StartTyped {
        start::<T>
    }

    fn inline_runner(&self) -> Option<RunInline> {
        (T::INLINE && !T::READS_CONTEXT).then_some(run_in_place::<T>)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// [`StartTyped`] for `T`.
#[expect(
    clippy::result_large_err,
    reason = "a refused call goes back to the checked path as it is, with no allocation"
)]
fn start<'a, T: AlephTool>(
    call: Prepared<'a>,
    args: RawArguments<'_>,
) -> Result<ToolCallFuture<'a>, Prepared<'a>> {
    let parsed = match call.contain(|| parse::<T::Args>(args)) {
        Ok(Some(parsed)) => parsed,
        Ok(None) => return Err(call),
        Err(panicked) => return Ok(ToolCallFuture::ended(call.finish(Err(panicked)))),
    };
    if T::INLINE && call.is_plain() {
        let Some(tool) = call.tool::<T>() else {
            return Ok(ToolCallFuture::ended(call.finish(Err(another_type::<T>()))));
        };
        let outcome = call
            .contain(|| run_inline(tool, parsed, call.context()))
            .and_then(|outcome| outcome);
        return Ok(ToolCallFuture::ended(call.finish(outcome)));
    }
    Ok(ToolCallFuture::running(Box::pin(async move {
        let outcome = match call.tool::<T>() {
            Some(tool) => {
                let ctx = call.context();
                let running = pin!(async move { tool.call(parsed, ctx).await?.into_tool_output() });
                call.drive(running).await
            }
            None => Err(another_type::<T>()),
        };
        call.finish(outcome)
    })))
}

/// [`RunInline`] for `T`.
fn run_in_place<T: AlephTool>(
    tool: &dyn Any,
    args: RawArguments<'_>,
    ctx: &ToolContext,
) -> Option<Result<ToolOutput, ToolError>> {
    let args = parse::<T::Args>(args)?;
    Some(match tool.downcast_ref::<T>() {
        Some(tool) => run_inline(tool, args, ctx),
        None => Err(another_type::<T>()),
    })
}

/// The error of a call whose fast path met a tool that is not a `T`. Never seen: the server
/// takes the fast path from the tool it calls.
fn another_type<T: AlephTool>() -> ToolError {
    ToolError::execution(format!(
        "`{}` could not start: the server's fast path met a tool of another type (a bug in aleph-tools; please report it)",
        T::NAME
    ))
}

/// Runs an [inline](AlephTool::INLINE) tool's call to its end in place: its future is
/// polled once, and one that waits fails the call.
fn run_inline<T: AlephTool>(
    tool: &T,
    args: T::Args,
    ctx: &ToolContext,
) -> Result<ToolOutput, ToolError> {
    let running = pin!(tool.call(args, ctx));
    match running.poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(outcome) => outcome?.into_tool_output(),
        Poll::Pending => Err(ToolError::execution(format!(
            "`{}` says it is inline (`AlephTool::INLINE`) but its call waited; only a tool whose call never waits may say so",
            T::NAME
        ))),
    }
}

// Arguments are named, so the arguments are an object, and so is every struct in them: serde
// alone would read a struct from an array, by position.

fn parse<A: DeserializeOwned>(args: RawArguments<'_>) -> Option<A> {
    match args {
        RawArguments::Json(value) => parse_value(value),
        RawArguments::Text(text) => parse_text(text),
    }
}

fn parse_value<A: DeserializeOwned>(value: &Value) -> Option<A> {
    if !value.is_object() {
        return None;
    }
    A::deserialize(ObjectsOnly(value)).ok()
}

fn parse_text<A: DeserializeOwned>(text: &str) -> Option<A> {
    if !text.trim_start().starts_with('{') {
        return None;
    }
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let args = A::deserialize(ObjectsOnly(&mut deserializer)).ok()?;
    deserializer.end().ok()?;
    Some(args)
}
