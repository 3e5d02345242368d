//! Name repair: tool names a model got slightly wrong still reach the tool, and names it got
//! badly wrong come back with the closest real ones.
//!
//! Run with `cargo run -p guide-examples --bin name_repair`.

use aleph_tools::prelude::*;
use serde_json::json;

/// Search the web.
#[tool(register = false)]
fn web_search(query: String) -> String {
    format!("results for {query}")
}

/// Fetch a page.
#[tool(register = false)]
fn web_fetch(url: String) -> String {
    format!("contents of {url}")
}

#[tokio::main]
async fn main() {
    let server = AlephToolServer::builder()
        .with_tool(WebSearchTool)
        .with_tool(WebFetchTool)
        .build()
        .unwrap();
    for name in [
        "web_search",
        "WebSearch",
        "webSearch",
        "web-search",
        "WEB_FETCH",
    ] {
        let result = server
            .call(
                name,
                json!({ "query": "rust", "url": "https://example.com" }),
            )
            .await;
        let repair = result.repair.clone();
        match repair {
            Some(repair) => println!("{name:>12} → {} ({:?})", repair.repaired_name, repair.step),
            None => println!("{name:>12} → exact"),
        }
        assert!(result.success, "{result:?}");
    }
    let unknown = server.call("web_serch", json!({})).await;
    println!("   web_serch → {}", unknown.model_text());
    assert!(!unknown.success);
}
