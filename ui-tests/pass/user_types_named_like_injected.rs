//! The user's own types named `State`, `Progress` and `Caller` are arguments for the model:
//! by `#[arg(model)]`, by a path that is not aleph_tools', or (for `State`) by having no type
//! parameter. The injected types keep working beside them, bare and by full path.

use aleph_tools::prelude::*;
use serde::Deserialize;
use serde_json::json;

mod models {
    /// Who the model says is calling.
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    pub struct Caller {
        pub name: String,
    }
}

/// A job's state, as the model reports it.
#[derive(Deserialize, schemars::JsonSchema)]
struct State {
    done: bool,
}

/// How far a job is.
#[derive(Deserialize, schemars::JsonSchema)]
#[allow(dead_code)]
struct Progress {
    percent: u8,
}

/// Record a job's report.
#[tool(register = false)]
fn report(
    /// Whether the job is done
    state: State,
    /// How far it is
    #[arg(model)]
    progress: Progress,
    /// Who reports
    caller: models::Caller,
    injected: aleph_tools::Progress,
    cancel: ::aleph_tools::CancellationToken,
) -> String {
    let _ = (injected, cancel);
    format!("{} {} {}", caller.name, progress.percent, state.done)
}

fn main() {
    let schema = ReportTool.definition().parameters;
    assert_eq!(schema["required"], json!(["state", "progress", "caller"]));
}
