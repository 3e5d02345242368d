//! The concurrency layer: at most so many calls at once, per tool and for the whole server.
//! Calls past the limit wait their turn, in order; cancelling a waiting call ends its wait.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};

use crate::util::sync::lock;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::{Middleware, Next, ToolCall};
use crate::error::ToolError;
use crate::result::ToolOutput;

/// Middleware that bounds how many calls run at once: across the server, for each tool, and
/// for named tools.
///
/// A call over a limit waits (first come, first served) until a running call finishes; the
/// wait ends early with [`ToolError::Cancelled`] when the call's cancellation token fires.
/// A tool's time limit counts from when it starts, not while it waits. A limit of zero
/// refuses every call it covers.
///
/// ```
/// use aleph_tools::middleware::ConcurrencyLimit;
///
/// let limit = ConcurrencyLimit::new()
///     .global(64)
///     .per_tool(8)
///     .tool("render_video", 1);
/// # drop(limit);
/// ```
#[derive(Default)]
pub struct ConcurrencyLimit {
    global: Option<Bound>,
    per_tool: Option<usize>,
    tools: HashMap<String, Bound>,
    /// The per-tool bounds, made on each tool's first call.
    each: Mutex<HashMap<Arc<str>, Bound>>,
}

/// A limit and the semaphore that keeps it.
#[derive(Clone)]
struct Bound {
    calls: usize,
    semaphore: Arc<Semaphore>,
}

impl Bound {
    fn new(calls: usize) -> Self {
        Self {
            calls,
            semaphore: Arc::new(Semaphore::new(calls.min(Semaphore::MAX_PERMITS))),
        }
    }

    /// Waits for a place, or for the call to be cancelled.
    async fn enter(&self, call: &ToolCall, scope: &str) -> Result<OwnedSemaphorePermit, ToolError> {
        let refused = || {
            ToolError::permission_denied(
                call.name(),
                format!("the concurrency limit {scope} allows no calls"),
            )
        };
        if self.calls == 0 {
            return Err(refused());
        }
        let wait = Arc::clone(&self.semaphore).acquire_owned();
        match call
            .context()
            .cancellation_token()
            .run_until_cancelled(wait)
            .await
        {
            Some(permit) => permit.map_err(|_| refused()),
            None => Err(ToolError::Cancelled {
                tool: call.name().to_owned(),
            }),
        }
    }
}

impl ConcurrencyLimit {
    /// A layer with no limits.
    pub fn new() -> Self {
        Self::default()
    }

    /// At most `calls` calls at once across all tools.
    #[must_use]
    pub fn global(mut self, calls: usize) -> Self {
        self.global = Some(Bound::new(calls));
        self
    }

    /// At most `calls` calls at once to each tool.
    #[must_use]
    pub fn per_tool(mut self, calls: usize) -> Self {
        self.per_tool = Some(calls);
        self
    }

    /// At most `calls` calls at once to the tool `name`, in place of the per-tool limit.
    #[must_use]
    pub fn tool(mut self, name: impl Into<String>, calls: usize) -> Self {
        self.tools.insert(name.into(), Bound::new(calls));
        self
    }

    /// The bound on calls to this tool, if any, and how to name it.
    fn for_tool(&self, call: &ToolCall) -> Option<(Bound, &'static str)> {
        if let Some(bound) = self.tools.get(call.name()) {
            return Some((bound.clone(), "for this tool"));
        }
        let calls = self.per_tool?;
        let mut each = lock(&self.each);
        let bound = each
            .entry(Arc::clone(call.shared_name()))
            .or_insert_with(|| Bound::new(calls));
        Some((bound.clone(), "for each tool"))
    }
}

impl Middleware for ConcurrencyLimit {
    async fn handle(&self, call: ToolCall, next: Next) -> Result<ToolOutput, ToolError> {
        // The tool's own place first, so a call waiting on a busy tool holds no global one.
        let _tool_place = match self.for_tool(&call) {
            Some((bound, scope)) => Some(bound.enter(&call, scope).await?),
            None => None,
        };
        let _global_place = match &self.global {
            Some(bound) => Some(bound.enter(&call, "across all tools").await?),
            None => None,
        };
        next.run(call).await
    }
}

impl fmt::Debug for ConcurrencyLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConcurrencyLimit")
            .field("global", &self.global.as_ref().map(|b| b.calls))
            .field("per_tool", &self.per_tool)
            .field(
                "tools",
                &self
                    .tools
                    .iter()
                    .map(|(name, b)| (name, b.calls))
                    .collect::<HashMap<_, _>>(),
            )
            .finish_non_exhaustive()
    }
}
