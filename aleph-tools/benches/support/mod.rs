//! The tool the benchmarks measure, the hand-written floor they compare it with, and
//! the layered server they measure beside the plain one.

use aleph_tools::ToolServerBuilder;
use aleph_tools::middleware::{Audit, Rate, RateLimit};
use aleph_tools::prelude::*;
use serde_json::Value;

/// Add two integers.
// `inline`: a pure computation runs in place, with no hop to the blocking pool.
#[tool(register = false, inline)]
pub fn add(
    /// First addend
    a: i64,
    /// Second addend
    b: i64,
) -> i64 {
    a.wrapping_add(b)
}

/// The floor: `serde_json::from_value` + the function + `serde_json::to_value`, by hand.
pub fn floor_add(args: Value) -> Value {
    let args: AddArgs = serde_json::from_value(args).unwrap();
    serde_json::to_value(add(args.a, args.b)).unwrap()
}

/// `builder` with the audit layer and a rate limit (global and per tool) it never reaches.
pub fn with_audit_and_rate_limit(builder: ToolServerBuilder) -> ToolServerBuilder {
    builder.with_middleware(Audit::new()).with_middleware(
        RateLimit::new()
            .global(Rate::per_second(u32::MAX))
            .per_tool(Rate::per_second(u32::MAX)),
    )
}
