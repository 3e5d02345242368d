use aleph_tools::prelude::*;

/// A body that does not parse is the compiler's to report, at its place; the tool is
/// still read from the signature.
#[tool]
fn add(
    /// The first number
    a: i64,
    /// The second number
    b: i64,
) -> i64 {
    let sum = a + ;
    sum + b
}

fn main() {}
