//! [`ToolCallRequest`]: one call to a server, with its options, run when awaited.

use std::fmt;
use std::future::IntoFuture;

use serde_json::Value;

use super::AlephToolServer;
use crate::context::ToolContext;
use crate::result::ToolResult;
use crate::tool::BoxFuture;

/// A call to a tool, made by [`AlephToolServer::call`]; `.await` it to run it.
///
/// Set options before awaiting: [`context`](Self::context) gives the call a context of your
/// making (caller, cancellation, progress, extra state, allowed paths).
///
/// ```
/// use aleph_tools::prelude::*;
/// use serde_json::json;
///
/// /// Say who is calling.
/// #[tool(register = false, callers = [human, code_execution])]
/// fn whoami(ctx: &ToolContext) -> String {
///     format!("{:?}", ctx.caller())
/// }
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let server = AlephToolServer::builder().with_tool(WhoamiTool).build()?;
/// let result = server
///     .call("whoami", json!({}))
///     .context(ToolContext::new().with_caller(Caller::CodeExecution))
///     .await;
/// assert_eq!(result.output, json!("CodeExecution"));
/// # Ok::<(), aleph_tools::RegistryError>(())
/// # }).unwrap();
/// ```
#[must_use = "a call does nothing until it is awaited"]
pub struct ToolCallRequest<'s> {
    server: &'s AlephToolServer,
    name: &'s str,
    args: Value,
    context: Option<ToolContext>,
}

impl<'s> ToolCallRequest<'s> {
    pub(super) fn new(server: &'s AlephToolServer, name: &'s str, args: Value) -> Self {
        Self {
            server,
            name,
            args,
            context: None,
        }
    }

    /// Runs the call with `ctx`. What the context leaves unset (state types, working
    /// directory, allowed paths) comes from the server's settings; the call id and tool name
    /// are the server's to set.
    pub fn context(mut self, ctx: ToolContext) -> Self {
        self.context = Some(ctx);
        self
    }
}

impl fmt::Debug for ToolCallRequest<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolCallRequest")
            .field("name", &self.name)
            .field("args", &self.args)
            .field("context", &self.context)
            .finish_non_exhaustive()
    }
}

impl<'s> IntoFuture for ToolCallRequest<'s> {
    type Output = ToolResult;
    type IntoFuture = BoxFuture<'s, ToolResult>;

    fn into_future(self) -> Self::IntoFuture {
        let Self {
            server,
            name,
            args,
            context,
        } = self;
        Box::pin(server.run(name, args, context))
    }
}
