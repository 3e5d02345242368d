//! The built-in tools: files in a workspace, a shell, Python, the meta tools, and `web_fetch`
//! refusing to reach a private address.
//!
//! Run with `cargo run -p guide-examples --bin builtin`.

use aleph_tools::builtin::{CodeExec, FileOps};
use aleph_tools::prelude::*;
use aleph_tools::{Confirmation, ConfirmationRequest};
use serde_json::{Value, json};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // A workspace of its own: the only directory the tools may touch.
    let workspace = std::env::temp_dir().join(format!("aleph-builtin-{}", std::process::id()));
    std::fs::create_dir_all(&workspace)?;

    let server = AlephToolServer::builder()
        .with_builtin(FileOps::new().max_read_bytes(64 * 1024))
        .with_bash()
        .with_builtin(CodeExec::new().output_limit(8 * 1024))
        .with_web_fetch()
        .with_meta_tools()
        .with_working_dir(&workspace)
        .with_allowed_paths([&workspace])
        // file_write and file_delete need confirmation: approve every call here, as a
        // person answering "yes" would.
        .with_confirmation_handler(|request: ConfirmationRequest| async move {
            println!("  (approving {})", request.tool);
            Confirmation::Approve
        })
        .build()?;

    let calls: [(&str, Value); 9] = [
        (
            "file_write",
            json!({ "path": "notes/plan.md", "content": "# Plan\n- write tools\n- test tools\n" }),
        ),
        (
            "file_edit",
            json!({ "path": "notes/plan.md", "old_text": "- test tools", "new_text": "- test them twice" }),
        ),
        ("file_read", json!({ "path": "notes/plan.md" })),
        ("file_search", json!({ "query": "twice" })),
        ("file_read", json!({ "path": "../../etc/passwd" })),
        ("bash", json!({ "command": "cd .. && wc -l notes/plan.md" })),
        (
            "code_exec",
            json!({ "language": "python", "code": "print(sum(i * i for i in range(10)))" }),
        ),
        ("list_tools", json!({})),
        (
            "web_fetch",
            json!({ "url": "http://169.254.169.254/latest/meta-data" }),
        ),
    ];
    for (tool, args) in calls {
        let result = server.call(tool, args).await;
        println!("{tool}: {}", if result.success { "ok" } else { "refused" });
        let text = result.model_text();
        for line in text.lines().take(6) {
            let line: String = line.chars().take(150).collect();
            println!("  {line}");
        }
    }

    std::fs::remove_dir_all(&workspace)?;
    Ok(())
}
