//! `ToolContext::resolve_path`: a path-traversal corpus with zero escapes.

use std::path::{Path, PathBuf};

use aleph_tools::ToolErrorKind;
use aleph_tools::prelude::*;
use aleph_tools_tests::Tree;
use serde_json::json;

fn ctx(s: &Tree) -> ToolContext {
    ToolContext::new()
        .with_working_dir(&s.root)
        .with_allowed_paths([&s.root])
}

#[test]
fn paths_inside_resolve_to_canonical_paths_inside() {
    let s = Tree::new();
    let ctx = ctx(&s);
    let inside: Vec<(String, PathBuf)> = vec![
        ("docs/readme.md".into(), s.root.join("docs/readme.md")),
        ("./docs/./readme.md".into(), s.root.join("docs/readme.md")),
        (
            "docs/deep/../readme.md".into(),
            s.root.join("docs/readme.md"),
        ),
        (
            "docs/日本語 ファイル.txt".into(),
            s.root.join("docs/日本語 ファイル.txt"),
        ),
        (
            "new_dir/new_file.txt".into(),
            s.root.join("new_dir/new_file.txt"),
        ),
        (
            s.root.join("docs").display().to_string(),
            s.root.join("docs"),
        ),
        (".".into(), s.root.clone()),
        #[cfg(unix)]
        ("link_in/readme.md".into(), s.root.join("docs/readme.md")),
    ];
    for (given, expected) in inside {
        let resolved = ctx
            .resolve_path(&given)
            .unwrap_or_else(|e| panic!("{given}: {e}"));
        assert_eq!(resolved, expected, "{given}");
        assert!(resolved.starts_with(&s.root));
    }
}

#[test]
fn a_traversal_corpus_never_escapes() {
    let s = Tree::new();
    let ctx = ctx(&s);
    let corpus = s.corpus();
    for given in &corpus {
        match ctx.resolve_path(given) {
            Ok(resolved) => panic!("{given:?} escaped to {}", resolved.display()),
            Err(err) => {
                let kind = err.kind();
                assert!(
                    matches!(
                        kind,
                        ToolErrorKind::PermissionDenied
                            | ToolErrorKind::InvalidArgs
                            | ToolErrorKind::Execution
                    ),
                    "{given:?}: {err}"
                );
            }
        }
    }
    assert!(corpus.len() >= 20);
}

#[test]
fn errors_say_what_is_wrong() {
    let s = Tree::new();
    let ctx = ctx(&s);
    let outside = ctx.resolve_path("../outside/secret.txt").unwrap_err();
    assert!(
        outside
            .to_string()
            .contains("is outside the allowed directories"),
        "{outside}"
    );
    let nul = ctx.resolve_path("a\0b").unwrap_err();
    assert!(
        nul.to_string()
            .contains(r#"expected a path without NUL bytes, received the path "a\0b""#),
        "{nul}"
    );
    let long = ctx.resolve_path("a".repeat(5000)).unwrap_err();
    assert!(
        long.to_string()
            .contains("expected a path of at most 4096 bytes, received a path of 5000 bytes"),
        "{long}"
    );
    let empty = ctx.resolve_path("").unwrap_err();
    assert!(
        empty
            .to_string()
            .contains("expected a file or directory path, received an empty path"),
        "{empty}"
    );
}

#[test]
fn without_allowed_directories_paths_only_resolve() {
    let s = Tree::new();
    let open = ToolContext::new().with_working_dir(&s.root);
    assert_eq!(
        open.resolve_path("../outside/secret.txt").unwrap(),
        s.outside.join("secret.txt")
    );
    assert!(open.allowed_paths().is_empty());
}

#[tokio::test]
async fn tools_resolve_paths_against_the_server_settings() {
    /// Read a file inside the workspace.
    #[tool(register = false)]
    fn read(path: String, ctx: &ToolContext) -> Result<String, ToolError> {
        let path = ctx.resolve_path(Path::new(&path))?;
        std::fs::read_to_string(path).map_err(ToolError::execution)
    }
    let s = Tree::new();
    let server = AlephToolServer::builder()
        .with_tool(ReadTool)
        .with_working_dir(&s.root)
        .with_allowed_paths([&s.root])
        .build()
        .unwrap();
    assert_eq!(
        server
            .call("read", json!({ "path": "docs/readme.md" }))
            .await
            .output,
        json!("line one\nline two\nline three\n")
    );
    let escape = server
        .call("read", json!({ "path": "../outside/secret.txt" }))
        .await;
    assert_eq!(escape.error_kind, Some(ToolErrorKind::PermissionDenied));
    assert!(
        escape
            .error
            .unwrap()
            .starts_with("permission denied for `read`: the path")
    );
}
