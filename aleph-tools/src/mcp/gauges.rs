//! What the MCP server reports through the `metrics` facade (feature `metrics`): sessions
//! and tasks held. Each change is added to or taken from the gauge, so that several servers
//! in one process sum up.

/// Gauge: streamable HTTP sessions held, awake or asleep.
#[cfg(feature = "metrics")]
pub const MCP_SESSIONS: &str = "aleph_tools_mcp_sessions";
/// Gauge: MCP tasks kept, running or finished (an expired task is forgotten, and counted
/// out, at the next task request).
#[cfg(feature = "metrics")]
pub const MCP_TASKS: &str = "aleph_tools_mcp_tasks";

/// `delta` sessions opened (or, negative, ended).
#[cfg(feature = "mcp-http")]
pub(in crate::mcp) fn sessions(delta: i32) {
    #[cfg(feature = "metrics")]
    ::metrics::gauge!(MCP_SESSIONS).increment(f64::from(delta));
    #[cfg(not(feature = "metrics"))]
    let _ = delta;
}

/// `delta` tasks kept (or, negative, forgotten).
pub(in crate::mcp) fn tasks(delta: i32) {
    #[cfg(feature = "metrics")]
    ::metrics::gauge!(MCP_TASKS).increment(f64::from(delta));
    #[cfg(not(feature = "metrics"))]
    let _ = delta;
}

/// Describes the gauges to the recorder installed now.
#[cfg(all(feature = "metrics", feature = "mcp-http"))]
pub(in crate::mcp) fn describe() {
    ::metrics::describe_gauge!(MCP_SESSIONS, "MCP sessions held over streamable HTTP.");
    ::metrics::describe_gauge!(MCP_TASKS, "MCP tasks kept, running or finished.");
}
