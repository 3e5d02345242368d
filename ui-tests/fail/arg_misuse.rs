use aleph_tools::prelude::*;

/// Misspelled arg key, a default on an injected parameter, and a parameter both injected and
/// filled in by the model.
#[tool]
fn fetch(
    #[arg(defualt = 3)] retries: u8,
    #[arg(default = ToolContext::new())] ctx: &ToolContext,
    #[arg(model, inject)] progress: Progress,
) {
    let _ = (retries, ctx, progress);
}

fn main() {}
