//! What `#[tool]`'s expansion names, under `::aleph_tools::__private_{version}`. Not public
//! API: no semver promise covers anything here.

use std::fmt::Display;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use crate::schema::schema_for;

pub use crate::args::fields::{
    ArgsStruct, Argument, DefaultNotShown, DefaultProbe, DefaultShown, FieldDefault, FieldIndex,
    FieldSchemas, FieldValues, args_schema, read_args,
};
pub use crate::context::Caller;
pub use crate::context::{FromToolContext, StateType, ToolContext};
pub use crate::error::ToolError;
pub use crate::registry::ToolRegistration;
pub use crate::tool::{
    AlephTool, Icon, ToolAnnotations, ToolCategory, ToolDefinition, TypedArguments,
};
pub use ::core::future::Future;
pub use ::core::option::Option::{self, None, Some};
pub use ::core::result::Result::{self, Err, Ok};
pub use ::core::time::Duration;
pub use ::std::borrow::Cow;
pub use ::std::string::String;
pub use ::std::sync::Arc as StdArc;
pub use ::std::vec::Vec;
pub use inventory;
pub use schemars;
pub use serde;
pub use serde_json;
pub use serde_json::{Map, Value};

/// The `Ok` type of a `Result`, found through any alias (`anyhow::Result<T>`, `io::Result<T>`).
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a `Result`, but `#[tool]` reads it as one",
    label = "not a `Result`",
    note = "a return type whose name ends in `Result`, or one marked with the `result` key, must be a `Result`; write `#[tool(result = false)]` for a type of your own named `Result`"
)]
pub trait ResultShape {
    /// The success type.
    type Ok;
    /// The error type.
    type Err;
}

impl<T, E> ResultShape for Result<T, E> {
    type Ok = T;
    type Err = E;
}

/// Converts a tool function's error into a [`ToolError`]: a `ToolError` passes through, any
/// other `Display` error becomes [`ToolError::Execution`] with its alternate (`{:#}`) text,
/// which for `anyhow` includes the whole chain of causes.
pub struct ErrorWrap<E>(pub E);

/// Picked first by method resolution, when the error already is a `ToolError`.
pub trait ViaToolError {
    /// See [`ErrorWrap`].
    fn into_tool_error(self) -> ToolError;
}

impl ViaToolError for ErrorWrap<ToolError> {
    fn into_tool_error(self) -> ToolError {
        self.0
    }
}

/// Picked through auto-ref for every other `Display` error.
pub trait ViaDisplay {
    /// See [`ErrorWrap`].
    fn into_tool_error(self) -> ToolError;
}

impl<E: Display> ViaDisplay for &ErrorWrap<E> {
    fn into_tool_error(self) -> ToolError {
        ToolError::Execution(format!("{:#}", self.0))
    }
}

/// Picked last, for an error type that is not `Display`. Such a tool never compiles: the
/// expansion also checks `E: Display` at the return type, and that check is the one error
/// the user sees. This impl only keeps a second, confusing error away.
pub trait ViaNothing {
    /// See [`ErrorWrap`].
    fn into_tool_error(self) -> ToolError;
}

impl<E> ViaNothing for &mut ErrorWrap<E> {
    fn into_tool_error(self) -> ToolError {
        ToolError::Execution(std::any::type_name::<E>().to_owned())
    }
}

/// Finds the output schema of `T` when `T: JsonSchema`, and `None` otherwise.
pub struct OutputSchemaProbe<T: ?Sized>(PhantomData<T>);

impl<T: ?Sized> OutputSchemaProbe<T> {
    /// A probe for `T`.
    #[allow(clippy::new_without_default)]
    pub const fn new() -> Self {
        Self(PhantomData)
    }
}

/// Picked first by method resolution, when the output type has a schema.
pub trait OutputSchemaViaJsonSchema {
    /// See [`OutputSchemaProbe`].
    fn output_schema(&self) -> Option<Arc<Value>>;
}

impl<T: schemars::JsonSchema + ?Sized + 'static> OutputSchemaViaJsonSchema
    for OutputSchemaProbe<T>
{
    fn output_schema(&self) -> Option<Arc<Value>> {
        let schema = schema_for::<T>();
        // `()` and other unit outputs have nothing to describe.
        if schema.get("type").and_then(Value::as_str) == Some("null") {
            None
        } else {
            Some(schema)
        }
    }
}

/// Picked through auto-ref when the output type has no schema.
pub trait OutputSchemaFallback {
    /// See [`OutputSchemaProbe`].
    fn output_schema(&self) -> Option<Arc<Value>>;
}

impl<T: ?Sized> OutputSchemaFallback for &OutputSchemaProbe<T> {
    fn output_schema(&self) -> Option<Arc<Value>> {
        None
    }
}

/// Runs a sync tool's body on Tokio's blocking pool and waits for it without holding an
/// async worker; outside a Tokio runtime the body runs in place. A panic in the body fails
/// the call with [`ToolError::Panicked`]. When the call is dropped (its timeout passed, its
/// caller cancelled it) the body still runs to its end on its thread, and its result is
/// discarded.
///
/// # Errors
///
/// What the body returns, or [`ToolError::Panicked`].
pub async fn run_blocking<T, F>(tool: &'static str, body: F) -> Result<T, ToolError>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T, ToolError> + Send + 'static,
{
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return body();
    };
    match runtime.spawn_blocking(crate::context::carried(body)).await {
        Ok(outcome) => outcome,
        Err(join) => Err(match join.try_into_panic() {
            Ok(payload) => ToolError::Panicked {
                tool: tool.to_owned(),
                message: crate::error::panic_message(&*payload),
            },
            Err(_) => ToolError::cancelled(tool),
        }),
    }
}

/// Names a `#[tool]` expansion uses in error stubs: arguments that accept anything.
#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct NoArgs {}

/// Compile-time check that a tool's error type can be shown to the model.
pub const fn assert_error<E: Display>() {}

#[cfg(test)]
mod tests {
    #[test]
    fn the_module_name_carries_the_crate_version() {
        // `#[tool]` names `__private_{version}`; rename the module in `lib.rs` with the
        // version, or every tool fails to compile.
        assert_eq!(env!("CARGO_PKG_VERSION"), "0.1.0");
        let _ = crate::__private_0_1_0::assert_error::<String>;
    }
}

pin_project_lite::pin_project! {
    /// The future of a `#[tool]` whose async function returns its output as it is: the
    /// function's own future, its output made `Ok`. Written out rather than as an `async`
    /// block, which the compiler would check as a coroutine of its own for every tool.
    pub struct Returns<F> {
        #[pin]
        future: F,
    }
}

impl<F> Returns<F> {
    /// Wraps the function's future.
    pub const fn new(future: F) -> Self {
        Self { future }
    }
}

impl<F: Future> Future for Returns<F> {
    type Output = Result<F::Output, ToolError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.project().future.poll(cx).map(Ok)
    }
}
