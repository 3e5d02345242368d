//! The cost of calling one small tool three ways:
//!
//! - `floor`: `serde_json::from_value` + the function + `serde_json::to_value`, by hand;
//! - `call_json`: through `AlephTool::call_json`;
//! - `server`: through `AlephToolServer::call` by name (lookup, argument validation, context,
//!   panic guard, `ToolResult`), no middleware;
//! - `server_audit_rate_limit`: the same server with the `Audit` layer (logging every call to
//!   a `tracing` subscriber that writes to nowhere) and a `RateLimit` layer (global and per
//!   tool, never reached).
//!
//! Run with `cargo bench -p aleph-tools --bench call`. The tools never wait, so each future is
//! polled once, with no executor in the measurement.

#![allow(missing_docs)]

mod support;

use std::future::IntoFuture;
use std::hint::black_box;

use aleph_tools::prelude::*;
use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use futures_util::FutureExt;
use serde_json::{Value, json};
use support::{AddTool, floor_add, with_audit_and_rate_limit};

/// Greet someone.
#[tool(register = false, inline)]
fn greet(
    /// Who to greet
    name: String,
    /// How many exclamation marks
    #[arg(default = 1)]
    excitement: u8,
) -> String {
    format!("Hello, {name}{}", "!".repeat(usize::from(excitement)))
}

fn floor_greet(args: Value) -> Value {
    let args: GreetArgs = serde_json::from_value(args).unwrap();
    serde_json::to_value(greet(args.name, args.excitement)).unwrap()
}

fn bench_tool(
    c: &mut Criterion,
    name: &str,
    args: &Value,
    floor: fn(Value) -> Value,
    tool: &(impl AlephTool + Copy),
) {
    let server = AlephToolServer::builder()
        .with_tool(AddTool)
        .with_tool(GreetTool)
        .build()
        .unwrap();
    let layered = with_audit_and_rate_limit(
        AlephToolServer::builder()
            .with_tool(AddTool)
            .with_tool(GreetTool),
    )
    .build()
    .unwrap();
    let ctx = ToolContext::new();
    let mut group = c.benchmark_group(name);
    group.bench_function("floor", |b| {
        b.iter_batched(
            || args.clone(),
            |args| black_box(floor(args)),
            BatchSize::SmallInput,
        );
    });
    group.bench_function("call_json", |b| {
        b.iter_batched(
            || args.clone(),
            |args| black_box(tool.call_json(args, &ctx).now_or_never().unwrap().unwrap()),
            BatchSize::SmallInput,
        );
    });
    group.bench_function("server", |b| {
        b.iter_batched(
            || args.clone(),
            |args| {
                let result = server
                    .call(name, args)
                    .into_future()
                    .now_or_never()
                    .unwrap();
                assert!(result.success);
                black_box(result)
            },
            BatchSize::SmallInput,
        );
    });
    group.bench_function("server_audit_rate_limit", |b| {
        b.iter_batched(
            || args.clone(),
            |args| {
                let result = layered
                    .call(name, args)
                    .into_future()
                    .now_or_never()
                    .unwrap();
                assert!(result.success);
                black_box(result)
            },
            BatchSize::SmallInput,
        );
    });
    group.finish();
}

fn calls(c: &mut Criterion) {
    // The audit layer's events go to a real subscriber, formatted and then discarded.
    tracing_subscriber::fmt()
        .with_writer(std::io::sink)
        .with_max_level(tracing::Level::INFO)
        .init();
    bench_tool(c, "add", &json!({ "a": 20, "b": 22 }), floor_add, &AddTool);
    bench_tool(
        c,
        "greet",
        &json!({ "name": "Ada", "excitement": 2 }),
        floor_greet,
        &GreetTool,
    );
}

criterion_group!(benches, calls);
criterion_main!(benches);
