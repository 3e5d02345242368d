//! The built-in tools: files in a workspace, a shell, Python, the meta tools, `web_fetch`
//! refusing to reach a private address, and a Markdown skill edited while it is served.
//!
//! Run with `cargo run -p guide-examples --bin builtin`.

use std::time::Duration;

use aleph_tools::builtin::{CodeExec, FileOps, MetaTools, Skills, WebFetch};
use aleph_tools::prelude::*;
use aleph_tools::{Confirmation, ConfirmationRequest};
use serde_json::{Value, json};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // A workspace of its own: the only directory the tools may touch.
    let workspace = std::env::temp_dir().join(format!("aleph-builtin-{}", std::process::id()));
    std::fs::create_dir_all(&workspace)?;
    // A skills directory beside it, with one skill.
    let skills = workspace.join("skills");
    write_skill(&skills, "Review {{path}} for unclear names.")?;

    let server = AlephToolServer::builder()
        .with_builtin(FileOps::new().max_read_bytes(64 * 1024))
        .with_builtin(CodeExec::new().bash_only())
        .with_builtin(CodeExec::new().output_limit(8 * 1024))
        .with_builtin(WebFetch::default())
        .with_builtin(MetaTools::default())
        .with_builtin(Skills::new(&skills).debounce(Duration::from_millis(100)))
        .with_working_dir(&workspace)
        .with_allowed_paths([&workspace])
        // file_write and file_delete need confirmation: approve every call here, as a
        // person answering "yes" would.
        .with_confirmation_handler(|request: ConfirmationRequest| async move {
            println!("  (approving {})", request.tool);
            Confirmation::Approve
        })
        .build()?;

    let calls: [(&str, Value); 10] = [
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
        ("list_tools", json!({ "category": "skill" })),
        ("review", json!({ "path": "notes/plan.md" })),
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

    // Edit the skill while it is served: the next call reads the new text.
    let mut changes = server.watch_tools();
    changes.mark_unchanged();
    write_skill(
        &skills,
        "Review {{path}} for unclear names and missing tests.",
    )?;
    tokio::time::timeout(Duration::from_secs(10), changes.changed()).await??;
    let result = server
        .call("review", json!({ "path": "notes/plan.md" }))
        .await;
    println!("review, after the edit: {}", result.model_text());

    std::fs::remove_dir_all(&workspace)?;
    Ok(())
}

/// Writes `skills/review/SKILL.md` whole (under another name, then renamed, so the watcher
/// never reads half a file).
fn write_skill(skills: &std::path::Path, body: &str) -> std::io::Result<()> {
    let dir = skills.join("review");
    std::fs::create_dir_all(&dir)?;
    let text = format!(
        "---\ndescription: How to review a file.\narguments:\n  - name: path\n---\n{body}\n"
    );
    std::fs::write(dir.join(".SKILL.md.new"), text)?;
    std::fs::rename(dir.join(".SKILL.md.new"), dir.join("SKILL.md"))
}
