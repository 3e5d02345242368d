use aleph_tools::prelude::*;

/// Misspelled category.
#[tool(category = Plugn)]
fn plugin_tool() {}

fn main() {}
