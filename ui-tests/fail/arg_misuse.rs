use aleph_tools::prelude::*;

/// Misspelled arg key, and a default on an injected parameter.
#[tool]
fn fetch(
    #[arg(defualt = 3)] retries: u8,
    #[arg(default = ToolContext::new())] ctx: &ToolContext,
) {
    let _ = (retries, ctx);
}

fn main() {}
