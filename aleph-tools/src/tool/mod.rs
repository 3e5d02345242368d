//! The tool traits: [`AlephTool`] (typed, what `#[tool]` implements) and [`AlephToolDyn`]
//! (JSON in, JSON out, object-safe), bridged by a blanket impl.

mod definition;
mod runtime;
mod typed;

use std::future::Future;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

pub use self::definition::{Icon, IconTheme, ToolAnnotations, ToolCategory, ToolDefinition};
pub use self::runtime::{RuntimeTool, ToolHandler};
use self::typed::run;
pub use self::typed::{RunInline, TypedArguments};
use crate::context::{StateType, ToolContext};
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
    /// never waits, and ends within microseconds. A call of such a tool with no time limit
    /// (and, when it [reads its context](Self::READS_CONTEXT), no cancellation token or
    /// progress listener) runs as its future is made, with nothing allocated for it, and is
    /// not timed: its [`duration_ms`](crate::ToolResult::duration_ms) is 0 (debug builds log
    /// a warning when such a call takes a millisecond or more). `#[tool(inline)]` sets this
    /// for the sync function it runs in place; a hand-written tool whose call waits must leave
    /// it `false`, or its calls fail saying so.
    const INLINE: bool = false;

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

    /// Everything a model and a server are told about the tool: by default its name,
    /// description and schemas ([`ToolDefinition::of`]). A tool that says more (a title,
    /// tags, hints, a time limit) overrides this and adds to that definition; `#[tool]` does
    /// so for the keys it is given.
    ///
    /// ```
    /// # use aleph_tools::{AlephTool, ToolAnnotations, ToolContext, ToolDefinition, ToolError};
    /// # #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// # struct NoArgs {}
    /// struct Uptime;
    ///
    /// impl AlephTool for Uptime {
    ///     const NAME: &'static str = "uptime";
    ///     const DESCRIPTION: &'static str = "How long the host has been up.";
    ///     type Args = NoArgs;
    ///     type Output = u64;
    ///
    ///     fn definition(&self) -> ToolDefinition {
    ///         ToolDefinition::of::<Self>()
    ///             .with_title("Uptime")
    ///             .with_annotations(ToolAnnotations::NONE.read_only(true))
    ///     }
    ///
    ///     async fn call(&self, _args: NoArgs, _ctx: &ToolContext) -> Result<u64, ToolError> {
    ///         Ok(42)
    ///     }
    /// }
    ///
    /// assert_eq!(Uptime.definition().title.as_deref(), Some("Uptime"));
    /// ```
    fn definition(&self) -> ToolDefinition {
        ToolDefinition::of::<Self>()
    }

    /// Runs the tool with typed arguments.
    fn call(
        &self,
        args: Self::Args,
        ctx: &ToolContext,
    ) -> impl Future<Output = Result<Self::Output, ToolError>> + Send;
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

    /// Runs the tool on JSON arguments, and nothing else: no filter, layer, argument
    /// check, time limit or panic guard. Serve the tool to have calls go through them.
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

    /// Whether this value holds no resource (its type has no size and nothing to drop), so
    /// the server may keep it past its removal at no cost. A wrapper answers for itself,
    /// whatever it wraps: the default, `false`, is always safe.
    #[doc(hidden)]
    fn holds_nothing(&self) -> bool {
        false
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
        match args::parse_args::<T::Args>(T::NAME, &args) {
            Ok(args) => Box::pin(run(self, args, ctx)),
            Err(err) => Box::pin(std::future::ready(Err(err))),
        }
    }

    fn validate(&self, args: &Value) -> Result<(), ToolError> {
        // A match, not `.map(drop)`: that would compile two more functions for every tool.
        match args::parse_args::<T::Args>(T::NAME, args) {
            Ok(_) => Ok(()),
            Err(err) => Err(err),
        }
    }

    fn required_state(&self) -> Vec<StateType> {
        T::required_state()
    }

    fn typed_arguments(&self) -> Option<&dyn TypedArguments> {
        Some(self)
    }

    fn holds_nothing(&self) -> bool {
        size_of::<T>() == 0 && !std::mem::needs_drop::<T>()
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

    fn holds_nothing(&self) -> bool {
        (**self).holds_nothing()
    }
}
