//! Progress callbacks: a [`ToolProgressHandler`] hears when each call starts, each chunk a
//! tool streams, each progress report, each log message, and each result. One can be set for the whole
//! process ([`set_tool_progress_handler`]) and one per server.
//!
//! Callbacks run on the calling task, with no lock held.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use arc_swap::ArcSwapOption;

use crate::util::compress::compress_snapshot;
use serde_json::Value;

use crate::context::{LogLevel, ProgressEvent, ToolContext};
use crate::result::ToolResult;

/// How many characters of arguments or result a summary shows.
const SUMMARY_CHARS: usize = 200;

/// Hears about calls as they run, for a UI or a log.
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

struct Handler(Arc<dyn ToolProgressHandler>);

static GLOBAL: ArcSwapOption<Handler> = ArcSwapOption::const_empty();
/// Whether `GLOBAL` may hold a handler: one relaxed load spares every call the swap's load.
static GLOBAL_SET: AtomicBool = AtomicBool::new(false);

/// Sets (or with `None`, clears) the handler that hears about calls on every server in the
/// process. A server's own handler, if it has one, hears about them too.
pub fn set_tool_progress_handler(handler: Option<Arc<dyn ToolProgressHandler>>) {
    let handler = handler.map(|h| Arc::new(Handler(h)));
    GLOBAL_SET.store(handler.is_some(), Ordering::Release);
    GLOBAL.store(handler);
}

/// The handlers one call reports to: the server's and the process's, when set.
pub(super) struct Listeners {
    server: Option<Arc<dyn ToolProgressHandler>>,
    global: Option<Arc<dyn ToolProgressHandler>>,
}

impl Listeners {
    pub(super) fn current(server: Option<&Arc<dyn ToolProgressHandler>>) -> Option<Self> {
        let global = if GLOBAL_SET.load(Ordering::Acquire) {
            GLOBAL.load().as_ref().map(|h| Arc::clone(&h.0))
        } else {
            None
        };
        if server.is_none() && global.is_none() {
            return None;
        }
        Some(Self {
            server: server.cloned(),
            global,
        })
    }

    fn each(&self, f: impl Fn(&dyn ToolProgressHandler)) {
        if let Some(server) = &self.server {
            f(&**server);
        }
        if let Some(global) = &self.global {
            f(&**global);
        }
    }

    /// A call starts; `args` is its arguments as JSON text.
    pub(super) fn start(&self, tool: &str, args: &str) {
        let summary = compress_snapshot(args, SUMMARY_CHARS);
        self.each(|h| h.on_tool_start(tool, &summary));
    }

    pub(super) fn result(&self, tool: &str, result: &ToolResult) {
        let summary = compress_snapshot(&result.model_text(), SUMMARY_CHARS);
        self.each(|h| h.on_tool_result(tool, &summary, result.success));
    }

    /// Routes the tool's progress events to these listeners as well as to the context's own.
    pub(super) fn attach(self: &Arc<Self>, ctx: &mut ToolContext) {
        let listeners = Arc::clone(self);
        ctx.add_progress_listener(move |tool, event| match event {
            ProgressEvent::Chunk { text } => {
                listeners.each(|h| h.on_tool_streaming_chunk(tool, text));
            }
            ProgressEvent::Progress {
                progress,
                total,
                message,
            } => {
                listeners.each(|h| h.on_tool_progress(tool, *progress, *total, message.as_deref()));
            }
            ProgressEvent::Log {
                level,
                logger,
                data,
            } => {
                listeners.each(|h| h.on_tool_log(tool, *level, logger.as_deref(), data));
            }
        });
    }
}
