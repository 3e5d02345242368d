//! `ToolFilter` and confirmation: every wildcard case, listings, refusals, and the
//! confirmation handler's approve, deny and absence.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use aleph_tools::prelude::*;
use aleph_tools::{
    ConfirmationRequest, FilterError, PatternError, ToolErrorKind, ToolServerBuilder,
};
use serde_json::json;

/// Read a file.
#[tool(register = false)]
fn file_read(path: String) -> String {
    path
}

/// Write a file.
#[tool(register = false)]
fn file_write(path: String) -> String {
    path
}

/// Store a memory.
#[tool(register = false)]
fn memory_store() {}

/// Recall a memory.
#[tool(register = false)]
fn memory_recall() {}

/// Run a shell command.
#[tool(register = false)]
fn bash() {}

/// Delete everything; asks first by itself.
#[tool(register = false, confirm)]
fn wipe(
    /// What to wipe
    target: String,
) -> String {
    format!("wiped {target}")
}

fn server() -> AlephToolServer {
    builder().build().unwrap()
}

fn builder() -> ToolServerBuilder {
    AlephToolServer::builder()
        .with_tool(FileReadTool)
        .with_tool(FileWriteTool)
        .with_tool(MemoryStoreTool)
        .with_tool(MemoryRecallTool)
        .with_tool(BashTool)
        .with_tool(WipeTool)
}

const ALL: [&str; 6] = [
    "bash",
    "file_read",
    "file_write",
    "memory_recall",
    "memory_store",
    "wipe",
];

fn offered(filter: &ToolFilter) -> Vec<&'static str> {
    ALL.into_iter().filter(|name| filter.allows(name)).collect()
}

#[test]
fn wildcard_cases() {
    let cases: [(ToolFilter, &[&str]); 9] = [
        (ToolFilter::new(), &ALL),
        (
            ToolFilter::new().block("bash"),
            &[
                "file_read",
                "file_write",
                "memory_recall",
                "memory_store",
                "wipe",
            ],
        ),
        (
            ToolFilter::new().allow("memory_*"),
            &["memory_recall", "memory_store"],
        ),
        (
            ToolFilter::new().allow("*_read").allow("bash"),
            &["bash", "file_read"],
        ),
        (ToolFilter::new().allow("file_????"), &["file_read"]),
        (ToolFilter::new().allow("*"), &ALL),
        (
            ToolFilter::new().allow("memory_*").block("memory_store"),
            &["memory_recall"],
        ),
        // Blocked wins over allowed, whichever pattern is more specific.
        (ToolFilter::new().allow("bash").block("*"), &[]),
        (ToolFilter::new().allow("{bash,wipe}"), &["bash", "wipe"]),
    ];
    for (filter, expected) in cases {
        assert_eq!(offered(&filter), expected, "{filter:?}");
    }
    assert!(offered(&ToolFilter::new().allow("nothing_matches")).is_empty());
    // An empty allowed list offers nothing; no allowed list offers everything.
    let empty_allowed = ToolFilter::from_json(r#"{"allowed": []}"#).unwrap();
    assert!(offered(&empty_allowed).is_empty());
}

#[test]
fn the_config_shape_loads_and_bad_filters_say_why() {
    let filter = ToolFilter::from_json(
        r#"{"tools": {"allowed": ["file_read", "memory_*"], "blocked": ["bash"], "requireConfirmation": ["file_*"]}}"#,
    )
    .unwrap();
    assert!(filter.allows("memory_store"));
    assert!(filter.requires_confirmation("file_read"));
    assert_eq!(
        filter,
        ToolFilter::new()
            .allow("file_read")
            .allow("memory_*")
            .block("bash")
            .confirm("file_*")
    );
    assert_eq!(
        serde_json::to_value(&filter).unwrap(),
        json!({ "allowed": ["file_read", "memory_*"], "blocked": ["bash"], "requireConfirmation": ["file_*"] })
    );

    let bad = [
        (r#"{"tools": {"alowed": ["x"]}}"#, "unknown field `alowed`"),
        (
            r#"{"tools": {"blocked": "bash"}}"#,
            "invalid type: string \"bash\", expected a sequence",
        ),
        (r#"{"tools": "#, "EOF while parsing"),
        ("[1, 2]", "invalid type"),
    ];
    for (json, needle) in bad {
        let err = ToolFilter::from_json(json).unwrap_err();
        assert!(matches!(err, FilterError::Json(_)), "{json}: {err}");
        assert!(err.to_string().contains(needle), "{json}: {err}");
    }
    let err = ToolFilter::from_json(r#"{"blocked": ["file_[read"]}"#).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("the `blocked` pattern `file_[read` is not a valid glob: "),
        "{err}"
    );
}

#[tokio::test]
async fn filtered_tools_leave_listings_and_calls_to_them_are_refused() {
    let s = builder()
        .with_filter(
            ToolFilter::new()
                .allow("file_*")
                .allow("memory_*")
                .block("file_write"),
        )
        .build()
        .unwrap();
    assert_eq!(
        s.tools().names(),
        ["file_read", "memory_recall", "memory_store"]
    );
    let listed: Vec<String> = s
        .tools()
        .definitions()
        .iter()
        .map(|d| d.name.clone())
        .collect();
    assert_eq!(listed, s.tools().names());
    assert!(s.tools().get("bash").is_none());
    assert!(s.contains("bash"), "still served, only not offered");

    let blocked = s.call("file_write", json!({ "path": "x" })).await;
    assert_eq!(blocked.error_kind, Some(ToolErrorKind::PermissionDenied));
    assert_eq!(
        blocked.error.as_deref(),
        Some("permission denied for `file_write`: the tool filter blocks it (`file_write`)")
    );
    let not_allowed = s.call("bash", json!({})).await;
    assert_eq!(
        not_allowed.error.as_deref(),
        Some("permission denied for `bash`: it is not in the tool filter's allowed list")
    );
    // Repair never leads to a hidden tool, and suggestions never name one.
    let repaired = s.call("FileWrite", json!({ "path": "x" })).await;
    let repair = repaired.repair.clone();
    assert_eq!(repair, None);
    assert_eq!(repaired.error_kind, Some(ToolErrorKind::NotFound));
    assert!(!repaired.error.unwrap().contains("file_write"));
    assert!(s.call("file_read", json!({ "path": "a" })).await.success);
}

#[tokio::test]
async fn the_filter_changes_while_serving() {
    let s = server();
    let handle = s.clone();
    assert!(s.call("bash", json!({})).await.success);
    handle.set_filter(ToolFilter::new().block("bash")).unwrap();
    assert!(!s.call("bash", json!({})).await.success);
    assert_eq!(s.filter(), ToolFilter::new().block("bash"));
    let err = handle.set_filter(ToolFilter::new().block("[")).unwrap_err();
    assert!(
        matches!(
            err,
            PatternError {
                list: "blocked",
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(
        s.filter(),
        ToolFilter::new().block("bash"),
        "a bad filter leaves the old one"
    );
    handle.set_filter(ToolFilter::new()).unwrap();
    assert!(s.call("bash", json!({})).await.success);
}

#[tokio::test]
async fn confirmation_without_a_handler_is_refused() {
    let result = server().call("wipe", json!({ "target": "disk" })).await;
    assert_eq!(result.error_kind, Some(ToolErrorKind::PermissionDenied));
    assert!(result.error.unwrap().contains("no confirmation handler"));
}

#[tokio::test]
async fn confirmation_approve_and_deny() {
    let asked = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&asked);
    let s = builder()
        .with_filter(ToolFilter::new().confirm("file_*"))
        .with_confirmation_handler(move |request: ConfirmationRequest| {
            counter.fetch_add(1, Ordering::SeqCst);
            async move {
                if request.arguments["target"] == "disk"
                    || request.arguments["path"] == "/etc/passwd"
                {
                    Confirmation::deny("not that one")
                } else {
                    Confirmation::Approve
                }
            }
        })
        .build()
        .unwrap();
    let approved = s.call("wipe", json!({ "target": "cache" })).await;
    assert_eq!(approved.output, json!("wiped cache"));
    let denied = s.call("wipe", json!({ "target": "disk" })).await;
    assert_eq!(
        denied.error.as_deref(),
        Some("permission denied for `wipe`: the user declined: not that one")
    );
    // The filter's list asks too, and listings say so.
    assert!(s.tools().get("file_read").unwrap().requires_confirmation);
    assert!(!s.tools().get("bash").unwrap().requires_confirmation);
    let denied = s.call("file_read", json!({ "path": "/etc/passwd" })).await;
    assert!(!denied.success);
    assert!(
        s.call("file_read", json!({ "path": "notes.txt" }))
            .await
            .success
    );
    assert!(s.call("bash", json!({})).await.success);
    assert_eq!(asked.load(Ordering::SeqCst), 4, "bash was not asked about");
}

#[tokio::test]
async fn arguments_are_validated_before_anyone_is_asked() {
    let asked = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&asked);
    let s = builder()
        .with_confirmation_handler(move |_request: ConfirmationRequest| {
            counter.fetch_add(1, Ordering::SeqCst);
            async { Confirmation::Approve }
        })
        .build()
        .unwrap();
    let result = s.call("wipe", json!({ "target": 5 })).await;
    assert_eq!(result.error_kind, Some(ToolErrorKind::InvalidArgs));
    assert!(
        result
            .error
            .unwrap()
            .contains("`/target`: expected a string, received the number 5")
    );
    assert_eq!(asked.load(Ordering::SeqCst), 0);
}
