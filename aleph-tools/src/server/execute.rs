//! Running one call, in order: admission (name resolution with repair, the filter, the
//! caller check), the stack of layers, the arguments repaired, checked and read once,
//! confirmation, execution under a time limit with panics contained, and the output limit;
//! the outcome is a [`ToolResult`].

use std::any::Any;
use std::panic::AssertUnwindSafe;
use std::pin::{Pin, pin};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::FutureExt;
use futures_util::future::{self, Either};
use serde_json::{Map, Value};

use super::in_place::in_place;
use super::repair;
use super::{
    AlephToolServer, CallArgs, Confirmation, ConfirmationRequest, Entry, Prepared, Table,
    ToolCallFuture,
};
use crate::context::{Caller, CancellationToken, Progress, ToolContext, within_call};
use crate::error::{ToolError, panic_message};
use crate::middleware::{Chain, Endpoint, Next, ToolCall};
use crate::result::{RepairInfo, ToolOutput, ToolResult};
use crate::schema::{self, Coercion};
use crate::tool::BoxFuture;
use crate::util::sync::lock;

/// A call the filter let through, to a tool of the table it borrows from.
struct Admitted<'t> {
    entry: &'t Arc<Entry>,
    repair: Option<Box<RepairInfo>>,
    needs_confirmation: bool,
}

/// The future of a tool, or of what runs it (layers, confirmation).
pub(crate) type ToolFuture<'a> = dyn Future<Output = Result<ToolOutput, ToolError>> + Send + 'a;

/// A call's arguments, checked against the tool's schema.
enum Checked<'a> {
    /// Read into the tool's arguments type: the tool's call, made and not yet started; the
    /// JSON kept for confirmation.
    Typed(BoxFuture<'a, Result<ToolOutput, ToolError>>, Value),
    /// As JSON, for a tool that reads its own (a runtime tool, or a typed tool whose
    /// arguments serde refuses though the schema takes them: the tool says why).
    Json(Value),
}

impl Checked<'_> {
    fn arguments(&self) -> &Value {
        match self {
            Self::Typed(_, args) | Self::Json(args) => args,
        }
    }
}

impl AlephToolServer {
    /// The whole call: admission, the stack, the arguments, confirmation, execution.
    ///
    /// On a server as built, an inline tool that holds nothing is first looked for without
    /// loading the snapshot (see `as_built`). The name is resolved and the call prepared at
    /// once; the future runs the rest. A typed tool whose arguments serde checks in full,
    /// called with nothing between it and the caller (no layer, confirmation or argument
    /// repair), reads its arguments itself: at once, and runs there, when it is `inline` and
    /// nothing goes around its call (see `in_place`); else as its future is first polled.
    /// Every other call takes the checked path.
    pub(crate) fn run<'a>(
        &'a self,
        name: &str,
        args: CallArgs<'a>,
        ctx: Option<ToolContext>,
    ) -> ToolCallFuture<'a> {
        let as_built = self.as_built(name);
        let args = if as_built.is_some() {
            args.parsed()
        } else {
            args
        };
        if let Some(entry) = as_built
            && let Some(result) = self.run_in_place(entry, &mut None, &args, ctx.as_ref())
        {
            return ToolCallFuture::ended(result);
        }
        let snapshot = self.shared.snapshot.load();
        let mut admitted = match self.admit(&snapshot.tools, name) {
            Ok(admitted) => admitted,
            // Refused before anything ran, in far less than a millisecond.
            Err(err) => return ToolCallFuture::ended(ToolResult::err(&err, Duration::ZERO)),
        };
        let stack = &snapshot.stack;
        let fast = admitted.entry.fast.filter(|_| {
            stack.is_empty()
                && !admitted.needs_confirmation
                && !self.shared.settings.repair_arguments
        });
        let args = if fast.is_some() { args.parsed() } else { args };
        if fast.is_some()
            && let Some(result) =
                self.run_in_place(admitted.entry, &mut admitted.repair, &args, ctx.as_ref())
        {
            return ToolCallFuture::ended(result);
        }
        let mut call = Prepared {
            server: self,
            entry: Arc::clone(admitted.entry),
            ctx: ctx.unwrap_or_default(),
            ctx_ready: false,
            started: None,
            repair: admitted.repair,
            needs_confirmation: admitted.needs_confirmation,
        };
        if fast.is_none_or(|fast| fast.reads_context) {
            call.ready_context();
        }
        if let Some(fast) = fast
            && let Some(value) = args.value()
        {
            if let Err(err) = check_caller(&call.entry, &call.ctx) {
                return ToolCallFuture::ended(call.finish(Err(err)));
            }
            let Some(run_inline) = fast.run_inline.filter(|_| call.is_plain()) else {
                return ToolCallFuture::running(Box::pin(self.run_typed(call.timed(), args)));
            };
            let typed = call.entry.tool.typed_arguments();
            let ran = typed.map(|typed| {
                in_place(&call.entry, || {
                    call.contain(|| run_inline(typed.as_any(), value, call.context()))
                })
            });
            match ran {
                Some(Ok(Some(outcome))) => return ToolCallFuture::ended(call.finish(outcome)),
                Some(Err(panicked)) => return ToolCallFuture::ended(call.finish(Err(panicked))),
                // Serde refused the arguments: the checked path says why.
                Some(Ok(None)) | None => {}
            }
        }
        let chain = (!stack.is_empty()).then(|| Arc::clone(stack.chain()));
        ToolCallFuture::running(Box::pin(self.run_checked(call.timed(), args, chain)))
    }

    /// A call on the fast path: the tool reads its arguments and its call runs, with nothing
    /// around it but what [`Prepared::drive`] puts there. Arguments serde refuses take the
    /// checked path, which says why.
    async fn run_typed(&self, call: Prepared<'_>, args: CallArgs<'_>) -> ToolResult {
        let outcome = {
            let typed = call.entry.tool.typed_arguments();
            let prepared = match (typed, args.value()) {
                (Some(typed), Some(value)) => call.contain(|| typed.prepare(value, call.context())),
                _ => Ok(None),
            };
            match prepared {
                Ok(Some(mut running)) => Some(call.drive(running.as_mut()).await),
                Ok(None) => None,
                Err(panicked) => Some(Err(panicked)),
            }
        };
        match outcome {
            Some(outcome) => call.finish(outcome),
            None => Box::pin(self.run_checked(call, args, None)).await,
        }
    }

    /// The result of a call of `entry` that took `elapsed` and came to `outcome`, with the
    /// name repair made and its text within the output limit.
    pub(super) fn result_after(
        &self,
        entry: &Entry,
        elapsed: Duration,
        outcome: Result<ToolOutput, ToolError>,
        repair: Option<Box<RepairInfo>>,
    ) -> ToolResult {
        let result = match outcome {
            Ok(output) => ToolResult::ok(output, elapsed),
            Err(err) => ToolResult::err(&err, elapsed),
        };
        let limit = entry
            .definition
            .output_limit
            .or(self.shared.settings.default_output_limit);
        if repair.is_none() && limit.is_none() {
            // The common call: the result as built, never borrowed on the way out.
            return result;
        }
        amended(result, repair, limit)
    }

    /// The checked path: the caller, the stack (when the server has layers), then the end
    /// of every call ([`end`](Self::end)).
    async fn run_checked(
        &self,
        mut call: Prepared<'_>,
        args: CallArgs<'_>,
        chain: Option<Chain>,
    ) -> ToolResult {
        call.ready_context();
        let admitted = check_caller(&call.entry, &call.ctx)
            .and_then(|()| admitted_arguments(&call.entry, args));
        let args = match admitted {
            Ok(args) => args,
            Err(err) => return call.finish(Err(err)),
        };
        let token = call.ctx.cancellation().cloned();
        let entry = &call.entry;
        let Some(chain) = chain else {
            let mut coercions = Vec::new();
            let ended = self.end(
                entry,
                args,
                &call.ctx,
                call.needs_confirmation,
                &mut coercions,
            );
            let outcome = cancellable(&entry.name, token.as_ref(), ended).await;
            return call.finish_repaired(outcome, coercions);
        };
        let endpoint = Arc::new(Innermost {
            server: self.clone(),
            entry: Arc::clone(entry),
            needs_confirmation: call.needs_confirmation,
            coercions: Mutex::default(),
        });
        let layered = ToolCall::new(
            Arc::clone(&entry.name),
            Arc::clone(&entry.definition),
            args,
            std::mem::take(&mut call.ctx),
        );
        let chained = Next::new(chain, Arc::clone(&endpoint) as Arc<dyn Endpoint>).run(layered);
        // A panic in a layer costs its own call, like one in a tool.
        let contained = async {
            AssertUnwindSafe(chained)
                .catch_unwind()
                .await
                .map_err(|payload| panicked(entry, &*payload))?
        };
        let outcome = cancellable(&entry.name, token.as_ref(), contained).await;
        let coercions = std::mem::take(&mut *lock(&endpoint.coercions));
        call.finish_repaired(outcome, coercions)
    }

    /// Finds the tool (repairing the name if needed) and checks the filter.
    /// Also says whether the call needs confirmation, from the same filter snapshot.
    fn admit<'t>(&self, table: &'t Table, name: &str) -> Result<Admitted<'t>, ToolError> {
        let Some(filter) = self.shared.filter.load_active() else {
            let (entry, repair) = repair::resolve(table, name, |_| true)?;
            let needs_confirmation = entry.definition.requires_confirmation;
            return Ok(Admitted {
                entry,
                repair,
                needs_confirmation,
            });
        };
        let filter = &filter.compiled;
        let (entry, repair) = repair::resolve(table, name, |n| filter.offers(n))?;
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

    /// The end of every call on the checked path, after the last layer: the arguments
    /// repaired (when the server does), checked and read into the tool's arguments type
    /// once; confirmation, when the call needs it; the tool, under its time limit.
    async fn end(
        &self,
        entry: &Entry,
        args: Value,
        ctx: &ToolContext,
        needs_confirmation: bool,
        coercions: &mut Vec<Coercion>,
    ) -> Result<ToolOutput, ToolError> {
        let checked = self.check(entry, args, ctx, coercions)?;
        if needs_confirmation {
            if let Checked::Json(args) = &checked {
                entry.tool.validate(args)?;
            }
            self.confirm(entry, checked.arguments().clone(), ctx)
                .await?;
        }
        let mut future = match checked {
            Checked::Typed(future, _) => future,
            // A hand-written tool may panic while building its future, before any poll.
            Checked::Json(args) => contain(entry, || entry.tool.call(args, ctx))?,
        };
        self.limited(entry, ctx.listened_progress(), future.as_mut())
            .await
    }

    /// Checks the arguments (repairing them first when the server does) and reads them
    /// into the tool's arguments type when it has one, making its call with `ctx`. A tool
    /// with a [fast path](Entry::fast) asks serde first and the schema only when serde
    /// refuses.
    fn check<'a>(
        &self,
        entry: &'a Entry,
        mut args: Value,
        ctx: &'a ToolContext,
        coercions: &mut Vec<Coercion>,
    ) -> Result<Checked<'a>, ToolError> {
        let schema = &entry.definition.parameters;
        if self.shared.settings.repair_arguments {
            *coercions = schema::coerce(schema, &mut args);
        }
        let typed = entry.tool.typed_arguments();
        if entry.fast.is_some()
            && let Some(typed) = typed
            && let Some(call) = contain(entry, || typed.prepare(&args, ctx))?
        {
            return Ok(Checked::Typed(call, args));
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
        let Some(typed) = typed else {
            return Ok(Checked::Json(args));
        };
        Ok(match contain(entry, || typed.prepare(&args, ctx))? {
            Some(call) => Checked::Typed(call, args),
            None => Checked::Json(args),
        })
    }

    /// Asks the confirmation handler whether the call may run with `arguments`.
    async fn confirm(
        &self,
        entry: &Entry,
        arguments: Value,
        ctx: &ToolContext,
    ) -> Result<(), ToolError> {
        let Some(handler) = &self.shared.settings.confirmation else {
            return Err(ToolError::permission_denied(
                &*entry.name,
                "it needs a person's approval and this server has no confirmation handler (give the builder one with `with_confirmation_handler`)",
            ));
        };
        let request = ConfirmationRequest {
            tool: entry.name.to_string(),
            arguments,
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

    /// `ctx` as a call of `entry` runs with it: the call's id, the tool's name, the server,
    /// and the server's defaults for what the caller left unset.
    pub(super) fn prepare(&self, entry: &Entry, mut ctx: ToolContext) -> ToolContext {
        let shared = &self.shared;
        let call_id = shared.next_call_id.fetch_add(1, Ordering::Relaxed);
        shared.settings.apply_defaults(&mut ctx);
        ctx.for_call(call_id, Arc::clone(&entry.name), self.shared.clone())
    }

    /// Runs the tool's future under its time limit, with a panic contained. While someone
    /// listens to the call's progress, the future runs where `ToolLogLayer` (feature
    /// `tracing-layer`) finds it.
    pub(super) async fn limited(
        &self,
        entry: &Entry,
        progress: Option<Progress>,
        tool: Pin<&mut ToolFuture<'_>>,
    ) -> Result<ToolOutput, ToolError> {
        match progress {
            None => self.timed(entry, tool).await,
            Some(progress) => within_call(progress, self.timed(entry, tool)).await,
        }
    }

    async fn timed(
        &self,
        entry: &Entry,
        tool: Pin<&mut ToolFuture<'_>>,
    ) -> Result<ToolOutput, ToolError> {
        let Some(limit) = self.time_limit(entry) else {
            return guarded(entry, tool).await;
        };
        // The timer lives on the heap, so calls without a limit keep a small future.
        let started = Instant::now();
        let outcome = Box::pin(tokio::time::timeout(limit, guarded(entry, tool))).await;
        warn_if_blocked(&entry.name, limit, started.elapsed());
        outcome.map_err(|_| ToolError::Timeout {
            tool: entry.name.to_string(),
            after: limit,
        })?
    }

    /// Whether a call of `entry` with `ctx` runs its tool and nothing around it but the
    /// panic guard: it has no time limit, no cancellation token and nobody listening to its
    /// progress.
    pub(super) fn runs_plain(&self, entry: &Entry, ctx: &ToolContext) -> bool {
        ctx.cancellation().is_none()
            && !ctx.has_progress_listener()
            && self.time_limit(entry).is_none()
    }

    /// How long a call of `entry` may run, if it has a limit.
    pub(super) fn time_limit(&self, entry: &Entry) -> Option<Duration> {
        self.shared.settings.time_limit(entry)
    }
}

/// `result` with the name repair made, and its text within `limit`.
#[inline(never)]
fn amended(
    mut result: ToolResult,
    repair: Option<Box<RepairInfo>>,
    limit: Option<usize>,
) -> ToolResult {
    result.repair = repair;
    if let Some(limit) = limit {
        result.limit_text(limit);
    }
    result
}

/// Runs the tool's future with a panic in it turned into the call's error.
pub(super) async fn guarded(
    entry: &Entry,
    tool: Pin<&mut ToolFuture<'_>>,
) -> Result<ToolOutput, ToolError> {
    AssertUnwindSafe(tool)
        .catch_unwind()
        .await
        .map_err(|payload| panicked(entry, &*payload))?
}

/// `Err` when the caller in `ctx` may not call `entry`.
#[inline]
pub(super) fn check_caller(entry: &Entry, ctx: &ToolContext) -> Result<(), ToolError> {
    if entry.definition.allows_caller(ctx.caller()) {
        Ok(())
    } else {
        Err(refused_caller(entry, ctx))
    }
}

#[cold]
fn refused_caller(entry: &Entry, ctx: &ToolContext) -> ToolError {
    let caller = match ctx.caller() {
        Caller::Human => "the model in conversation",
        Caller::CodeExecution => "code running in a sandbox",
    };
    ToolError::permission_denied(&*entry.name, format!("it may not be called by {caller}"))
}

/// Runs `f`, a piece of the tool's own code, with a panic in it turned into the call's error.
#[expect(
    clippy::inline_always,
    reason = "left out of line, its result is copied back wider than it was written, which \
              stalls the common call on store forwarding"
)]
#[inline(always)]
pub(super) fn contain<R>(entry: &Entry, f: impl FnOnce() -> R) -> Result<R, ToolError> {
    std::panic::catch_unwind(AssertUnwindSafe(f)).map_err(|payload| panicked(entry, &*payload))
}

fn panicked(entry: &Entry, payload: &(dyn Any + Send)) -> ToolError {
    ToolError::Panicked {
        tool: entry.name.to_string(),
        message: panic_message(payload),
    }
}

/// `work`, ended at once when `token` (if any) fires.
pub(super) async fn cancellable(
    tool: &str,
    token: Option<&CancellationToken>,
    work: impl Future<Output = Result<ToolOutput, ToolError>>,
) -> Result<ToolOutput, ToolError> {
    match token {
        None => work.await,
        // Boxed: the race stays out of the common call's future.
        Some(token) => Box::pin(until_cancelled(tool, token, work)).await,
    }
}

/// `work`, ended at once when `token` fires: whatever is running (middleware, a wait for
/// approval, the tool) is dropped, and the call is `Cancelled`.
pub(super) async fn until_cancelled(
    tool: &str,
    token: &CancellationToken,
    work: impl Future<Output = Result<ToolOutput, ToolError>>,
) -> Result<ToolOutput, ToolError> {
    let cancelled = pin!(token.cancelled());
    let work = pin!(work);
    // The token first: a call cancelled before it starts never runs.
    match future::select(cancelled, work).await {
        Either::Left(((), _)) => Err(ToolError::cancelled(tool)),
        Either::Right((outcome, _)) => outcome,
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

/// Arguments for the stack: the caller's, as a JSON value; `null`, which models send for
/// tools without parameters, read as `{}`.
fn admitted_arguments(entry: &Entry, args: CallArgs<'_>) -> Result<Value, ToolError> {
    let args = args.into_value(&entry.name)?;
    Ok(if args.is_null() {
        Value::Object(Map::new())
    } else {
        args
    })
}

/// What runs after the last layer: [`AlephToolServer::end`], with the changes argument
/// repair made kept for the call's result.
struct Innermost {
    server: AlephToolServer,
    entry: Arc<Entry>,
    needs_confirmation: bool,
    coercions: Mutex<Vec<Coercion>>,
}

impl Endpoint for Innermost {
    fn call(self: Arc<Self>, call: ToolCall) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let (args, ctx) = call.into_parts();
            let mut coercions = Vec::new();
            let outcome = self
                .server
                .end(
                    &self.entry,
                    args,
                    &ctx,
                    self.needs_confirmation,
                    &mut coercions,
                )
                .await;
            *lock(&self.coercions) = coercions;
            outcome
        })
    }
}
