use aleph_tools::prelude::*;
use serde::Deserialize;

/// A progress report the model writes: the user's own type, named like an injected one.
#[derive(Deserialize, schemars::JsonSchema)]
struct Progress {
    percent: u8,
}

/// Record how far the job is.
#[tool(register = false)]
fn record(progress: Progress) -> u8 {
    progress.percent
}

fn main() {}
