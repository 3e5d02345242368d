//! Calls that run in place, as their future is made: an `inline` tool's call with nothing
//! around it, found in the snapshot or, on a server as built, without it (see `as_built`).
//! Such a call is not timed.

use std::sync::Arc;
use std::time::Duration;
#[cfg(debug_assertions)]
use std::time::Instant;

use super::execute::{check_caller, contain};
use super::{AlephToolServer, CallArgs, Entry};
use crate::context::{EMPTY_CONTEXT, ToolContext, in_call};
use crate::error::ToolError;
use crate::result::{RepairInfo, ToolResult};

impl AlephToolServer {
    /// A call of an inline tool that never reads its context, run in place when it has no
    /// time limit, with no prepared call. `None` when the call needs more, or serde refused
    /// its arguments.
    ///
    /// Nothing else around such a call could act on it: a cancellation token is read once,
    /// before the tool runs (a cancelled call never runs, as on every path), since nothing
    /// can stop a call that ends as it starts; and while someone listens to its progress,
    /// the tool runs as part of its call, so the `tracing` events it emits reach them
    /// (`ToolLogLayer`).
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
        let run_inline = self.shared.settings.in_place(entry)?;
        let ctx = ctx.unwrap_or(&EMPTY_CONTEXT);
        let outcome = if let Err(err) = check_caller(entry, ctx) {
            Err(err)
        } else if ctx.is_cancelled() {
            Err(ToolError::cancelled(&*entry.name))
        } else {
            let tool = entry.tool.typed_arguments()?.as_any();
            let args = args.value()?;
            let run = || contain(entry, || run_inline(tool, args, ctx));
            let ran = in_place(entry, || match ctx.listened_progress_of(&entry.name) {
                None => run(),
                Some(progress) => in_call(progress, run),
            });
            match ran {
                Ok(Some(outcome)) => outcome,
                // Serde refused the arguments: the checked path says why.
                Ok(None) => return None,
                Err(panicked) => Err(panicked),
            }
        };
        Some(self.result_after(entry, Duration::ZERO, outcome, repair.take()))
    }

    /// The tool `name` as the server was built, when a call of it may run in place with
    /// nothing else to do and nothing has changed since the build (see [`AsBuilt`]).
    ///
    /// [`AsBuilt`]: super::as_built::AsBuilt
    #[inline]
    pub(super) fn as_built(&self, name: &str) -> Option<&Arc<Entry>> {
        if self.shared.filter.is_active() {
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
