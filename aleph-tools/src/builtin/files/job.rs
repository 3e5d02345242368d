//! A file tool's work, run on Tokio's blocking pool under the tool's time limit. When the
//! limit passes, or the call is dropped (the server's own limit, the caller's cancellation),
//! the work is told to stop and ends at its next check, so no thread keeps walking or
//! reading for a call nobody waits on.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::context::ToolContext;
use crate::error::ToolError;

/// Set when nobody waits for the work any more; the work checks it between steps.
#[derive(Debug, Clone, Default)]
pub(super) struct Stop(Arc<AtomicBool>);

impl Stop {
    /// Whether the work should end now.
    pub fn requested(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    /// `Err` once the work should end; its error is never seen, as nobody waits for it.
    pub fn check(&self) -> Result<(), ToolError> {
        if self.requested() {
            Err(ToolError::execution("stopped: the call ended"))
        } else {
            Ok(())
        }
    }

    fn request(&self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// Requests a stop when dropped: with the call's future, whatever ends it.
struct StopOnDrop(Stop);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.request();
    }
}

/// Runs `work` on the blocking pool within `limit`; past it the call ends with
/// [`ToolError::Timeout`] and the work is stopped. Outside a Tokio runtime the work runs in
/// place.
pub(super) async fn run<T, W>(ctx: &ToolContext, limit: Duration, work: W) -> Result<T, ToolError>
where
    T: Send + 'static,
    W: FnOnce(&ToolContext, &Stop) -> Result<T, ToolError> + Send + 'static,
{
    let tool = ctx.tool_name().unwrap_or("file tool").to_owned();
    let stop = StopOnDrop(Stop::default());
    let worker = stop.0.clone();
    let ctx = ctx.clone();
    let body = crate::context::carried(move || work(&ctx, &worker));
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return body();
    };
    let outcome = tokio::time::timeout(limit, runtime.spawn_blocking(body)).await;
    drop(stop);
    match outcome {
        Ok(Ok(result)) => result,
        Ok(Err(join)) => Err(match join.try_into_panic() {
            Ok(payload) => ToolError::Panicked {
                message: crate::error::panic_message(&*payload),
                tool,
            },
            Err(_) => ToolError::cancelled(tool),
        }),
        Err(_) => Err(ToolError::Timeout { tool, after: limit }),
    }
}
