//! [`Prepared`]: a call whose tool is found and admitted, holding what running it needs
//! besides the tool's own future (the context, the clock, progress listeners); and
//! [`Prepared::finish`], which turns the outcome into the call's [`ToolResult`].

use std::any::Any;
use std::pin::Pin;
use std::sync::Arc;

use super::execute::{ToolFuture, contain, until_cancelled};
use super::progress::Listeners;
use super::{AlephToolServer, Entry};
use crate::context::ToolContext;
use crate::error::ToolError;
use crate::result::{RepairInfo, ToolOutput, ToolResult};
use crate::schema::Coercion;

/// A call admitted and prepared. Not public API: it is what the server hands a typed tool
/// to start itself with (see [`TypedArguments`](crate::tool::TypedArguments)), so that the
/// whole call lives in one allocation.
#[doc(hidden)]
pub struct Prepared<'a> {
    pub(super) server: &'a AlephToolServer,
    pub(super) entry: Arc<Entry>,
    pub(super) ctx: ToolContext,
    /// Whether `ctx` carries the call's id, the tool's name, the server and its defaults.
    /// A tool that never reads its context is spared that.
    pub(super) ctx_ready: bool,
    pub(super) started: quanta::Instant,
    pub(super) listeners: Option<Arc<Listeners>>,
    /// Boxed: rare, and the call's future moves this struct.
    pub(super) repair: Option<Box<RepairInfo>>,
    pub(super) needs_confirmation: bool,
}

impl Prepared<'_> {
    /// The tool, as the type `T` it was added as.
    pub(crate) fn tool<T: Any>(&self) -> Option<&T> {
        self.entry
            .tool
            .typed_arguments()
            .and_then(|typed| typed.as_any().downcast_ref())
    }

    /// The context the tool runs with.
    pub(crate) fn context(&self) -> &ToolContext {
        &self.ctx
    }

    /// Runs `f`, a piece of the tool's own code, with a panic in it turned into the call's
    /// error.
    pub(crate) fn contain<R>(&self, f: impl FnOnce() -> R) -> Result<R, ToolError> {
        contain(&self.entry, f)
    }

    /// Runs the tool's future to its end: under its time limit, with a panic contained, and
    /// ended when the call's cancellation token fires.
    pub(crate) async fn drive(
        &self,
        tool: Pin<&mut ToolFuture<'_>>,
    ) -> Result<ToolOutput, ToolError> {
        // Not `cancellable`: its future holds `limited` beside the race, and this one is on
        // every fast call.
        match self.ctx.cancellation() {
            None => {
                let progress = self.ctx.listened_progress();
                self.server.limited(&self.entry, progress, tool).await
            }
            // Boxed: the race stays out of the common call's future.
            Some(token) => {
                let progress = self.ctx.listened_progress();
                let limited = self.server.limited(&self.entry, progress, tool);
                Box::pin(until_cancelled(&self.entry.name, token, limited)).await
            }
        }
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
        if let Some(listeners) = &self.listeners {
            listeners.attach(&mut self.ctx);
        }
    }

    /// The call's result, from the outcome.
    pub(crate) fn finish(self, outcome: Result<ToolOutput, ToolError>) -> ToolResult {
        self.finish_repaired(outcome, Vec::new())
    }

    /// The call's result, from the outcome and the changes argument repair made.
    pub(super) fn finish_repaired(
        self,
        outcome: Result<ToolOutput, ToolError>,
        coercions: Vec<Coercion>,
    ) -> ToolResult {
        let elapsed = self.started.elapsed();
        let mut result = match outcome {
            Ok(output) => ToolResult::ok(output, elapsed),
            Err(err) => ToolResult::err(&err, elapsed),
        };
        result.coercions = coercions;
        result.repair = self.repair;
        let limit = self.entry.definition.output_limit.or(self
            .server
            .shared
            .settings
            .default_output_limit);
        if let Some(limit) = limit {
            result.limit_text(limit);
        }
        if let Some(listeners) = &self.listeners {
            listeners.result(&self.entry.name, &result);
        }
        result
    }
}
