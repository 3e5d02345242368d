use aleph_tools::prelude::*;

#[tool]
fn undocumented(x: u8) -> u8 {
    x
}

fn main() {}
