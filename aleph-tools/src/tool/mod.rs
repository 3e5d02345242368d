//! The tool traits: [`AlephTool`] (typed, what `#[tool]` implements) and [`AlephToolDyn`]
//! (JSON in, JSON out, object-safe), bridged by a blanket impl.

mod definition;
mod runtime;
mod typed;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

pub use self::definition::{Icon, IconTheme, ToolAnnotations, ToolCategory, ToolDefinition};
pub use self::runtime::{RuntimeTool, ToolHandler};
pub use self::typed::{RawArguments, RunInline, TypedArguments};
pub(crate) use self::typed::{another_type, parse, run_inline};
use crate::context::{Caller, StateType, ToolContext};
use crate::error::ToolError;
use crate::result::{IntoToolOutput, ToolOutput};
use crate::{args, schema};

pub use crate::util::BoxFuture;

/// A tool with typed arguments and output.
///
/// `#[tool]` writes this impl for you. Write it by hand when a tool needs state of its own or
/// a name chosen at run time is not needed; for tools known only at run time, implement
/// [`AlephToolDyn`].
///
/// ```
/// use aleph_tools::{AlephTool, ToolContext, ToolError};
/// use serde::Deserialize;
///
/// #[derive(Deserialize, schemars::JsonSchema)]
/// struct AddArgs {
///     /// First addend
///     a: i64,
///     /// Second addend
///     b: i64,
/// }
///
/// struct Add;
///
/// impl AlephTool for Add {
///     const NAME: &'static str = "add";
///     const DESCRIPTION: &'static str = "Add two integers.";
///     type Args = AddArgs;
///     type Output = i64;
///
///     async fn call(&self, args: AddArgs, _ctx: &ToolContext) -> Result<i64, ToolError> {
///         args.a.checked_add(args.b).ok_or_else(|| ToolError::execution("the sum overflows i64"))
///     }
/// }
///
/// let definition = Add.definition();
/// assert_eq!(definition.name, "add");
/// assert_eq!(definition.parameters["required"], serde_json::json!(["a", "b"]));
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a tool",
    label = "expected a tool here",
    note = "put `#[tool]` on a function and pass the type it generates (`fn web_search` → `WebSearchTool`), or implement `aleph_tools::AlephTool`"
)]
pub trait AlephTool: Send + Sync + 'static {
    /// The name the model calls the tool by; must match `^[a-zA-Z0-9_-]{1,64}$`.
    const NAME: &'static str;

    /// What the tool does, written for the model.
    const DESCRIPTION: &'static str;

    /// The arguments; their JSON Schema is what the model sees. Must be a struct (the schema
    /// root is an object).
    type Args: DeserializeOwned + JsonSchema + Send + 'static;

    /// What a successful call returns: any `Serialize` type, or [`ToolOutput`].
    type Output: IntoToolOutput + Send;

    /// Whether [`call`](Self::call) reads its context. A tool that does not is given the
    /// caller's context as it came, without the call's id, its own name, the server and the
    /// server's state; a call costs less that way. `#[tool]` sets this to `false` for a
    /// function with no injected parameter (`&ToolContext`, `State<T>`, `Progress`,
    /// `CancellationToken` or another `FromToolContext` type); a hand-written tool may do the
    /// same when it never looks at its `ctx`.
    const READS_CONTEXT: bool = true;

    /// Whether [`call`](Self::call)'s future is ready the first time it is polled: the tool
    /// never waits. A call of such a tool with no time limit, cancellation token or progress
    /// listener runs as its future is made, with nothing allocated for it. `#[tool(inline)]`
    /// sets this for the sync function it runs in place; a hand-written tool whose call
    /// waits must leave it `false`, or its calls fail saying so.
    const INLINE: bool = false;

    /// Where the tool comes from.
    fn category(&self) -> ToolCategory {
        ToolCategory::Builtin
    }

    /// A name for people ("Web search"), shown by clients instead of the tool's name.
    fn title(&self) -> Option<String> {
        None
    }

    /// Images that stand for the tool in a client's interface.
    fn icons(&self) -> Vec<Icon> {
        Vec::new()
    }

    /// Data for clients beside the protocol's own fields, served as MCP's `_meta`.
    fn meta(&self) -> Option<Map<String, Value>> {
        None
    }

    /// Whether a person must approve each call.
    fn requires_confirmation(&self) -> bool {
        false
    }

    /// Example calls, for few-shot prompting.
    fn examples(&self) -> Vec<String> {
        Vec::new()
    }

    /// Behaviour hints.
    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations::NONE
    }

    /// Who may call the tool; empty means the default, [`Caller::Human`] only.
    fn allowed_callers(&self) -> Vec<Caller> {
        Vec::new()
    }

    /// Free labels for listing and filtering.
    fn tags(&self) -> Vec<String> {
        Vec::new()
    }

    /// How long one call may run; `None` leaves it to the server.
    fn timeout(&self) -> Option<Duration> {
        None
    }

    /// Whether the arguments must follow the schema exactly.
    fn strict(&self) -> bool {
        false
    }

    /// Whether a call may run as a task: an MCP client that supports tasks gets a handle at
    /// once and asks for the result later (see [`ToolDefinition::task`]).
    fn task(&self) -> bool {
        false
    }

    /// Whether the tool stays out of the tools array until a search finds it (see
    /// [`ToolDefinition::defer_loading`]).
    fn defer_loading(&self) -> bool {
        false
    }

    /// JSON Schema of [`Self::Args`], generated once per process.
    fn input_schema() -> Arc<Value> {
        schema::arguments_schema_for::<Self::Args>()
    }

    /// JSON Schema of [`Self::Output`], when it has one. `#[tool]` fills this in whenever the
    /// output type implements `JsonSchema`.
    fn output_schema() -> Option<Arc<Value>> {
        None
    }

    /// The state types the tool needs from the server (its `State<T>` parameters, as
    /// `#[tool]` lists them), checked by [`ToolServerBuilder::build`](crate::ToolServerBuilder::build).
    fn required_state() -> Vec<StateType> {
        Vec::new()
    }

    /// The full definition, assembled from the items above.
    fn definition(&self) -> ToolDefinition {
        ToolDefinition {
            name: Self::NAME.to_owned(),
            description: Self::DESCRIPTION.to_owned(),
            title: self.title(),
            icons: self.icons(),
            meta: self.meta(),
            parameters: Value::clone(&Self::input_schema()),
            output_schema: Self::output_schema().map(|s| Value::clone(&s)),
            category: self.category(),
            annotations: self.annotations(),
            requires_confirmation: self.requires_confirmation(),
            examples: self.examples(),
            tags: self.tags(),
            allowed_callers: self.allowed_callers(),
            timeout: self.timeout(),
            strict: self.strict(),
            task: self.task(),
            output_limit: None,
            defer_loading: self.defer_loading(),
        }
    }

    /// Runs the tool with typed arguments.
    fn call(
        &self,
        args: Self::Args,
        ctx: &ToolContext,
    ) -> impl Future<Output = Result<Self::Output, ToolError>> + Send;

    /// Runs the tool with JSON arguments: deserializes them (an error names the argument by
    /// JSON pointer), calls [`call`](Self::call) and converts the output.
    fn call_json(
        &self,
        args: Value,
        ctx: &ToolContext,
    ) -> impl Future<Output = Result<ToolOutput, ToolError>> + Send {
        async move {
            let args = args::parse_args::<Self::Args>(Self::NAME, args)?;
            self.call(args, ctx).await?.into_tool_output()
        }
    }
}

/// A tool called with JSON, for tools known only at run time (plugins, MCP servers) and for
/// mixing every kind of tool in one collection.
///
/// Every [`AlephTool`] is an `AlephToolDyn` through a blanket impl.
pub trait AlephToolDyn: Send + Sync + 'static {
    /// The name the model calls the tool by.
    fn name(&self) -> &str;

    /// The full definition. The server asks once, when the tool is added.
    fn definition(&self) -> ToolDefinition;

    /// Runs the tool.
    fn call<'a>(
        &'a self,
        args: Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>>;

    /// Checks arguments without running the tool. The server calls it before asking for
    /// confirmation, so nobody approves a call that would fail on its arguments. The default
    /// accepts everything and leaves the check to [`call`](Self::call).
    ///
    /// # Errors
    ///
    /// [`ToolError::InvalidArgs`] naming the argument that is wrong.
    fn validate(&self, args: &Value) -> Result<(), ToolError> {
        let _ = args;
        Ok(())
    }

    /// The state types the tool needs from the server; see [`AlephTool::required_state`].
    fn required_state(&self) -> Vec<StateType> {
        Vec::new()
    }

    /// The tool as one whose arguments are a serde type, for the server's fast path. Every
    /// [`AlephTool`] is one; other tools leave this as `None`.
    #[doc(hidden)]
    fn typed_arguments(&self) -> Option<&dyn TypedArguments> {
        None
    }
}

impl<T: AlephTool> AlephToolDyn for T {
    fn name(&self) -> &str {
        T::NAME
    }

    fn definition(&self) -> ToolDefinition {
        AlephTool::definition(self)
    }

    fn call<'a>(
        &'a self,
        args: Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(self.call_json(args, ctx))
    }

    fn validate(&self, args: &Value) -> Result<(), ToolError> {
        args::parse_args::<T::Args>(T::NAME, args.clone()).map(drop)
    }

    fn required_state(&self) -> Vec<StateType> {
        T::required_state()
    }

    fn typed_arguments(&self) -> Option<&dyn TypedArguments> {
        Some(self)
    }
}

impl<T: AlephToolDyn + ?Sized> AlephToolDyn for Arc<T> {
    fn name(&self) -> &str {
        (**self).name()
    }

    fn definition(&self) -> ToolDefinition {
        (**self).definition()
    }

    fn call<'a>(
        &'a self,
        args: Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        (**self).call(args, ctx)
    }

    fn validate(&self, args: &Value) -> Result<(), ToolError> {
        (**self).validate(args)
    }

    fn required_state(&self) -> Vec<StateType> {
        (**self).required_state()
    }

    fn typed_arguments(&self) -> Option<&dyn TypedArguments> {
        (**self).typed_arguments()
    }
}
