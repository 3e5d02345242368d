//! What the server may do with a tool that deserializes its own arguments with serde (every
//! [`AlephTool`]): try serde first and check against the schema only when serde refuses,
//! and read JSON text straight into the arguments type.

use std::any::Any;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use serde::de::DeserializeOwned;
use serde_json::Value;

use super::{AlephTool, BoxFuture};
use crate::context::ToolContext;
use crate::error::ToolError;
use crate::result::{IntoToolOutput, ToolOutput};
use crate::schema;
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

    /// `args` read into the arguments type, when they are an object serde takes whole.
    fn decode(&self, args: &Value) -> Option<Box<dyn Any + Send>>;

    /// Runs the tool on arguments [`decode`](Self::decode) read.
    fn call_decoded<'a>(
        &'a self,
        args: Box<dyn Any + Send>,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>>;

    /// Whether the tool reads its context (see [`AlephTool::READS_CONTEXT`]).
    fn reads_context(&self) -> bool;

    /// How the tool runs a call in place, when it is inline and never reads its context.
    fn inline_runner(&self) -> Option<RunInline>;

    /// The tool, to find its type again.
    fn as_any(&self) -> &dyn Any;
}

impl<T: AlephTool> TypedArguments for T {
    fn own_schema(&self) -> Arc<Value> {
        schema::arguments_schema_for::<T::Args>()
    }

    fn decode(&self, args: &Value) -> Option<Box<dyn Any + Send>> {
        parse_value::<T::Args>(args).map(|args| Box::new(args) as Box<dyn Any + Send>)
    }

    fn call_decoded<'a>(
        &'a self,
        args: Box<dyn Any + Send>,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        match args.downcast::<T::Args>() {
            Ok(args) => Box::pin(async move { self.call(*args, ctx).await?.into_tool_output() }),
            Err(_) => Box::pin(std::future::ready(Err(another_type::<T>()))),
        }
    }

    fn reads_context(&self) -> bool {
        T::READS_CONTEXT
    }

    fn inline_runner(&self) -> Option<RunInline> {
        (T::INLINE && !T::READS_CONTEXT).then_some(run_in_place::<T>)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
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
pub(crate) fn another_type<T: AlephTool>() -> ToolError {
    ToolError::execution(format!(
        "`{}` could not start: the server's fast path met a tool of another type (a bug in aleph-tools; please report it)",
        T::NAME
    ))
}

/// Runs an [inline](AlephTool::INLINE) tool's call to its end in place: its future is
/// polled once, and one that waits fails the call.
pub(crate) fn run_inline<T: AlephTool>(
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

/// `args` read into `A`, when they are an object serde takes whole.
pub(crate) fn parse<A: DeserializeOwned>(args: RawArguments<'_>) -> Option<A> {
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
