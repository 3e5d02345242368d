use aleph_tools::prelude::*;

/// Hides its output type.
#[tool]
fn numbers() -> impl serde::Serialize {
    vec![1, 2, 3]
}

fn main() {}
