//! Name repair: each step, ambiguity, and what is never repaired.

use aleph_tools::ToolServerBuilder;
use aleph_tools::prelude::*;
use aleph_tools::{RepairStep, ToolErrorKind};
use serde_json::json;

/// Search the web.
#[tool(register = false)]
fn web_search(query: String) -> String {
    query
}

/// Fetch a file.
#[tool(register = false)]
fn get_mp3_file() -> &'static str {
    "mp3"
}

/// Read the key.
#[tool(register = false)]
fn key() -> &'static str {
    "key"
}

/// Kebab-named.
#[tool(register = false, name = "delete-file")]
fn delete_file() -> &'static str {
    "deleted"
}

fn server() -> AlephToolServer {
    builder().build().unwrap()
}

fn builder() -> ToolServerBuilder {
    AlephToolServer::builder()
        .with_tool(WebSearchTool)
        .with_tool(GetMp3FileTool)
        .with_tool(KeyTool)
        .with_tool(DeleteFileTool)
}

#[tokio::test]
async fn exact_names_need_no_repair() {
    let result = server().call("web_search", json!({ "query": "q" })).await;
    assert!(result.success);
    assert_eq!(result.repair, None);
}

#[tokio::test]
async fn each_repair_step() {
    let s = server();
    let cases = [
        ("Web_Search", "web_search", RepairStep::CaseInsensitive),
        ("WEB_SEARCH", "web_search", RepairStep::CaseInsensitive),
        ("WebSearch", "web_search", RepairStep::SnakeCase),
        ("webSearch", "web_search", RepairStep::SnakeCase),
        ("web-search", "web_search", RepairStep::SnakeCase),
        ("web search", "web_search", RepairStep::SnakeCase),
        ("getMP3File", "get_mp3_file", RepairStep::SnakeCase),
        ("GetMp3File", "get_mp3_file", RepairStep::SnakeCase),
        ("DELETE-FILE", "delete-file", RepairStep::CaseInsensitive),
        ("delete_file", "delete-file", RepairStep::SnakeCase),
        ("deleteFile", "delete-file", RepairStep::SnakeCase),
        // U+212A KELVIN SIGN lowercases to an ASCII `k`.
        ("\u{212A}EY", "key", RepairStep::CaseInsensitive),
    ];
    for (sent, served, step) in cases {
        let result = s.call(sent, json!({ "query": "q" })).await;
        let repair = result.repair.clone();
        assert!(result.success, "{sent}: {:?}", result.error);
        let repair = repair.unwrap_or_else(|| panic!("{sent} was not repaired"));
        assert_eq!(repair.original_name, sent);
        assert_eq!(repair.repaired_name, served, "{sent}");
        assert_eq!(repair.step, step, "{sent}");
    }
}

#[tokio::test]
async fn plain_calls_repair_too() {
    let result = server().call("WebSearch", json!({ "query": "rust" })).await;
    assert_eq!(result.output, json!("rust"));
}

#[tokio::test]
async fn unknown_names_list_the_closest_tools() {
    let s = server();
    let result = s.call("web_serch", json!({})).await;
    let repair = result.repair.clone();
    assert_eq!(repair, None);
    assert_eq!(result.error_kind, Some(ToolErrorKind::NotFound));
    assert_eq!(
        result.error.as_deref(),
        Some("unknown tool `web_serch`; did you mean `web_search`?")
    );
    let far = s.call("translate", json!({})).await;
    assert_eq!(far.error.as_deref(), Some("unknown tool `translate`"));
}

#[tokio::test]
async fn ambiguous_repairs_are_refused_with_both_names() {
    /// Upper.
    #[tool(register = false, name = "Search")]
    fn upper() {}
    /// Lower.
    #[tool(register = false, name = "search")]
    fn lower() {}
    let s = AlephToolServer::builder()
        .with_tool(UpperTool)
        .with_tool(LowerTool)
        .build()
        .unwrap();
    assert!(
        s.call("Search", json!({})).await.success,
        "exact names still win"
    );
    let result = s.call("SEARCH", json!({})).await;
    let repair = result.repair.clone();
    assert_eq!(repair, None);
    let message = result.error.unwrap();
    assert!(
        message.starts_with("unknown tool `SEARCH`; did you mean one of"),
        "{message}"
    );
    assert!(
        message.contains("`Search`") && message.contains("`search`"),
        "{message}"
    );
}

#[tokio::test]
async fn hostile_names_fail_cleanly() {
    let s = server();
    let long = "x".repeat(100_000);
    for name in [
        "",
        " ",
        "\0",
        "../web_search",
        "web.search",
        "web_search\n",
        "🦀",
        long.as_str(),
    ] {
        let result = s.call(name, json!({ "query": "q" })).await;
        let repair = result.repair.clone();
        assert_eq!(repair, None, "{name:?}");
        assert_eq!(result.error_kind, Some(ToolErrorKind::NotFound), "{name:?}");
    }
    // Extra separators are still the same words.
    let result = s.call("web__search_", json!({ "query": "q" })).await;
    let repair = result.repair.clone();
    assert!(result.success);
    assert_eq!(repair.unwrap().step, RepairStep::SnakeCase);
}
