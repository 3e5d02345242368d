use aleph_tools::prelude::*;

/// A type the model cannot send: it has a schema but no `Deserialize`.
#[derive(schemars::JsonSchema)]
struct Point {
    x: i64,
}

/// Plot a point.
#[tool(register = false)]
fn plot(point: Point) -> i64 {
    point.x
}

fn main() {}
