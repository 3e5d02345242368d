//! Running one call: context, time limit, panic isolation, and the [`ToolResult`].

use std::any::Any;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use futures_util::FutureExt;
use serde_json::Value;

use super::{Entry, ToolServerHandle};
use crate::context::ToolContext;
use crate::error::ToolError;
use crate::result::{ToolOutput, ToolResult};

impl ToolServerHandle {
    pub(super) async fn run(
        &self,
        name: &str,
        args: Value,
        ctx: Option<ToolContext>,
    ) -> ToolResult {
        let started = Instant::now();
        let outcome = match self.lookup(name) {
            Ok(entry) => {
                let ctx = self.prepare(&entry, ctx);
                self.execute(&entry, args, &ctx).await
            }
            Err(err) => Err(err),
        };
        match outcome {
            Ok(output) => ToolResult::ok(output, started.elapsed()),
            Err(err) => ToolResult::err(&err, started.elapsed()),
        }
    }

    fn prepare(&self, entry: &Entry, ctx: Option<ToolContext>) -> ToolContext {
        let shared = &self.shared;
        let call_id = shared.next_call_id.fetch_add(1, Ordering::Relaxed);
        let mut ctx = ctx.unwrap_or_default();
        ctx.merge_state_from(&shared.state);
        ctx.default_working_dir(shared.working_dir.as_ref());
        ctx.for_call(call_id, Arc::clone(&entry.name))
    }

    async fn execute(
        &self,
        entry: &Entry,
        args: Value,
        ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        let panicked = |payload: Box<dyn Any + Send>| ToolError::Panicked {
            tool: entry.name.to_string(),
            message: panic_message(&*payload),
        };
        // A hand-written tool may panic while building its future, before any poll.
        let future = std::panic::catch_unwind(AssertUnwindSafe(|| entry.tool.call(args, ctx)))
            .map_err(panicked)?;
        let guarded = AssertUnwindSafe(future).catch_unwind();
        let finished = match entry.definition.timeout.or(self.shared.default_timeout) {
            // The timer lives on the heap, so calls without a limit keep a small future.
            Some(limit) => Box::pin(tokio::time::timeout(limit, guarded))
                .await
                .map_err(|_| ToolError::Timeout {
                    tool: entry.name.to_string(),
                    after: limit,
                })?,
            None => guarded.await,
        };
        finished.map_err(panicked)?
    }
}

fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "the tool panicked".to_owned()
    }
}
