//! [`Progress`]: how a running tool reports how far it has come, streams output and logs,
//! and the [`ProgressEvent`]s those reports are.

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{LogLevel, ProgressFn};

/// One progress event from a running tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ProgressEvent {
    /// How far the tool has come.
    Progress {
        /// Work done so far.
        progress: f64,
        /// Total work, when known.
        total: Option<f64>,
        /// What the tool is doing now.
        message: Option<String>,
    },
    /// A piece of output streamed before the result.
    Chunk {
        /// The text of the piece.
        text: String,
    },
    /// A log message: from [`Progress::log`], or a `tracing` event the tool emitted, which
    /// `ToolLogLayer` (feature `tracing-layer`) forwards.
    Log {
        /// How severe it is.
        level: LogLevel,
        /// What logged it: a `tracing` event's target; `None` from [`Progress::log`], which
        /// speaks for the tool.
        logger: Option<String>,
        /// The message: a string, or any JSON.
        data: Value,
    },
}

/// Lets a tool report progress, stream output and log messages while it runs.
///
/// Reporting is free when nobody listens.
#[derive(Clone, Default)]
pub struct Progress {
    pub(super) tool: Option<Arc<str>>,
    pub(super) on_event: Option<Arc<ProgressFn>>,
}

impl fmt::Debug for Progress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Progress")
            .field("tool", &self.tool)
            .field("listening", &self.on_event.is_some())
            .finish()
    }
}

impl Progress {
    /// Reports `progress` out of `total` (when known), with an optional message.
    pub fn report(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        self.emit(|| ProgressEvent::Progress {
            progress,
            total,
            message: message.map(str::to_owned),
        });
    }

    /// Streams a piece of output.
    pub fn chunk(&self, text: impl Into<String>) {
        self.emit(|| ProgressEvent::Chunk { text: text.into() });
    }

    /// Logs a message for whoever follows the call: over MCP, the client that made it (as
    /// `notifications/message`, when `level` is at or above the level the client asked
    /// for); in process, the [`ToolProgressHandler`](crate::middleware::ToolProgressHandler)s. `data`
    /// is a string or any JSON.
    ///
    /// ```
    /// use aleph_tools::{LogLevel, Progress, tool};
    ///
    /// /// Counts the lines of a text.
    /// #[tool]
    /// async fn count_lines(text: String, progress: Progress) -> usize {
    ///     let lines = text.lines().count();
    ///     progress.log(LogLevel::Info, format!("{lines} lines"));
    ///     lines
    /// }
    /// ```
    pub fn log(&self, level: LogLevel, data: impl Into<Value>) {
        self.emit(|| ProgressEvent::Log {
            level,
            logger: None,
            data: data.into(),
        });
    }

    /// A log message from `logger` (a `tracing` target).
    #[cfg(feature = "tracing-layer")]
    pub(crate) fn log_from(&self, level: LogLevel, logger: Option<&str>, data: Value) {
        self.emit(|| ProgressEvent::Log {
            level,
            logger: logger.map(str::to_owned),
            data,
        });
    }

    /// Whether anyone receives the events.
    pub fn is_listening(&self) -> bool {
        self.on_event.is_some()
    }

    fn emit(&self, event: impl FnOnce() -> ProgressEvent) {
        if let Some(on_event) = &self.on_event {
            on_event(self.tool.as_deref().unwrap_or(""), event());
        }
    }
}
