use aleph_tools::prelude::*;

/// Says it returns a `Result`, and does not.
#[tool(register = false, result)]
fn count() -> u32 {
    1
}

fn main() {}
