//! In process: one call by name with the model's arguments text, and one with the arguments
//! as a JSON value (as an MCP server receives them, built outside the measurement), each
//! with its result as JSON text.
//!
//! `cargo bench --bench in_process` in `bench/peers`. rmcp is not here: its tools are called
//! through a request context only a running service has (see `benches/mcp.rs`).

#![allow(missing_docs)]

use std::hint::black_box;

use criterion::{BatchSize, Criterion};
use futures_util::FutureExt;
use peers::{ADD_ARGS, DISTANCE_ARGS, aleph, floor, rig};

/// A tool's name, its arguments, and the floor's ways of calling it.
type Case = (
    &'static str,
    &'static str,
    fn(&str) -> String,
    fn(serde_json::Value) -> String,
);

fn bench(c: &mut Criterion) {
    let server = aleph::server();
    let tools = rig::tools();
    let cases: [Case; 2] = [
        ("add", ADD_ARGS, floor::add_text, floor::add_value),
        (
            "distance",
            DISTANCE_ARGS,
            floor::distance_text,
            floor::distance_value,
        ),
    ];
    for (name, args, by_hand, by_hand_value) in cases {
        let value: serde_json::Value = serde_json::from_str(args).expect("an object");
        // The three agree before they are timed.
        let expected = by_hand(args);
        let now = |f: std::pin::Pin<&mut dyn Future<Output = String>>| {
            f.now_or_never().expect("finishes at once")
        };
        assert_eq!(
            now(std::pin::pin!(aleph::call_text(&server, name, args))),
            expected
        );
        assert_eq!(
            now(std::pin::pin!(rig::call_text(&tools, name, args))),
            expected
        );
        assert_eq!(
            now(std::pin::pin!(aleph::call_value(
                &server,
                name,
                value.clone()
            ))),
            expected
        );
        assert_eq!(by_hand_value(value.clone()), expected);

        let mut group = c.benchmark_group(name);
        group.bench_function("floor", |b| b.iter(|| by_hand(black_box(args))));
        group.bench_function("aleph-tools", |b| {
            b.iter(|| {
                aleph::call_text(&server, name, black_box(args))
                    .now_or_never()
                    .expect("finishes at once")
            });
        });
        group.bench_function("rig", |b| {
            b.iter(|| {
                rig::call_text(&tools, name, black_box(args))
                    .now_or_never()
                    .expect("finishes at once")
            });
        });
        group.finish();

        // From a value: rig has no such path (its tools take the arguments text).
        let mut group = c.benchmark_group(format!("{name}, from a value"));
        group.bench_function("floor", |b| {
            b.iter_batched(|| value.clone(), by_hand_value, BatchSize::SmallInput);
        });
        group.bench_function("aleph-tools", |b| {
            b.iter_batched(
                || value.clone(),
                |args| {
                    aleph::call_value(&server, name, args)
                        .now_or_never()
                        .expect("finishes at once")
                },
                BatchSize::SmallInput,
            );
        });
        group.finish();
    }
}

fn main() {
    let mut criterion = Criterion::default().configure_from_args();
    bench(&mut criterion);
    criterion.final_summary();
}
