//! The cost of calling one small tool, for `add` (two integers) and `distance` (two nested
//! structs), each way a program can:
//!
//! - `floor`: by hand, `serde_json::from_str` into the arguments struct, the function,
//!   `serde_json::to_string` of the output;
//! - `server_str`: through `AlephToolServer::call_str` by name, from the same text (lookup,
//!   argument check, context, panic guard, `ToolResult`), then the output to text;
//! - `floor_value`: by hand from a `Value` (built outside the measurement):
//!   `serde_json::from_value` into the arguments struct, the function, the output to text;
//! - `server`: through `AlephToolServer::call` by name from a `Value` (built outside the
//!   measurement), then the output to text;
//! - `layered`: `server` with the `Audit` layer (logging every call to a `tracing`
//!   subscriber that writes to nowhere) and, with the feature `rate-limit`, a `RateLimit`
//!   layer (global and per tool, never reached).
//!
//! Run with `cargo bench -p aleph-tools --features rate-limit --bench call`. The tools never wait, so each future is
//! polled once, with no executor in the measurement.

#![allow(missing_docs)]

mod support;

use std::future::IntoFuture;
use std::hint::black_box;

use aleph_tools::ToolCallRequest;
use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use futures_util::FutureExt;
use serde_json::Value;
use support::{
    ADD_ARGS, DISTANCE_ARGS, floor_add, floor_add_value, floor_distance, floor_distance_value,
    servers,
};

/// Runs a call that never waits and gives its output as text.
fn output_text(call: ToolCallRequest<'_>) -> String {
    let result = call.into_future().now_or_never().unwrap();
    assert!(result.success, "{:?}", result.error);
    serde_json::to_string(&result.output).unwrap()
}

fn bench_tool(
    c: &mut Criterion,
    name: &str,
    text: &str,
    floor: fn(&str) -> String,
    floor_value: fn(Value) -> String,
) {
    let (server, layered) = servers();
    let value: Value = serde_json::from_str(text).unwrap();
    assert_eq!(floor(text), output_text(server.call_str(name, text)));
    let mut group = c.benchmark_group(name);
    group.bench_function("floor", |b| b.iter(|| black_box(floor(black_box(text)))));
    group.bench_function("server_str", |b| {
        b.iter(|| black_box(output_text(server.call_str(name, black_box(text)))));
    });
    group.bench_function("floor_value", |b| {
        b.iter_batched(
            || value.clone(),
            |args| black_box(floor_value(args)),
            BatchSize::SmallInput,
        );
    });
    group.bench_function("server", |b| {
        b.iter_batched(
            || value.clone(),
            |args| black_box(output_text(server.call(name, args))),
            BatchSize::SmallInput,
        );
    });
    group.bench_function("layered", |b| {
        b.iter_batched(
            || value.clone(),
            |args| black_box(output_text(layered.call(name, args))),
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
    bench_tool(c, "add", ADD_ARGS, floor_add, floor_add_value);
    bench_tool(
        c,
        "distance",
        DISTANCE_ARGS,
        floor_distance,
        floor_distance_value,
    );
}

criterion_group!(benches, calls);
criterion_main!(benches);
