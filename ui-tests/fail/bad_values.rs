use aleph_tools::prelude::*;

/// Every value of the wrong shape.
#[tool(
    name = search,
    tags = [1, 2],
    read_only = "yes",
    timeout = 10,
    register = "no",
    description,
    category(Builtin),
)]
fn search() {}

fn main() {}
