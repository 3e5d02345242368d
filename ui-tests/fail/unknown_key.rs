use aleph_tools::prelude::*;

/// Misspelled key.
#[tool(nmae = "search", read_olny)]
fn search() {}

fn main() {}
