//! Calls that run in place, as their future is made: an `inline` tool's call with nothing
//! around it, found in the snapshot or, on a server as built, without it (see `as_built`).
//! Such a call is not timed.

use std::sync::Arc;
use std::time::Duration;
#[cfg(debug_assertions)]
use std::time::Instant;

use super::execute::{check_caller, contain};
use super::{AlephToolServer, CallArgs, Entry};
use crate::context::{EMPTY_CONTEXT, ToolContext};
use crate::result::{RepairInfo, ToolResult};

impl AlephToolServer {
    /// A call of an inline tool that never reads its context, run in place when nothing
    /// goes around it (no time limit, cancellation token or progress listener), with no
    /// prepared call. `None` when the call needs more, or serde refused its arguments.
    ///
    /// Like every call that ends as its future is made, it is not timed (see [`in_place`]).
    /// `repair` is taken into the result when the call runs.
    pub(super) fn run_in_place(
        &self,
        entry: &Entry,
        repair: &mut Option<Box<RepairInfo>>,
        args: &CallArgs<'_>,
        ctx: Option<&ToolContext>,
    ) -> Option<ToolResult> {
        let run_inline = entry.fast?.without_context()?;
        let ctx = ctx.unwrap_or(&EMPTY_CONTEXT);
        if !self.runs_plain(entry, ctx) {
            return None;
        }
        let outcome = if let Err(err) = check_caller(entry, ctx) {
            Err(err)
        } else {
            let tool = entry.tool.typed_arguments()?.as_any();
            let args = args.value()?;
            match in_place(entry, || contain(entry, || run_inline(tool, args, ctx))) {
                Ok(Some(outcome)) => outcome,
                // Serde refused the arguments: the checked path says why.
                Ok(None) => return None,
                Err(panicked) => Err(panicked),
            }
        };
        Some(self.result_after(entry, Duration::ZERO, outcome, repair.take()))
    }

    /// The tool `name` as the server was built, when a call of it with `ctx` may run in
    /// place with nothing else to do and nothing has changed since the build (see
    /// [`AsBuilt`]). A call with a cancellation token or a progress listener (every call
    /// over MCP) never runs in place, so it does not look.
    ///
    /// [`AsBuilt`]: super::as_built::AsBuilt
    #[inline]
    pub(super) fn as_built(&self, name: &str, ctx: Option<&ToolContext>) -> Option<&Arc<Entry>> {
        let around =
            ctx.is_some_and(|ctx| ctx.cancellation().is_some() || ctx.has_progress_listener());
        if around || self.shared.filter.is_active() {
            return None;
        }
        self.shared.as_built.get(name)
    }
}

/// Runs `call`, an inline tool's call, in place, as its future is made. Such a call is not
/// timed: an inline tool ends within microseconds, so its duration in whole milliseconds is
/// 0 without reading a clock twice, which costs as much as the rest of the call's own work.
/// Debug builds time it and say when the tool broke that promise.
#[inline]
pub(super) fn in_place<R>(entry: &Entry, call: impl FnOnce() -> R) -> R {
    #[cfg(debug_assertions)]
    let started = Instant::now();
    let ran = call();
    #[cfg(debug_assertions)]
    warn_if_slow_in_place(&entry.name, started.elapsed());
    #[cfg(not(debug_assertions))]
    let _ = entry;
    ran
}

/// How long a call run in place may take before a debug build says its tool is not inline.
#[cfg(debug_assertions)]
const SLOW_IN_PLACE: Duration = Duration::from_millis(1);

/// A call that ran in place for a millisecond or more reported a duration of 0 that was not
/// true, and held its caller's thread as long: says so, with the fix.
#[cfg(debug_assertions)]
fn warn_if_slow_in_place(tool: &str, elapsed: Duration) {
    if elapsed >= SLOW_IN_PLACE {
        tracing::warn!(
            tool,
            elapsed_us = elapsed.as_micros(),
            "`{tool}` is inline but its call ran in place for {} µs, held the caller's \
             thread that long and reports `duration_ms: 0`; drop `inline` so it runs on the \
             blocking pool (this check runs in debug builds only)",
            elapsed.as_micros(),
        );
    }
}
