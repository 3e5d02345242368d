//! The typed fast path: a tool whose arguments are a serde type reads them itself, and its
//! whole call (tool, time limit, result) runs in one boxed future, or at once for an inline
//! tool. The code that does it is generic over the tool's type, so it is made where the
//! type is known: [`ToolServerBuilder::with_tool`](super::ToolServerBuilder::with_tool)
//! makes it for the tool given, and `#[tool]` submits it for every tool it writes
//! ([`FastStart`]), which a tool added as a trait object is found by.

use std::any::TypeId;
use std::collections::HashMap;
use std::pin::pin;
use std::sync::{OnceLock, RwLock};

use serde_json::Value;

use super::{Prepared, ToolCallFuture};
use crate::args;
use crate::tool::{AlephTool, TypedArguments, another_type, run, run_inline};
use crate::util::sync::{read, write};

/// How a typed tool starts a call on the server's fast path: with its arguments read into
/// its arguments type, the whole call in one boxed future, or run at once for an inline
/// tool; or, when they do not read, the prepared call handed back for the checked path.
pub(crate) type StartTyped =
    for<'a, 'b> fn(Prepared<'a>, &'b Value) -> Result<ToolCallFuture<'a>, Prepared<'a>>;

/// How calls of one tool type start on the fast path, as `#[tool]` submits it. Not public
/// API.
#[doc(hidden)]
pub struct FastStart {
    type_id: fn() -> TypeId,
    start: StartTyped,
}

impl FastStart {
    /// The fast path of the tool type `T`.
    pub const fn of<T: AlephTool>() -> Self {
        Self {
            type_id: TypeId::of::<T>,
            start: start::<T>,
        }
    }
}

inventory::collect!(FastStart);

/// The fast paths known, by tool type: every one `#[tool]` submitted, and those of the
/// tools given to builders.
fn known() -> &'static RwLock<HashMap<TypeId, StartTyped>> {
    static KNOWN: OnceLock<RwLock<HashMap<TypeId, StartTyped>>> = OnceLock::new();
    KNOWN.get_or_init(|| {
        let submitted = inventory::iter::<FastStart>
            .into_iter()
            .map(|fast| ((fast.type_id)(), fast.start));
        RwLock::new(submitted.collect())
    })
}

/// Makes the fast path of `T` known, for a tool given by its type.
pub(super) fn remember<T: AlephTool>() {
    let id = TypeId::of::<T>();
    if !read(known()).contains_key(&id) {
        write(known()).insert(id, start::<T>);
    }
}

/// How calls of `tool` start on the fast path, when its type's is known.
pub(super) fn starter_of(tool: &dyn TypedArguments) -> Option<StartTyped> {
    read(known()).get(&tool.as_any().type_id()).copied()
}

/// [`StartTyped`] for `T`: its arguments read, and the whole call run in one boxed future
/// (or at once, for an inline tool with nothing around its call).
#[expect(
    clippy::result_large_err,
    reason = "a refused call goes back to the checked path as it is, with no allocation"
)]
fn start<'a, T: AlephTool>(
    call: Prepared<'a>,
    args: &Value,
) -> Result<ToolCallFuture<'a>, Prepared<'a>> {
    let parsed: T::Args = match call.contain(|| args::read(args).ok()) {
        Ok(Some(parsed)) => parsed,
        Ok(None) => return Err(call),
        Err(panicked) => return Ok(ToolCallFuture::ended(call.finish(Err(panicked)))),
    };
    if T::INLINE && call.is_plain() {
        let Some(tool) = call.tool::<T>() else {
            return Ok(ToolCallFuture::ended(
                call.finish(Err(another_type(T::NAME))),
            ));
        };
        let outcome = call
            .contain(|| run_inline(tool, parsed, call.context()))
            .and_then(|outcome| outcome);
        return Ok(ToolCallFuture::ended(call.finish(outcome)));
    }
    Ok(ToolCallFuture::running(Box::pin(async move {
        let outcome = match call.tool::<T>() {
            Some(tool) => call.drive(pin!(run(tool, parsed, call.context()))).await,
            None => Err(another_type(T::NAME)),
        };
        call.finish(outcome)
    })))
}
