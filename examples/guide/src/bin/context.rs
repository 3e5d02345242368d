//! The call context: paths resolved inside allowed directories, progress streamed to a
//! handler, and long output shortened for the model.
//!
//! Run with `cargo run -p guide-examples --bin context`.

use aleph_tools::middleware::{Listen, ToolProgressHandler};
use aleph_tools::prelude::*;
use serde_json::json;

/// Say where a path resolves to.
#[tool(register = false)]
fn locate(path: String, ctx: &ToolContext) -> Result<String, ToolError> {
    Ok(ctx.resolve_path(&path)?.display().to_string())
}

/// Count to a number, reporting progress every ten.
#[tool(register = false)]
async fn count(to: u32, progress: Progress) -> Vec<u32> {
    for i in 1..=to {
        if i % 10 == 0 {
            progress.chunk(format!("{i} "));
            tokio::task::yield_now().await;
        }
    }
    (1..=to).collect()
}

struct Printer;

impl ToolProgressHandler for Printer {
    fn on_tool_start(&self, tool: &str, _arguments: &str) {
        println!("  [{tool}] started");
    }

    fn on_tool_streaming_chunk(&self, tool: &str, chunk: &str) {
        println!("  [{tool}] chunk {chunk:?}");
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = std::env::temp_dir().join("aleph-tools-context-example");
    std::fs::create_dir_all(root.join("notes"))?;
    let server = AlephToolServer::builder()
        .with_tool(LocateTool)
        .with_tool(CountTool)
        .with_working_dir(&root)
        .with_allowed_paths([&root])
        .with_middleware(Listen::new(Printer))
        .with_output_limit(40)
        .build()
        .unwrap();
    let inside = server
        .call("locate", json!({ "path": "notes/today.md" }))
        .await;
    println!("notes/today.md → {}", inside.model_text());
    let outside = server
        .call("locate", json!({ "path": "../../etc/passwd" }))
        .await;
    println!("../../etc/passwd → {}", outside.model_text());
    let counted = server.call("count", json!({ "to": 30 })).await;
    println!(
        "count to 30, as the model reads it: {}",
        counted.model_text()
    );
    assert!(inside.success && !outside.success);
    assert_eq!(counted.output.as_array().map(Vec::len), Some(30));
    Ok(())
}
