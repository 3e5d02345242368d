//! The metrics layer: every call counted, timed and watched while it runs, per tool, through
//! the `metrics` facade.

use std::sync::Arc;
use std::time::Instant;

use super::{Middleware, Next, ToolCall};
use crate::error::ToolError;
use crate::result::ToolOutput;

/// Counter: calls finished, by `tool` and `result` (`ok`, or the error's kind in snake case:
/// `invalid_args`, `execution`, `timeout`, `cancelled`, …).
pub const CALLS: &str = "aleph_tools_tool_calls_total";
/// Histogram: how long calls took, in seconds, by `tool`.
pub const CALL_DURATION: &str = "aleph_tools_tool_call_duration_seconds";
/// Gauge: calls running now, by `tool`.
pub const CALLS_RUNNING: &str = "aleph_tools_tool_calls_running";

/// Middleware that records every call with the [`metrics`](https://docs.rs/metrics) facade
/// (feature `metrics`): [`CALLS`] counts them by tool and result, [`CALL_DURATION`] times
/// them, [`CALLS_RUNNING`] says how many run now.
///
/// It records into whatever recorder the application installed (a Prometheus exporter,
/// `StatsD`, OpenTelemetry); without one it records nothing. The `tool` label only ever holds
/// names of tools the server has, since calls to unknown tools and calls the server's own
/// checks refuse never reach middleware. Add it first to time the other layers as well.
///
/// ```
/// use aleph_tools::AlephToolServer;
/// use aleph_tools::middleware::Metrics;
///
/// let server = AlephToolServer::builder()
///     .with_middleware(Metrics::new())
///     .build()
///     .unwrap();
/// # drop(server);
/// ```
#[derive(Debug, Clone)]
pub struct Metrics {
    _private: (),
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// The metrics layer. Describes its metrics (units and help text) to the recorder
    /// installed now, so install the recorder first.
    pub fn new() -> Self {
        metrics::describe_counter!(CALLS, "Tool calls finished, by tool and result.");
        metrics::describe_histogram!(
            CALL_DURATION,
            metrics::Unit::Seconds,
            "How long tool calls took, by tool."
        );
        metrics::describe_gauge!(CALLS_RUNNING, "Tool calls running now, by tool.");
        Self { _private: () }
    }
}

impl Middleware for Metrics {
    async fn handle(&self, call: ToolCall, next: Next) -> Result<ToolOutput, ToolError> {
        let mut recording = Recording::start(Arc::clone(call.shared_name()));
        let outcome = next.run(call).await;
        recording.finish(match &outcome {
            Ok(_) => "ok",
            Err(error) => kind_label(error),
        });
        outcome
    }
}

/// One call being recorded. A call whose future is dropped before it ends (its caller
/// cancelled it, or gave up waiting) is recorded as `cancelled` when the guard goes.
struct Recording {
    tool: Arc<str>,
    started: Instant,
    running: metrics::Gauge,
    finished: bool,
}

impl Recording {
    fn start(tool: Arc<str>) -> Self {
        let running = metrics::gauge!(CALLS_RUNNING, "tool" => Arc::clone(&tool));
        running.increment(1);
        Self {
            tool,
            started: Instant::now(),
            running,
            finished: false,
        }
    }

    fn finish(&mut self, result: &'static str) {
        self.finished = true;
        metrics::histogram!(CALL_DURATION, "tool" => Arc::clone(&self.tool))
            .record(self.started.elapsed().as_secs_f64());
        metrics::counter!(CALLS, "tool" => Arc::clone(&self.tool), "result" => result).increment(1);
    }
}

impl Drop for Recording {
    fn drop(&mut self) {
        self.running.decrement(1);
        if !self.finished {
            self.finish("cancelled");
        }
    }
}

/// The error's kind as its serde name, a fixed set of labels.
fn kind_label(error: &ToolError) -> &'static str {
    use crate::ToolErrorKind as Kind;
    match error.kind() {
        Kind::NotFound => "not_found",
        Kind::InvalidArgs => "invalid_args",
        Kind::Execution => "execution",
        Kind::PermissionDenied => "permission_denied",
        Kind::Timeout => "timeout",
        Kind::Panicked => "panicked",
        Kind::Cancelled => "cancelled",
        Kind::RateLimited => "rate_limited",
        Kind::MissingState => "missing_state",
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::kind_label;
    use crate::ToolError;

    #[test]
    fn every_kind_is_labelled_with_its_serde_name() {
        let tool = || "t".to_owned();
        let errors = [
            ToolError::NotFound {
                name: tool(),
                suggestions: Vec::new(),
            },
            ToolError::invalid_args("t", []),
            ToolError::execution("x"),
            ToolError::permission_denied("t", "x"),
            ToolError::Timeout {
                tool: tool(),
                after: Duration::from_secs(1),
            },
            ToolError::Panicked {
                tool: tool(),
                message: "x".into(),
            },
            ToolError::cancelled("t"),
            ToolError::RateLimited {
                tool: tool(),
                limit: "x".into(),
                retry_after: None,
            },
            ToolError::MissingState {
                tool: tool(),
                type_name: "T",
            },
        ];
        for error in errors {
            let name = serde_json::to_value(error.kind()).unwrap();
            assert_eq!(name, kind_label(&error), "{error}");
        }
    }
}
