use aleph_tools::prelude::*;

/// A timeout without a unit.
#[tool(timeout = "10")]
fn no_unit() {}

/// A unit nobody knows.
#[tool(timeout = "3days")]
fn odd_unit() {}

/// Zero.
#[tool(timeout = "0s")]
fn zero() {}

fn main() {}
