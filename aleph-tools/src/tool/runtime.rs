//! [`RuntimeTool`]: a tool defined at run time, from a definition and the [`ToolHandler`] its
//! calls go to. Plugin tools and wrapped MCP tools are runtime tools; so is any tool an
//! application builds from configuration.

use std::fmt;
use std::future::Future;

use serde_json::Value;

use super::{AlephToolDyn, BoxFuture, ToolDefinition};
use crate::context::ToolContext;
use crate::error::ToolError;
use crate::result::ToolOutput;

/// What runs a [`RuntimeTool`]'s calls.
///
/// Any `Fn(Value, ToolContext) -> impl Future<Output = Result<ToolOutput, ToolError>>` is a
/// handler (it receives its own copy of the context); implement the trait for a handler that
/// needs the tool's definition or borrows the context.
pub trait ToolHandler: Send + Sync + 'static {
    /// Runs one call of the tool `definition` describes.
    fn call<'a>(
        &'a self,
        definition: &'a ToolDefinition,
        args: Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>>;
}

impl<F, Fut> ToolHandler for F
where
    F: Fn(Value, ToolContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<ToolOutput, ToolError>> + Send + 'static,
{
    fn call<'a>(
        &'a self,
        _definition: &'a ToolDefinition,
        args: Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(self(args, ctx.clone()))
    }
}

/// A tool known only at run time: its definition (name, description, schema, hints) and the
/// handler that runs it. Serve it like any other tool; the server checks its arguments
/// against the definition's schema before the handler sees them.
///
/// ```
/// use aleph_tools::{AlephToolServer, RuntimeTool, ToolContext, ToolDefinition, ToolError, ToolOutput};
/// use serde_json::{Value, json};
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let definition = ToolDefinition::new(
///     "shout",
///     "Repeat the text in capitals.",
///     json!({ "type": "object", "properties": { "text": { "type": "string" } }, "required": ["text"] }),
/// );
/// let shout = RuntimeTool::new(definition, |args: Value, _ctx: ToolContext| async move {
///     let text = args["text"].as_str().unwrap_or_default().to_uppercase();
///     Ok::<_, ToolError>(ToolOutput::text(text))
/// });
/// let server = AlephToolServer::new();
/// server.add(shout)?;
/// assert_eq!(server.call("shout", json!({ "text": "hi" })).await.output, json!("HI"));
/// # Ok::<(), aleph_tools::RegistryError>(())
/// # }).unwrap();
/// ```
#[derive(Clone)]
pub struct RuntimeTool<H> {
    definition: ToolDefinition,
    handler: H,
}

impl<H: ToolHandler> RuntimeTool<H> {
    /// The tool `definition` describes, run by `handler`.
    pub fn new(definition: ToolDefinition, handler: H) -> Self {
        Self {
            definition,
            handler,
        }
    }

    /// The tool's definition, without the copy [`AlephToolDyn::definition`] makes.
    pub fn definition_ref(&self) -> &ToolDefinition {
        &self.definition
    }

    /// What runs the tool's calls.
    pub fn handler(&self) -> &H {
        &self.handler
    }
}

impl<H> fmt::Debug for RuntimeTool<H> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RuntimeTool")
            .field("name", &self.definition.name)
            .finish_non_exhaustive()
    }
}

impl<H: ToolHandler> AlephToolDyn for RuntimeTool<H> {
    fn name(&self) -> &str {
        &self.definition.name
    }

    fn definition(&self) -> ToolDefinition {
        self.definition.clone()
    }

    fn call<'a>(
        &'a self,
        args: Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        self.handler.call(&self.definition, args, ctx)
    }
}
