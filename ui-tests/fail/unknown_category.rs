use aleph_tools::prelude::*;

/// Misspelled category.
#[tool(category = Extention)]
fn plugin_tool() {}

fn main() {}
