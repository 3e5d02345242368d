//! Running one call, in order: name resolution (with repair), the filter, the caller check,
//! argument repair and validation, the middleware chain and hooks, confirmation, execution
//! under a time limit with panics contained, the output limit, and progress reports; the
//! outcome is a [`ToolResult`].

use std::any::Any;
use std::panic::AssertUnwindSafe;
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use arc_swap::Guard;
use futures_util::FutureExt;
use futures_util::future::{self, Either};
use serde_json::{Map, Value};

use super::progress::Listeners;
use super::repair;
use super::{AlephToolServer, Confirmation, ConfirmationRequest, Entry};
use crate::context::{Caller, CancellationToken, ToolContext};
use crate::error::{ToolError, panic_message};
use crate::middleware::{Endpoint, HookSet, Next, ToolCall};
use crate::result::{RepairInfo, ToolOutput, ToolResult};
use crate::schema::{self, Coercion};
use crate::tool::BoxFuture;

/// A call the filter let through.
struct Admitted {
    entry: Arc<Entry>,
    repair: Option<RepairInfo>,
    needs_confirmation: bool,
}

impl AlephToolServer {
    /// The whole call: resolve the name (with repair), filter, confirmation, execution.
    pub(crate) async fn run(
        &self,
        name: &str,
        args: Value,
        ctx: Option<ToolContext>,
    ) -> ToolResult {
        let started = Instant::now();
        let listeners = Listeners::current(self.shared.settings.progress.as_ref()).map(Arc::new);
        let mut coercions = Vec::new();
        let (outcome, repair, entry) = match self.admit(name) {
            Ok(Admitted {
                entry,
                repair,
                needs_confirmation,
            }) => {
                let mut ctx = self.prepare(&entry, ctx);
                if let Some(listeners) = &listeners {
                    listeners.attach(&mut ctx);
                    listeners.start(&entry.name, &args);
                }
                let outcome = match self.check(&entry, args, &ctx, &mut coercions) {
                    Ok(args) => match ctx.cancellation().cloned() {
                        // Boxed: the race stays out of the common call's future.
                        Some(token) => {
                            Box::pin(self.dispatch_until_cancelled(
                                &entry,
                                args,
                                ctx,
                                needs_confirmation,
                                token,
                            ))
                            .await
                        }
                        None => self.dispatch(&entry, args, ctx, needs_confirmation).await,
                    },
                    Err(err) => Err(err),
                };
                (outcome, repair, Some(entry))
            }
            Err(err) => (Err(err), None, None),
        };
        let mut result = match outcome {
            Ok(output) => ToolResult::ok(output, started.elapsed()),
            Err(err) => ToolResult::err(&err, started.elapsed()),
        };
        result.coercions = coercions;
        result.repair = repair;
        if let Some(entry) = &entry {
            let limit = entry
                .definition
                .output_limit
                .or(self.shared.settings.default_output_limit);
            if let Some(limit) = limit {
                result.limit_text(limit);
            }
            if let Some(listeners) = &listeners {
                listeners.result(&entry.name, &result);
            }
        }
        result
    }

    /// Finds the tool (repairing the name if needed) and checks the filter.
    /// Also says whether the call needs confirmation, from the same filter snapshot.
    fn admit(&self, name: &str) -> Result<Admitted, ToolError> {
        let table = self.shared.tools.load();
        let filter = self.shared.filter.load();
        let filter = &filter.compiled;
        let (entry, repair) = repair::resolve(&table, name, |n| filter.offers(n))?;
        if let Err(reason) = filter.check(&entry.name) {
            return Err(ToolError::permission_denied(&*entry.name, reason));
        }
        let needs_confirmation =
            entry.definition.requires_confirmation || filter.needs_confirmation(&entry.name);
        Ok(Admitted {
            entry,
            repair,
            needs_confirmation,
        })
    }

    /// Checks the caller and the arguments (repairing them first when the server does);
    /// gives back the arguments to run with.
    fn check(
        &self,
        entry: &Entry,
        mut args: Value,
        ctx: &ToolContext,
        coercions: &mut Vec<Coercion>,
    ) -> Result<Value, ToolError> {
        if !entry.definition.allows_caller(ctx.caller()) {
            let caller = match ctx.caller() {
                Caller::Human => "the model in conversation",
                Caller::CodeExecution => "code running in a sandbox",
            };
            return Err(ToolError::permission_denied(
                &*entry.name,
                format!("it may not be called by {caller}"),
            ));
        }
        // Models send `null` for tools without parameters.
        if args.is_null() {
            args = Value::Object(Map::new());
        }
        let schema = &entry.definition.parameters;
        if self.shared.settings.repair_arguments {
            *coercions = schema::coerce(schema, &mut args);
        }
        let mut checked = entry.validator.check(schema, &args);
        if checked.is_err() {
            // Strict-mode models send `null` for optional arguments they leave out.
            let dropped = schema::drop_absent_nulls(schema, &mut args);
            if !dropped.is_empty() {
                coercions.extend(dropped);
                checked = entry.validator.check(schema, &args);
            }
        }
        checked.map_err(|problems| ToolError::invalid_args(&*entry.name, problems))?;
        Ok(args)
    }

    /// [`dispatch`](Self::dispatch), ended at once when `token` fires: whatever is running
    /// (middleware, a wait for approval, the tool) is dropped, and the call is `Cancelled`.
    async fn dispatch_until_cancelled(
        &self,
        entry: &Arc<Entry>,
        args: Value,
        ctx: ToolContext,
        needs_confirmation: bool,
        token: CancellationToken,
    ) -> Result<ToolOutput, ToolError> {
        let cancelled = pin!(token.cancelled());
        let dispatch = pin!(self.dispatch(entry, args, ctx, needs_confirmation));
        // The token first: a call cancelled before it starts never runs.
        match future::select(cancelled, dispatch).await {
            Either::Left(((), _)) => Err(ToolError::cancelled(&*entry.name)),
            Either::Right((outcome, _)) => outcome,
        }
    }

    /// Runs the middleware chain and hooks around confirmation and the tool; straight to
    /// the tool when the server has neither.
    async fn dispatch(
        &self,
        entry: &Arc<Entry>,
        args: Value,
        ctx: ToolContext,
        needs_confirmation: bool,
    ) -> Result<ToolOutput, ToolError> {
        let chain = &self.shared.settings.middleware;
        let hooks = self.shared.hooks.load();
        if chain.is_empty() && hooks.is_empty() {
            // A snapshot guard is for short reads, not to keep across the tool's run.
            drop(hooks);
            return self
                .confirm_and_execute(entry, args, &ctx, needs_confirmation)
                .await;
        }
        let call = ToolCall::new(
            Arc::clone(&entry.name),
            Arc::clone(&entry.definition),
            args,
            ctx,
        );
        let endpoint = Arc::new(Innermost {
            server: self.clone(),
            entry: Arc::clone(entry),
            needs_confirmation,
            hooks: Guard::into_inner(hooks),
        });
        // Boxed: the chain's state stays out of the plain call's future. A panic in a layer
        // or hook costs its own call, like one in a tool.
        let chained = Box::pin(Next::new(Arc::clone(chain), endpoint).run(call));
        AssertUnwindSafe(chained)
            .catch_unwind()
            .await
            .map_err(|payload| ToolError::Panicked {
                tool: entry.name.to_string(),
                message: panic_message(&*payload),
            })?
    }

    /// Asks for confirmation where needed, and runs the tool.
    async fn confirm_and_execute(
        &self,
        entry: &Entry,
        args: Value,
        ctx: &ToolContext,
        needs_confirmation: bool,
    ) -> Result<ToolOutput, ToolError> {
        if needs_confirmation {
            // Boxed: the confirmation state stays out of the common call's future.
            Box::pin(self.confirm(entry, &args, ctx)).await?;
        }
        self.execute(entry, args, ctx).await
    }

    /// Validates the arguments, then asks the confirmation handler.
    async fn confirm(
        &self,
        entry: &Entry,
        args: &Value,
        ctx: &ToolContext,
    ) -> Result<(), ToolError> {
        entry.tool.validate(args)?;
        let Some(handler) = &self.shared.settings.confirmation else {
            return Err(ToolError::permission_denied(
                &*entry.name,
                "it needs a person's approval and this server has no confirmation handler (give the builder one with `with_confirmation_handler`)",
            ));
        };
        let request = ConfirmationRequest {
            tool: entry.name.to_string(),
            arguments: args.clone(),
            definition: Arc::clone(&entry.definition),
            caller: ctx.caller(),
            call_id: ctx.call_id(),
        };
        match handler.confirm(request).await {
            Confirmation::Approve => Ok(()),
            Confirmation::Deny { reason } => Err(ToolError::permission_denied(
                &*entry.name,
                format!("the user declined: {reason}"),
            )),
        }
    }

    fn prepare(&self, entry: &Entry, ctx: Option<ToolContext>) -> ToolContext {
        let shared = &self.shared;
        let call_id = shared.next_call_id.fetch_add(1, Ordering::Relaxed);
        let mut ctx = ctx.unwrap_or_default();
        shared.settings.apply_defaults(&mut ctx);
        ctx.for_call(call_id, Arc::clone(&entry.name), self)
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
        let finished = match entry
            .definition
            .timeout
            .or(self.shared.settings.default_timeout)
        {
            // The timer lives on the heap, so calls without a limit keep a small future.
            Some(limit) => {
                let started = Instant::now();
                let outcome = Box::pin(tokio::time::timeout(limit, guarded)).await;
                warn_if_blocked(&entry.name, limit, started.elapsed());
                outcome.map_err(|_| ToolError::Timeout {
                    tool: entry.name.to_string(),
                    after: limit,
                })?
            }
            None => guarded.await,
        };
        finished.map_err(panicked)?
    }
}

/// How far past its limit a call may end before the server says something held its worker.
const BLOCKED_SLACK: Duration = Duration::from_millis(100);

/// A call with a time limit ends at the limit at the latest, unless its tool blocked the
/// thread polling it (an `async fn` that computes or sleeps instead of awaiting): then
/// neither the timer nor anything else on that worker ran until it returned. Says so, with
/// the fix, since nothing else would show it.
fn warn_if_blocked(tool: &str, limit: Duration, elapsed: Duration) {
    if elapsed > limit + BLOCKED_SLACK.max(limit / 2) {
        tracing::warn!(
            tool,
            limit_ms = limit.as_millis(),
            elapsed_ms = elapsed.as_millis(),
            "`{tool}` ended {} ms into its {} ms time limit: it blocked the thread running it, \
             so the limit could not fire; make it a plain `fn` (run on the blocking pool) or \
             await instead of blocking",
            elapsed.as_millis(),
            limit.as_millis(),
        );
    }
}

/// The end of the middleware chain: the hooks, confirmation and the tool.
struct Innermost {
    server: AlephToolServer,
    entry: Arc<Entry>,
    needs_confirmation: bool,
    hooks: Arc<HookSet>,
}

impl Endpoint for Innermost {
    fn call(self: Arc<Self>, call: ToolCall) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let this = &*self;
            this.hooks
                .run(call, |call| async move {
                    let (args, ctx) = call.into_parts();
                    this.server
                        .confirm_and_execute(&this.entry, args, &ctx, this.needs_confirmation)
                        .await
                })
                .await
        })
    }
}
