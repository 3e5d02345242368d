use aleph_tools::prelude::*;

struct Handle;

/// Its output cannot be turned into JSON.
#[tool]
fn open() -> Handle {
    Handle
}

fn main() {}
