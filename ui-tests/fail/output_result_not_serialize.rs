use aleph_tools::prelude::*;

struct Handle;

/// Its output, inside a Result, cannot be turned into JSON.
#[tool]
fn open() -> Result<Handle, String> {
    Ok(Handle)
}

fn main() {}
