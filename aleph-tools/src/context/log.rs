//! Log messages from a running tool: their levels, and where the call whose tool future is
//! being polled is kept for [`ToolLogLayer`](crate::ToolLogLayer) (feature `tracing-layer`),
//! which turns the `tracing` events a tool emits into the same messages as
//! [`Progress::log`](super::Progress::log).

use std::fmt;
use std::future::Future;

use serde::{Deserialize, Serialize};

use super::Progress;

/// How severe a log message is: the eight syslog levels MCP uses, least severe first, so
/// that `level >= LogLevel::Warning` picks warnings and worse.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogLevel {
    /// Detail for debugging.
    Debug,
    /// What the tool is doing.
    Info,
    /// Normal but worth noticing.
    Notice,
    /// Something may be wrong.
    Warning,
    /// Something failed.
    Error,
    /// A part of the system failed.
    Critical,
    /// Someone must act now.
    Alert,
    /// The system is unusable.
    Emergency,
}

impl LogLevel {
    /// The level's name as MCP writes it (`"warning"`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Debug => "debug",
            Self::Info => "info",
            Self::Notice => "notice",
            Self::Warning => "warning",
            Self::Error => "error",
            Self::Critical => "critical",
            Self::Alert => "alert",
            Self::Emergency => "emergency",
        }
    }
}

impl fmt::Display for LogLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl From<tracing::Level> for LogLevel {
    /// `TRACE` and `DEBUG` are [`Debug`](Self::Debug), `WARN` is [`Warning`](Self::Warning).
    fn from(level: tracing::Level) -> Self {
        match level {
            tracing::Level::TRACE | tracing::Level::DEBUG => Self::Debug,
            tracing::Level::INFO => Self::Info,
            tracing::Level::WARN => Self::Warning,
            tracing::Level::ERROR => Self::Error,
        }
    }
}

#[cfg(feature = "tracing-layer")]
tokio::task_local! {
    /// The progress reporter of the call whose tool future is being polled, set only when
    /// someone listens to it.
    pub(super) static RUNNING_CALL: Progress;
}

/// Runs a tool's future so that [`ToolLogLayer`](crate::ToolLogLayer) finds its reporter.
#[cfg(feature = "tracing-layer")]
pub(crate) async fn within_call<F: Future>(progress: Progress, future: F) -> F::Output {
    RUNNING_CALL.scope(progress, future).await
}

/// Runs a tool's future: without the layer, nothing reads which call is running.
#[cfg(not(feature = "tracing-layer"))]
pub(crate) async fn within_call<F: Future>(_progress: Progress, future: F) -> F::Output {
    future.await
}

/// `body`, run now as part of the call `progress` reports for, so that
/// [`ToolLogLayer`](crate::ToolLogLayer) finds its reporter.
#[cfg(feature = "tracing-layer")]
pub(crate) fn in_call<R>(progress: Progress, body: impl FnOnce() -> R) -> R {
    RUNNING_CALL.sync_scope(progress, body)
}

/// `body`, run now: without the layer, nothing reads which call is running.
#[cfg(not(feature = "tracing-layer"))]
pub(crate) fn in_call<R>(_progress: Progress, body: impl FnOnce() -> R) -> R {
    body()
}

/// `body`, made to run as part of the current call wherever it runs: a sync tool's body on
/// the blocking pool logs as its call does.
#[cfg(feature = "tracing-layer")]
pub(crate) fn carried<R>(body: impl FnOnce() -> R) -> impl FnOnce() -> R {
    let progress = RUNNING_CALL.try_with(Progress::clone).ok();
    move || match progress {
        Some(progress) => RUNNING_CALL.sync_scope(progress, body),
        None => body(),
    }
}

/// `body` as it is: without the layer, nothing reads which call is running.
#[cfg(not(feature = "tracing-layer"))]
pub(crate) fn carried<R>(body: impl FnOnce() -> R) -> impl FnOnce() -> R {
    body
}
