use aleph_tools::prelude::*;

/// A type without a schema: the model could not be told its shape.
#[derive(serde::Deserialize)]
struct Point {
    x: i64,
}

/// Plot a point.
#[tool(register = false)]
fn plot(point: Point) -> i64 {
    point.x
}

fn main() {}
