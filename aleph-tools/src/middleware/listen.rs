//! [`Listen`]: the layer that tells a [`ToolProgressHandler`] about each call as it runs:
//! when it starts, each chunk a tool streams, each progress report, each log message, and
//! its result. Callbacks run on the calling task, with no lock held.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use serde_json::Value;

use super::{Middleware, Next, ToolCall};
use crate::context::{LogLevel, ProgressEvent};
use crate::error::ToolError;
use crate::result::ToolOutput;
use crate::util::compress::compress_snapshot;

/// How many characters of arguments or result a summary shows.
const SUMMARY_CHARS: usize = 200;

/// Hears about calls as they run, for a UI or a log. Give it to a server as a layer with
/// [`Listen`].
///
/// Every method has an empty default; implement the ones you need.
pub trait ToolProgressHandler: Send + Sync + 'static {
    /// A call is about to run; `args_summary` is its arguments as compact JSON, shortened.
    fn on_tool_start(&self, tool_name: &str, args_summary: &str) {
        let _ = (tool_name, args_summary);
    }

    /// A call finished; `result_summary` is what the model reads, shortened.
    fn on_tool_result(&self, tool_name: &str, result_summary: &str, success: bool) {
        let _ = (tool_name, result_summary, success);
    }

    /// A running tool streamed a piece of output.
    fn on_tool_streaming_chunk(&self, tool_name: &str, chunk: &str) {
        let _ = (tool_name, chunk);
    }

    /// A running tool reported how far it has come.
    fn on_tool_progress(
        &self,
        tool_name: &str,
        progress: f64,
        total: Option<f64>,
        message: Option<&str>,
    ) {
        let _ = (tool_name, progress, total, message);
    }

    /// A running tool logged a message (with [`Progress::log`](crate::Progress::log), or
    /// through `tracing` with `ToolLogLayer` (feature `tracing-layer`) installed).
    fn on_tool_log(&self, tool_name: &str, level: LogLevel, logger: Option<&str>, data: &Value) {
        let _ = (tool_name, level, logger, data);
    }
}

impl<T: ToolProgressHandler + ?Sized> ToolProgressHandler for Arc<T> {
    fn on_tool_start(&self, tool_name: &str, args_summary: &str) {
        (**self).on_tool_start(tool_name, args_summary);
    }

    fn on_tool_result(&self, tool_name: &str, result_summary: &str, success: bool) {
        (**self).on_tool_result(tool_name, result_summary, success);
    }

    fn on_tool_streaming_chunk(&self, tool_name: &str, chunk: &str) {
        (**self).on_tool_streaming_chunk(tool_name, chunk);
    }

    fn on_tool_progress(
        &self,
        tool_name: &str,
        progress: f64,
        total: Option<f64>,
        message: Option<&str>,
    ) {
        (**self).on_tool_progress(tool_name, progress, total, message);
    }

    fn on_tool_log(&self, tool_name: &str, level: LogLevel, logger: Option<&str>, data: &Value) {
        (**self).on_tool_log(tool_name, level, logger, data);
    }
}

/// A layer that tells a [`ToolProgressHandler`] about every call it sees: its start, the
/// chunks, progress reports and log messages of the running tool, and its result. Placed
/// first, it hears every call the server admits, including those whose arguments the
/// server then refuses.
///
/// ```
/// use std::sync::Arc;
///
/// use aleph_tools::AlephToolServer;
/// use aleph_tools::middleware::{Listen, ToolProgressHandler};
///
/// struct Printer;
///
/// impl ToolProgressHandler for Printer {
///     fn on_tool_start(&self, tool_name: &str, args_summary: &str) {
///         println!("{tool_name}({args_summary})");
///     }
/// }
///
/// let server = AlephToolServer::builder()
///     .with_middleware(Listen::new(Printer))
///     .build()
///     .unwrap();
/// # drop(server);
/// ```
#[derive(Clone)]
pub struct Listen {
    handler: Arc<dyn ToolProgressHandler>,
}

impl Listen {
    /// A layer that reports to `handler`.
    pub fn new(handler: impl ToolProgressHandler) -> Self {
        Self {
            handler: Arc::new(handler),
        }
    }
}

impl fmt::Debug for Listen {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Listen").finish_non_exhaustive()
    }
}

impl Middleware for Listen {
    async fn handle(&self, mut call: ToolCall, next: Next) -> Result<ToolOutput, ToolError> {
        let tool = Arc::clone(call.shared_name());
        let arguments = compress_snapshot(&call.arguments().to_string(), SUMMARY_CHARS);
        self.handler.on_tool_start(&tool, &arguments);
        let handler = Arc::clone(&self.handler);
        call.context_mut()
            .add_progress_listener(move |tool, event| tell(&*handler, tool, event));
        let outcome = next.run(call).await;
        let text = match &outcome {
            Ok(output) => output.model_text(),
            Err(err) => Cow::Owned(err.to_string()),
        };
        let summary = compress_snapshot(&text, SUMMARY_CHARS);
        self.handler
            .on_tool_result(&tool, &summary, outcome.is_ok());
        outcome
    }
}

/// Hands one event of a running tool to `handler`.
fn tell(handler: &dyn ToolProgressHandler, tool: &str, event: &ProgressEvent) {
    match event {
        ProgressEvent::Chunk { text } => handler.on_tool_streaming_chunk(tool, text),
        ProgressEvent::Progress {
            progress,
            total,
            message,
        } => handler.on_tool_progress(tool, *progress, *total, message.as_deref()),
        ProgressEvent::Log {
            level,
            logger,
            data,
        } => handler.on_tool_log(tool, *level, logger.as_deref(), data),
    }
}
