use aleph_tools::prelude::*;

/// `inline` is for sync functions.
#[tool(inline)]
async fn wait() {}

fn main() {}
