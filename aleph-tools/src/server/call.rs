//! [`ToolCallRequest`]: one call to a server, with its options, run when awaited; its
//! future, [`ToolCallFuture`]; and the forms a call's arguments come in.

use std::fmt;
use std::future::IntoFuture;
use std::mem;
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
    /// The call ended with this output and nothing more to say (see
    /// [`ToolResult::is_output_only`]). The future keeps the output alone and makes the
    /// result as it gives it: a whole result is more than twice the size, and would be
    /// copied into the future and out again.
    Output(Value),
    /// The call ended with any other result.
    Ended(Box<ToolResult>),
    /// The call runs as this is polled.
    Running(BoxFuture<'s, ToolResult>),
    /// The result was given.
    Taken,
}

impl<'s> ToolCallFuture<'s> {
    /// A call that has ended with `result`.
    #[inline]
    pub(crate) fn ended(result: ToolResult) -> Self {
        Self(if result.is_output_only() {
            Stage::Output(result.output)
        } else {
            Stage::Ended(Box::new(result))
        })
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
        if let Stage::Running(running) = &mut self.0 {
            return running.as_mut().poll(cx);
        }
        Poll::Ready(match mem::replace(&mut self.0, Stage::Taken) {
            Stage::Output(output) => ToolResult::output_only(output),
            Stage::Ended(result) => *result,
            Stage::Running(_) | Stage::Taken => {
                panic!("a ToolCallFuture is not polled after it gave its result")
            }
        })
    }
}

impl fmt::Debug for ToolCallFuture<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let stage = match &self.0 {
            Stage::Output(_) | Stage::Ended(_) => "ended",
            Stage::Taken => "taken",
            Stage::Running(_) => "running",
        };
        f.debug_tuple("ToolCallFuture").field(&stage).finish()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use futures_util::FutureExt;
    use serde_json::json;

    use super::ToolCallFuture;
    use crate::error::ToolError;
    use crate::result::{Content, RepairInfo, RepairStep, ToolOutput, ToolResult};
    use crate::schema::coerce::{Coercion, CoercionKind};

    /// `result` given back by the future of a call that ended with it.
    fn through_future(result: ToolResult) -> ToolResult {
        ToolCallFuture::ended(result)
            .now_or_never()
            .expect("an ended call is ready at once")
    }

    #[test]
    fn an_ended_call_gives_back_its_whole_result() {
        let bare = ToolResult::ok(ToolOutput::json(json!({ "sum": 5 })), Duration::ZERO);
        assert!(bare.is_output_only());
        assert_eq!(through_future(bare.clone()), bare);

        // Each field that says more than the output keeps the whole result.
        let mut said_more = vec![
            ToolResult::ok(ToolOutput::new("five", json!(5)), Duration::ZERO),
            ToolResult::ok(ToolOutput::json(json!(5)), Duration::from_millis(3)),
            ToolResult::err(&ToolError::execution("no"), Duration::ZERO),
        ];
        let mut repaired = bare.clone();
        repaired.repair = Some(Box::new(RepairInfo {
            original_name: "Add".into(),
            repaired_name: "add".into(),
            step: RepairStep::CaseInsensitive,
        }));
        let mut coerced = bare.clone();
        coerced.coercions.push(Coercion {
            pointer: "/a".into(),
            kind: CoercionKind::NumberFromString,
            original: json!("2"),
        });
        let mut with_content = bare.clone();
        with_content.content.push(Content::text("5"));
        let mut failed_quietly = bare.clone();
        failed_quietly.success = false;
        let mut with_error = bare.clone();
        with_error.error = Some("a note".into());
        let mut with_kind = bare;
        with_kind.error_kind = Some(crate::error::ToolErrorKind::Execution);
        said_more.extend([
            repaired,
            coerced,
            with_content,
            failed_quietly,
            with_error,
            with_kind,
        ]);
        for result in said_more {
            assert!(!result.is_output_only(), "{result:?}");
            assert_eq!(through_future(result.clone()), result);
        }
    }

    #[test]
    fn a_future_says_whether_its_result_was_taken() {
        let mut ended =
            ToolCallFuture::ended(ToolResult::ok(ToolOutput::json(json!(1)), Duration::ZERO));
        assert_eq!(format!("{ended:?}"), r#"ToolCallFuture("ended")"#);
        assert!((&mut ended).now_or_never().is_some());
        assert_eq!(format!("{ended:?}"), r#"ToolCallFuture("taken")"#);
        let again =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| (&mut ended).now_or_never()));
        assert!(again.is_err(), "a second poll panics");
    }
}
