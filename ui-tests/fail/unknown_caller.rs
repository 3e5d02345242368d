use aleph_tools::prelude::*;

/// Misspelled caller.
#[tool(callers = [human, code_exec])]
fn sandboxed() {}

fn main() {}
