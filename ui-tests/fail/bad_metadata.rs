use aleph_tools::prelude::*;

/// Metadata of the wrong shape.
#[tool(
    title = "  ",
    icon = "icons/search.svg",
    meta = "[1, 2]",
    register = false
)]
fn search() {}

/// Metadata that is not JSON.
#[tool(meta = "{ ui: 1 }", register = false)]
fn find() {}

fn main() {}
