//! [`ToolCallRequest`]: one call to a server, with its options, run when awaited; its
//! future, [`ToolCallFuture`]; and the forms a call's arguments come in.

use std::fmt;
use std::future::IntoFuture;
use std::pin::Pin;
use std::task::{Context, Poll};

use serde_json::Value;

use super::AlephToolServer;
use crate::args::ARGUMENTS_OBJECT;
use crate::context::ToolContext;
use crate::error::{ArgumentProblem, ToolError};
use crate::provider::parse_arguments_text;
use crate::result::ToolResult;
use crate::tool::BoxFuture;

/// A call's arguments in the form the caller has them. A tool whose arguments are a serde
/// type reads a value in place; the others get one of their own.
#[derive(Debug)]
pub(crate) enum CallArgs<'a> {
    /// A JSON value the call owns.
    Value(Value),
    /// A JSON value the caller keeps (a provider's response).
    Borrowed(&'a Value),
    /// JSON text (a provider's `arguments` string).
    Text(&'a str),
}

impl CallArgs<'_> {
    /// The arguments as a value, for a tool to read in place: text is parsed, when it is
    /// JSON (when it is not, the checked path says so).
    pub(crate) fn parsed(self) -> Self {
        match self {
            Self::Text(text) => parse_arguments_text(text).map_or(self, Self::Value),
            other => other,
        }
    }

    /// The arguments' value, when they are one.
    pub(crate) fn value(&self) -> Option<&Value> {
        match self {
            Self::Value(value) => Some(value),
            Self::Borrowed(value) => Some(value),
            Self::Text(_) => None,
        }
    }

    /// The arguments as a JSON value of their own. Text that is blank means no arguments;
    /// text that is not JSON is an argument error of `tool`.
    pub(crate) fn into_value(self, tool: &str) -> Result<Value, ToolError> {
        match self {
            Self::Value(value) => Ok(value),
            Self::Borrowed(value) => Ok(value.clone()),
            Self::Text(text) => parse_arguments_text(text).map_err(|received| {
                ToolError::invalid_args(
                    tool,
                    vec![ArgumentProblem::new("", ARGUMENTS_OBJECT).received(received)],
                )
            }),
        }
    }
}

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
    args: CallArgs<'s>,
    /// Boxed: most calls have none, and the request is moved on its way to running.
    context: Option<Box<ToolContext>>,
}

impl<'s> ToolCallRequest<'s> {
    #[inline]
    pub(super) fn new(server: &'s AlephToolServer, name: &'s str, args: CallArgs<'s>) -> Self {
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
        self.context = Some(Box::new(ctx));
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
    type IntoFuture = ToolCallFuture<'s>;

    #[inline]
    fn into_future(self) -> Self::IntoFuture {
        let Self {
            server,
            name,
            args,
            context,
        } = self;
        server.run(name, args, context.map(|ctx| *ctx))
    }
}

/// The future of a call, made when a [`ToolCallRequest`] is awaited.
///
/// A call that can end without waiting ends as its future is made (`.await` makes it just
/// before polling it), and the future holds only its result: a call refused before its tool
/// runs, and a call of an [`inline`](crate::AlephTool::INLINE) tool with no time limit (and,
/// when the tool reads its context, no cancellation token or progress listener). Such a call
/// takes microseconds and is not timed (its `duration_ms` is 0). Any other call runs as the
/// future is polled, timed from the moment it is sent to run.
#[must_use = "futures do nothing unless polled"]
pub struct ToolCallFuture<'s>(Stage<'s>);

enum Stage<'s> {
    /// The call ended; its result until it is polled out.
    Ended(Option<ToolResult>),
    /// The call runs as this is polled.
    Running(BoxFuture<'s, ToolResult>),
}

impl<'s> ToolCallFuture<'s> {
    /// A call that has ended with `result`.
    pub(crate) fn ended(result: ToolResult) -> Self {
        Self(Stage::Ended(Some(result)))
    }

    /// A call that runs as `running` is polled.
    pub(crate) fn running(running: BoxFuture<'s, ToolResult>) -> Self {
        Self(Stage::Running(running))
    }
}

impl Future for ToolCallFuture<'_> {
    type Output = ToolResult;

    /// # Panics
    ///
    /// When polled again after it gave its result.
    #[inline]
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<ToolResult> {
        match &mut self.0 {
            Stage::Ended(result) => Poll::Ready(
                result
                    .take()
                    .expect("a ToolCallFuture is not polled after it gave its result"),
            ),
            Stage::Running(running) => running.as_mut().poll(cx),
        }
    }
}

impl fmt::Debug for ToolCallFuture<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let stage = match &self.0 {
            Stage::Ended(Some(_)) => "ended",
            Stage::Ended(None) => "taken",
            Stage::Running(_) => "running",
        };
        f.debug_tuple("ToolCallFuture").field(&stage).finish()
    }
}
