//! [`Prepared`]: a call whose tool is found and admitted, holding what running it needs
//! besides the tool's own future (the context, the clock); and
//! [`Prepared::finish`], which turns the outcome into the call's [`ToolResult`].

use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use super::execute::{ToolFuture, contain, guarded, until_cancelled};
use super::{AlephToolServer, Entry};
use crate::context::ToolContext;
use crate::error::ToolError;
use crate::result::{RepairInfo, ToolOutput, ToolResult};
use crate::schema::Coercion;

/// A call admitted and prepared: what the rest of its run needs besides the tool's future.
pub(super) struct Prepared<'a> {
    pub(super) server: &'a AlephToolServer,
    pub(super) entry: Arc<Entry>,
    pub(super) ctx: ToolContext,
    /// Whether `ctx` carries the call's id, the tool's name, the server and its defaults.
    /// A tool that never reads its context is spared that.
    pub(super) ctx_ready: bool,
    /// The server clock's raw reading when the call was sent to run as its future is
    /// polled; `None` for a call that ends as its future is made, which is not timed.
    pub(super) started: Option<u64>,
    /// Boxed: rare, and the call's future moves this struct.
    pub(super) repair: Option<Box<RepairInfo>>,
    pub(super) needs_confirmation: bool,
}

impl Prepared<'_> {
    /// The call, timed from now: it runs as its future is polled.
    pub(super) fn timed(mut self) -> Self {
        self.started = Some(self.server.shared.clock.raw());
        self
    }

    /// The context the tool runs with.
    pub(super) fn context(&self) -> &ToolContext {
        &self.ctx
    }

    /// Runs `f`, a piece of the tool's own code, with a panic in it turned into the call's
    /// error.
    pub(super) fn contain<R>(&self, f: impl FnOnce() -> R) -> Result<R, ToolError> {
        contain(&self.entry, f)
    }

    /// Runs the tool's future to its end: under its time limit, with a panic contained, and
    /// ended when the call's cancellation token fires.
    pub(super) async fn drive(
        &self,
        tool: Pin<&mut ToolFuture<'_>>,
    ) -> Result<ToolOutput, ToolError> {
        if self.is_plain() {
            return guarded(&self.entry, tool).await;
        }
        let token = self.ctx.cancellation();
        let progress = self.ctx.listened_progress();
        // Boxed: the time limit, progress and the cancellation race stay out of the future
        // of the common call, which this one is part of.
        Box::pin(async move {
            let limited = self.server.limited(&self.entry, progress, tool);
            match token {
                None => limited.await,
                Some(token) => until_cancelled(&self.entry.name, token, limited).await,
            }
        })
        .await
    }

    /// Whether the call runs its tool and nothing around it but the panic guard: it has
    /// no time limit, no cancellation token and nobody listening to its progress.
    pub(super) fn is_plain(&self) -> bool {
        self.server.runs_plain(&self.entry, &self.ctx)
    }

    /// Gives the context what the server gives every call: its id, the tool's name, the
    /// server, and the server's defaults for what the caller left unset.
    pub(super) fn ready_context(&mut self) {
        if self.ctx_ready {
            return;
        }
        self.ctx_ready = true;
        self.ctx = self
            .server
            .prepare(&self.entry, std::mem::take(&mut self.ctx));
    }

    /// The call's result, from the outcome.
    pub(super) fn finish(self, outcome: Result<ToolOutput, ToolError>) -> ToolResult {
        self.finish_repaired(outcome, Vec::new())
    }

    /// The call's result, from the outcome and the changes argument repair made.
    pub(super) fn finish_repaired(
        self,
        outcome: Result<ToolOutput, ToolError>,
        coercions: Vec<Coercion>,
    ) -> ToolResult {
        let clock = &self.server.shared.clock;
        let elapsed = self
            .started
            .map_or(Duration::ZERO, |started| clock.delta(started, clock.raw()));
        let mut result = self
            .server
            .result_after(&self.entry, elapsed, outcome, self.repair);
        if !coercions.is_empty() {
            result.coercions = coercions;
        }
        result
    }
}
