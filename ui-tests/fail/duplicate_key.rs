use aleph_tools::prelude::*;

/// The same key twice.
#[tool(name = "a", name = "b")]
fn twice() {}

fn main() {}
