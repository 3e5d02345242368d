//! Argument validation and repair: what the model reads when its arguments are wrong, and
//! what a repairing server fixes on its own.
//!
//! Run with `cargo run -p guide-examples --bin arguments`.

use aleph_tools::prelude::*;
use serde_json::json;

/// How to order results.
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Order {
    /// Newest first
    Newest,
    /// Most relevant first
    Relevance,
}

/// Search the archive.
#[tool(register = false)]
fn search_archive(
    /// What to look for
    query: String,
    /// How many results, 1 to 50
    #[schemars(range(min = 1, max = 50))]
    limit: u32,
    order: Order,
    /// Include drafts
    #[arg(default)]
    drafts: bool,
) -> String {
    let order = match order {
        Order::Newest => "newest",
        Order::Relevance => "relevance",
    };
    format!("{limit} results for `{query}` by {order} (drafts: {drafts})")
}

#[tokio::main]
async fn main() {
    let strict = AlephToolServer::builder()
        .with_tool(SearchArchiveTool)
        .build()
        .unwrap();
    let sent = json!({ "query": "rust", "limit": 500, "order": "oldest" });
    let refused = strict.call("search_archive", sent.clone()).await;
    println!("sent {sent}\nthe model reads:\n{}\n", refused.model_text());
    assert!(!refused.success);

    let repairing = AlephToolServer::builder()
        .with_tool(SearchArchiveTool)
        .with_argument_repair(true)
        .build()
        .unwrap();
    let sent = json!({ "Query": "rust", "limit": "5", "order": "newest", "drafts": "false" });
    let repaired = repairing.call("search_archive", sent.clone()).await;
    println!("sent {sent}\nresult: {}", repaired.model_text());
    for coercion in &repaired.coercions {
        println!(
            "  repaired {}: {:?} (sent {})",
            coercion.pointer, coercion.kind, coercion.original
        );
    }
    assert!(repaired.success);
    assert_eq!(repaired.coercions.len(), 3);
}
