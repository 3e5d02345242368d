//! The cost of one tool search over the quality corpus (784 real MCP tool definitions, all
//! deferred, `tests/search/corpus.json`), with the index built beforehand:
//!
//! - `tool_search/keywords`: a query ranked by BM25;
//! - `tool_search/pattern`: a regular expression matched against every tool's text;
//! - `tool_search/meaning`: a query embedded by all-MiniLM-L6-v2 and ranked by closeness
//!   (needs the model: `bash tests/interop/setup.sh` unpacks it into
//!   `tests/interop/models/all-minilm-l6-v2`; the benchmark is left out without it).
//!
//! Run with `cargo bench -p aleph-tools --features embeddings --bench tool_search`.

#![allow(missing_docs)]

use std::future::IntoFuture;
use std::path::Path;
use std::sync::Arc;

use aleph_tools::builtin::{MiniLm, ToolSearch};
use aleph_tools::prelude::*;
use aleph_tools::{RuntimeTool, ToolDefinition};
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};

fn corpus_server(search: ToolSearch) -> AlephToolServer {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/search/corpus.json");
    let corpus: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(root).expect("the corpus")).unwrap();
    let mut builder = AlephToolServer::builder();
    for tool in corpus {
        let definition = ToolDefinition::new(
            tool["name"].as_str().unwrap(),
            tool["description"].as_str().unwrap(),
            tool["inputSchema"].clone(),
        );
        builder = builder.with_dyn_tool(Arc::new(RuntimeTool::new(
            definition,
            |_args: Value, _ctx: ToolContext| async { Ok(ToolOutput::text("ok")) },
        )));
    }
    builder.with_builtin(search.defer(["*"])).build().unwrap()
}

fn bench(c: &mut Criterion) {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let mut group = c.benchmark_group("tool_search");
    let mut run = |name: &str, server: &AlephToolServer, args: Value| {
        // The first search builds the index (and embeds every tool).
        assert!(
            runtime
                .block_on(server.call("tool_search", args.clone()).into_future())
                .success
        );
        group.bench_function(name, |b| {
            b.iter(|| runtime.block_on(server.call("tool_search", args.clone()).into_future()));
        });
    };
    let keywords = corpus_server(ToolSearch::new());
    run(
        "keywords",
        &keywords,
        json!({ "query": "list the open pull requests on my repo" }),
    );
    run(
        "pattern",
        &keywords,
        json!({ "pattern": "pull_?request|merge" }),
    );
    let model =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/interop/models/all-minilm-l6-v2");
    match MiniLm::load(&model) {
        Ok(model) => run(
            "meaning",
            &corpus_server(ToolSearch::new().embedder(model)),
            json!({ "query": "which hour is it right now over in Japan" }),
        ),
        Err(error) => eprintln!("tool_search/meaning left out: {error}"),
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
