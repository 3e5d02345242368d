use aleph_tools::prelude::*;

/// Destructures its argument in the signature.
#[tool]
fn area((width, height): (f64, f64)) -> f64 {
    width * height
}

fn main() {}
