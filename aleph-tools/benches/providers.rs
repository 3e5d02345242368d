//! The cost of the provider layer:
//!
//! - `round_trip/server_call`: one `add` call through `AlephToolServer::call`;
//! - `round_trip/<provider>`: the same call as a model response of each provider, through
//!   `run_tool_calls` (parse the response, run the call, build the result messages);
//! - `tools_for/<provider>`: the tools array for a server of two tools, one of them with
//!   nested, optional and enum arguments, asked for again (the array is kept until the
//!   tools or the filter change);
//! - `tools_for_1000/{built,again}`: the OpenAI chat array of 1,000 tools, built (the filter
//!   replaced before each call, which drops the kept arrays) and asked for again.
//!
//! Run with `cargo bench -p aleph-tools --bench providers`. The tools never wait, so each
//! future is polled once, with no executor in the measurement.

#![allow(missing_docs)]

#[allow(dead_code, reason = "this benchmark uses only the tool")]
mod support;

use std::future::IntoFuture;
use std::hint::black_box;

use aleph_tools::prelude::*;
use aleph_tools::provider::Provider;
use criterion::{Criterion, criterion_group, criterion_main};
use futures_util::FutureExt;
use serde_json::{Value, json};
use support::AddTool;

/// How to sort.
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Order {
    /// Newest first
    Newest,
    /// Best match first
    Relevance,
}

/// A date range.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Range {
    /// First day, `YYYY-MM-DD`
    from: String,
    /// Last day, `YYYY-MM-DD`; open when absent
    to: Option<String>,
}

/// Search the archive.
#[tool(register = false, inline)]
fn search(
    /// What to look for
    query: String,
    /// How many results
    #[arg(default = 10)]
    limit: u32,
    /// Result order
    order: Option<Order>,
    /// Only results in this range
    range: Option<Range>,
) -> usize {
    let _ = (query, order, range.map(|r| (r.from, r.to)));
    limit as usize
}

fn response(provider: Provider) -> Value {
    let args = json!({ "a": 2, "b": 40 });
    match provider {
        Provider::OpenAiChat => {
            json!({ "choices": [{ "message": { "role": "assistant", "tool_calls": [
                { "id": "call_1", "type": "function", "function": { "name": "add", "arguments": args.to_string() } }
            ]}}]})
        }
        Provider::OpenAiResponses => json!({ "output": [
            { "type": "function_call", "call_id": "call_1", "name": "add", "arguments": args.to_string() }
        ]}),
        Provider::Anthropic => json!({ "content": [
            { "type": "tool_use", "id": "toolu_1", "name": "add", "input": args }
        ]}),
        Provider::Gemini => json!({ "candidates": [{ "content": { "parts": [
            { "functionCall": { "name": "add", "args": args } }
        ]}}]}),
        _ => json!({ "params": { "name": "add", "arguments": args } }),
    }
}

fn round_trip(c: &mut Criterion) {
    let server = AlephToolServer::builder()
        .with_tool(AddTool)
        .build()
        .unwrap();
    let mut group = c.benchmark_group("round_trip");
    group.bench_function("server_call", |b| {
        b.iter(|| {
            let result = server
                .call("add", json!({ "a": 2, "b": 40 }))
                .into_future()
                .now_or_never()
                .unwrap();
            black_box(result)
        });
    });
    for provider in Provider::ALL {
        let response = response(provider);
        group.bench_function(provider.name(), |b| {
            b.iter(|| {
                let round = server
                    .run_tool_calls(provider, black_box(&response))
                    .into_future()
                    .now_or_never()
                    .unwrap()
                    .unwrap();
                black_box(round)
            });
        });
    }
    group.finish();
}

fn tool_lists(c: &mut Criterion) {
    let server = AlephToolServer::builder()
        .with_tool(AddTool)
        .with_tool(SearchTool)
        .build()
        .unwrap();
    let mut group = c.benchmark_group("tools_for");
    for provider in Provider::ALL {
        group.bench_function(provider.name(), |b| {
            b.iter(|| black_box(server.tools().for_provider(provider)));
        });
    }
    group.finish();
}

fn thousand_tools(c: &mut Criterion) {
    let server = AlephToolServer::builder()
        .with_tool(SearchTool)
        .build()
        .unwrap();
    let schema = server.tools().get("search").unwrap().parameters.clone();
    for i in 0..1_000 {
        let definition = ToolDefinition::new(
            format!("search_{i}"),
            "Search the notes for a query, newest first.",
            schema.clone(),
        );
        let tool = aleph_tools::RuntimeTool::new(definition, |_: Value, _: ToolContext| async {
            Ok::<_, ToolError>(ToolOutput::text(""))
        });
        server.add(tool).unwrap();
    }
    let mut group = c.benchmark_group("tools_for_1000");
    group.bench_function("built", |b| {
        b.iter(|| {
            server.set_filter(ToolFilter::new()).unwrap();
            black_box(server.tools().for_provider(Provider::OpenAiChat))
        });
    });
    group.bench_function("again", |b| {
        b.iter(|| black_box(server.tools().for_provider(Provider::OpenAiChat)));
    });
    group.finish();
}

criterion_group!(benches, round_trip, tool_lists, thousand_tools);
criterion_main!(benches);
