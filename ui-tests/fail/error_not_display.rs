use aleph_tools::prelude::*;

#[derive(Debug)]
struct Opaque;

/// Its error cannot be shown to the model.
#[tool]
fn fails() -> Result<u8, Opaque> {
    Err(Opaque)
}

fn main() {}
