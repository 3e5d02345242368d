use std::time::Duration;

use aleph_tools::prelude::*;
use aleph_tools::ToolAnnotations;

/// Delete a file.
#[tool(
    name = "delete-file",
    description = "Delete one file from the workspace.",
    title = "Delete file",
    icon = "https://example.com/trash.svg",
    icon = "data:image/png;base64,iVBORw0KGgo=",
    meta = r#"{"ui": {"color": "red"}}"#,
    tags = ["fs", "danger"],
    category = Plugin,
    confirm,
    read_only = false,
    destructive,
    idempotent,
    open_world = false,
    timeout = "1m30s",
    example = r#"{"path": "notes.txt"}"#,
    example = r#"{"path": "old/log.txt"}"#,
    callers = [human, code_execution],
    strict,
    register = false,
    crate = aleph_tools,
)]
async fn delete_file(
    /// Path relative to the workspace
    path: String,
) -> Result<(), std::io::Error> {
    let _ = path;
    Ok(())
}

/// A string category and a single-string tag work too; a sync tool may run in place.
#[tool(category = "mcp", tags = "one", callers = code_execution, register = true, inline)]
fn mcp_like() {}

fn main() {
    let def = DeleteFileTool.definition();
    assert_eq!(def.name, "delete-file");
    assert_eq!(def.description, "Delete one file from the workspace.");
    assert_eq!(def.title.as_deref(), Some("Delete file"));
    assert_eq!(
        def.icons,
        [
            aleph_tools::Icon::new("https://example.com/trash.svg"),
            aleph_tools::Icon::new("data:image/png;base64,iVBORw0KGgo="),
        ]
    );
    assert_eq!(def.meta.unwrap()["ui"]["color"], "red");
    assert_eq!(def.tags, ["fs", "danger"]);
    assert_eq!(def.category, ToolCategory::Plugin);
    assert!(def.requires_confirmation);
    assert_eq!(
        def.annotations,
        ToolAnnotations::NONE.read_only(false).destructive(true).idempotent(true).open_world(false)
    );
    assert_eq!(def.timeout, Some(Duration::from_secs(90)));
    assert_eq!(def.examples.len(), 2);
    assert_eq!(def.allowed_callers, [Caller::Human, Caller::CodeExecution]);
    assert!(def.strict);
    assert_eq!(def.parameters["additionalProperties"], false);
    assert!(aleph_tools::registry::registered_tools().iter().all(|r| r.name() != "delete-file"));

    let def = McpLikeTool.definition();
    assert_eq!(def.category, ToolCategory::Mcp);
    assert_eq!(def.tags, ["one"]);
    assert_eq!(def.allowed_callers, [Caller::CodeExecution]);
    assert!(aleph_tools::registry::registered_tools().iter().any(|r| r.name() == "mcp_like"));
}
