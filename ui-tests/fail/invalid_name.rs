use aleph_tools::prelude::*;

/// A name with spaces and dots.
#[tool(name = "web search.v2")]
fn web_search() {}

fn main() {}
