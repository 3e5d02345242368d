//! Filters and confirmation: which tools a model is offered, and a person approving the
//! calls that need it.
//!
//! Run with `cargo run -p guide-examples --bin filters`.

use aleph_tools::ConfirmationRequest;
use aleph_tools::prelude::*;
use serde_json::json;

/// Read a file.
#[tool(register = false, read_only)]
fn file_read(path: String) -> String {
    format!("contents of {path}")
}

/// Delete a file.
#[tool(register = false, destructive)]
fn file_delete(path: String) -> String {
    format!("deleted {path}")
}

/// Run a shell command.
#[tool(register = false)]
fn bash(command: String) -> String {
    format!("ran {command}")
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let filter = ToolFilter::from_json(
        r#"{ "tools": { "allowed": ["file_*"], "blocked": ["bash"], "requireConfirmation": ["file_delete"] } }"#,
    )?;
    let server = AlephToolServer::builder()
        .with_tool(FileReadTool)
        .with_tool(FileDeleteTool)
        .with_tool(BashTool)
        .with_filter(filter)
        .with_confirmation_handler(|request: ConfirmationRequest| async move {
            // A real program asks a person; this one approves anything outside /etc.
            let path = request.arguments["path"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            if path.starts_with("/etc") {
                Confirmation::Deny {
                    reason: format!("{path} is a system file"),
                }
            } else {
                Confirmation::Approve
            }
        })
        .build()
        .unwrap();
    println!("offered: {:?}", server.tools().names());
    let blocked = server.call("bash", json!({ "command": "ls" })).await;
    println!("bash: {}", blocked.model_text());
    let approved = server
        .call("file_delete", json!({ "path": "/tmp/old.log" }))
        .await;
    println!("delete /tmp/old.log: {}", approved.model_text());
    let denied = server
        .call("file_delete", json!({ "path": "/etc/hosts" }))
        .await;
    println!("delete /etc/hosts: {}", denied.model_text());
    assert!(!blocked.success && approved.success && !denied.success);
    Ok(())
}
