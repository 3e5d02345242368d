//! The tools the call benchmarks measure, the hand-written floors they compare them with,
//! and the layered server they measure beside the plain one.
//!
//! The floor is what a program without a tool server would write: the arguments read into
//! the arguments struct (from text with `serde_json::from_str`, or from a `Value` with
//! `serde_json::from_value`), the function, and the output written back with
//! `serde_json::to_string`. Its arguments structs derive `Deserialize`, as such a program's
//! do, so the floor does not move with the reader `#[tool]` writes.

use aleph_tools::ToolServerBuilder;
use aleph_tools::middleware::Audit;
#[cfg(feature = "rate-limit")]
use aleph_tools::middleware::{Rate, RateLimit};
use aleph_tools::prelude::*;
use serde::Deserialize;
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

/// A point on the plane.
#[derive(Deserialize, schemars::JsonSchema)]
pub struct Point {
    /// Horizontal position
    pub x: f64,
    /// Vertical position
    pub y: f64,
}

/// Distance between two points.
#[tool(register = false, inline)]
pub fn distance(
    /// Where to measure from
    from: Point,
    /// Where to measure to
    to: Point,
) -> f64 {
    (to.x - from.x).hypot(to.y - from.y)
}

/// `add`'s arguments as a model sends them.
pub const ADD_ARGS: &str = r#"{"a":20,"b":22}"#;

/// `distance`'s arguments as a model sends them.
pub const DISTANCE_ARGS: &str = r#"{"from":{"x":1.5,"y":2.0},"to":{"x":4.5,"y":6.0}}"#;

/// `add`'s arguments, as a program without a tool server declares them.
#[derive(Deserialize)]
struct FloorAddArgs {
    a: i64,
    b: i64,
}

/// `distance`'s arguments, as a program without a tool server declares them.
#[derive(Deserialize)]
struct FloorDistanceArgs {
    from: Point,
    to: Point,
}

/// The floor for `add`.
pub fn floor_add(args: &str) -> String {
    let args: FloorAddArgs = serde_json::from_str(args).unwrap();
    serde_json::to_string(&add(args.a, args.b)).unwrap()
}

/// The floor for `distance`.
pub fn floor_distance(args: &str) -> String {
    let args: FloorDistanceArgs = serde_json::from_str(args).unwrap();
    serde_json::to_string(&distance(args.from, args.to)).unwrap()
}

/// The floor for `add`, from a `Value`.
pub fn floor_add_value(args: Value) -> String {
    let args: FloorAddArgs = serde_json::from_value(args).unwrap();
    serde_json::to_string(&add(args.a, args.b)).unwrap()
}

/// The floor for `distance`, from a `Value`.
pub fn floor_distance_value(args: Value) -> String {
    let args: FloorDistanceArgs = serde_json::from_value(args).unwrap();
    serde_json::to_string(&distance(args.from, args.to)).unwrap()
}

/// A server with both tools, without and with `with_audit_and_rate_limit`.
pub fn servers() -> (AlephToolServer, AlephToolServer) {
    let tools = || {
        AlephToolServer::builder()
            .with_tool(AddTool)
            .with_tool(DistanceTool)
    };
    (
        tools().build().unwrap(),
        with_audit_and_rate_limit(tools()).build().unwrap(),
    )
}

/// `builder` with the audit layer and (feature `rate-limit`) a rate limit, global and per
/// tool, it never reaches.
pub fn with_audit_and_rate_limit(builder: ToolServerBuilder) -> ToolServerBuilder {
    let builder = builder.with_middleware(Audit::new());
    #[cfg(feature = "rate-limit")]
    let builder = builder.with_middleware(
        RateLimit::new()
            .global(Rate::per_second(u32::MAX))
            .per_tool(Rate::per_second(u32::MAX)),
    );
    builder
}
