//! Tool search: 1,000 tools (the 784 real MCP tool definitions of the quality corpus, and
//! the first 216 again under other names), with and without deferral. Prints the size of
//! each provider's tools array both ways, then finds tools by keywords, by pattern and, when
//! the model is there, by meaning.
//!
//! Run with `cargo run -p guide-examples --bin tool_search`. Ranking by meaning needs
//! all-MiniLM-L6-v2: `bash tests/interop/setup.sh` unpacks it into
//! `tests/interop/models/all-minilm-l6-v2`, or name another directory in
//! `ALEPH_SEARCH_MODEL`.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use aleph_tools::builtin::{MiniLm, ToolSearch};
use aleph_tools::prelude::*;
use aleph_tools::{RuntimeTool, ToolDefinition};
use serde_json::{Value, json};

const TOOLS: usize = 1000;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// 1,000 tool definitions from the corpus.
fn definitions() -> Vec<ToolDefinition> {
    let text = std::fs::read_to_string(workspace().join("tests/search/corpus.json"))
        .expect("tests/search/corpus.json");
    let corpus: Vec<Value> = serde_json::from_str(&text).expect("the corpus is JSON");
    (0..TOOLS)
        .map(|i| {
            let tool = &corpus[i % corpus.len()];
            let name = tool["name"].as_str().unwrap();
            let name = if i < corpus.len() {
                name.to_owned()
            } else {
                format!("{name}_2")
            };
            ToolDefinition::new(
                name,
                tool["description"].as_str().unwrap(),
                tool["inputSchema"].clone(),
            )
        })
        .collect()
}

// ANCHOR: server
fn server(search: Option<ToolSearch>) -> AlephToolServer {
    let mut builder = AlephToolServer::builder();
    for definition in definitions() {
        builder = builder.with_dyn_tool(Arc::new(RuntimeTool::new(
            definition,
            |_args: Value, _ctx: ToolContext| async { Ok(ToolOutput::text("done")) },
        )));
    }
    if let Some(search) = search {
        // Every tool waits for a search; only tool_search and call_tool are listed.
        builder = builder.with_builtin(search.defer(["*"]));
    }
    builder.build().expect("the corpus's tools are valid")
}
// ANCHOR_END: server

async fn show(server: &AlephToolServer, how: &str, args: Value) {
    let started = Instant::now();
    let found = server.call("tool_search", args.clone()).await;
    let names: Vec<&str> = found.output["tools"]
        .as_array()
        .map(|tools| tools.iter().filter_map(|t| t["name"].as_str()).collect())
        .unwrap_or_default();
    println!(
        "{how:<9} {args} -> {names:?} ({} ms)",
        started.elapsed().as_millis()
    );
}

#[tokio::main]
async fn main() {
    let all = server(None);
    let deferred = server(Some(ToolSearch::new()));
    println!("tools arrays for {TOOLS} tools (bytes, estimated tokens):");
    for (before, after) in all.tools().sizes().iter().zip(deferred.tools().sizes()) {
        println!(
            "  {:<17} all listed: {:>4} tools {:>9} B {:>7} tokens | deferred: {:>4} tools {:>6} B {:>5} tokens",
            before.provider.name(),
            before.tools,
            before.bytes,
            before.tokens,
            after.tools,
            after.bytes,
            after.tokens,
        );
    }
    println!(
        "(Anthropic's deferred array holds every tool marked defer_loading: its API keeps them from the model.)"
    );

    println!("\nsearches:");
    show(
        &deferred,
        "keywords",
        json!({ "query": "list the open pull requests" }),
    )
    .await;
    show(
        &deferred,
        "keywords",
        json!({ "query": "which hour is it in Japan" }),
    )
    .await;
    show(&deferred, "pattern", json!({ "pattern": "^maps_" })).await;

    let model = std::env::var_os("ALEPH_SEARCH_MODEL").map_or_else(
        || workspace().join("tests/interop/models/all-minilm-l6-v2"),
        PathBuf::from,
    );
    match MiniLm::load(&model) {
        Ok(model) => {
            let by_meaning = server(Some(ToolSearch::new().embedder(model)));
            let started = Instant::now();
            show(
                &by_meaning,
                "meaning",
                json!({ "query": "which hour is it in Japan" }),
            )
            .await;
            println!(
                "          (the first search embedded {TOOLS} tools in {:.1} s; later ones reuse them)",
                started.elapsed().as_secs_f64()
            );
            show(
                &by_meaning,
                "meaning",
                json!({ "query": "put a thumbs-up on that chat post" }),
            )
            .await;
        }
        Err(error) => println!("meaning: left out ({error})"),
    }
}
