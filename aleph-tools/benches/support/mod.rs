//! The tool both call benchmarks measure, and the hand-written floor they compare it with.

use aleph_tools::prelude::*;
use serde_json::Value;

/// Add two integers.
#[tool(register = false)]
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
