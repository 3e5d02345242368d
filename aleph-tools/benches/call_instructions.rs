//! Instruction counts of the call paths of `benches/call.rs`, for a machine where timings are
//! too noisy to compare (`layered` runs with no `tracing` subscriber installed). Each run
//! calls one path on one tool `ITERS` times inside `measured`, and callgrind counts only what
//! runs there (building the servers, which calibrates their clock for a varying time, stays
//! out), so the count divided by `ITERS` is that path's instructions per call. The
//! `floor_value`, `server` and `layered` paths take a `Value`, cloned from a kept one each
//! time; the `clone` path only clones and drops it, so subtract it from those three:
//!
//! ```sh
//! cargo bench -p aleph-tools --bench call_instructions --no-run
//! BIN=$(ls -t target/release/deps/call_instructions-* | grep -v '\.d$' | head -1)
//! for tool in add distance; do
//!   for path in floor server_str clone floor_value server layered; do
//!     ALEPH_BENCH_TOOL=$tool ALEPH_BENCH_PATH=$path ALEPH_BENCH_ITERS=100000 \
//!       valgrind --tool=callgrind --callgrind-out-file=/dev/null \
//!       '--toggle-collect=call_instructions::measured*' "$BIN" 2>&1 | grep Collected
//!   done
//! done
//! ```
//!
//! Without those variables (as `cargo bench` runs it) each path runs once, outside the count,
//! as a smoke test.

#![allow(missing_docs)]

mod support;

use std::future::IntoFuture;
use std::hint::black_box;

use aleph_tools::ToolCallRequest;
use futures_util::FutureExt;
use serde_json::Value;
use support::{
    ADD_ARGS, DISTANCE_ARGS, floor_add, floor_add_value, floor_distance, floor_distance_value,
    servers,
};

/// A floor from text, and one from a value.
type Floor = fn(&str) -> String;
type FloorValue = fn(Value) -> String;

fn output_text(call: ToolCallRequest<'_>) -> String {
    let result = call.into_future().now_or_never().unwrap();
    assert!(result.success, "{:?}", result.error);
    serde_json::to_string(&result.output).unwrap()
}

fn main() {
    let var = |name: &str| std::env::var(name).ok();
    let iters: usize = var("ALEPH_BENCH_ITERS")
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    let (server, layered) = servers();
    let tools: Vec<String> = match var("ALEPH_BENCH_TOOL") {
        Some(tool) => vec![tool],
        None => vec!["add".into(), "distance".into()],
    };
    let paths: Vec<String> = match var("ALEPH_BENCH_PATH") {
        Some(path) => vec![path],
        None => [
            "floor",
            "server_str",
            "clone",
            "floor_value",
            "server",
            "layered",
        ]
        .map(String::from)
        .to_vec(),
    };
    for tool in &tools {
        let (text, floor, floor_value): (&str, Floor, FloorValue) = match tool.as_str() {
            "add" => (ADD_ARGS, floor_add, floor_add_value),
            "distance" => (DISTANCE_ARGS, floor_distance, floor_distance_value),
            other => panic!("unknown ALEPH_BENCH_TOOL `{other}`: use add or distance"),
        };
        let value: Value = serde_json::from_str(text).unwrap();
        for path in &paths {
            let run = || match path.as_str() {
                "floor" => floor(black_box(text)),
                "server_str" => output_text(server.call_str(tool, black_box(text))),
                "clone" => {
                    drop(black_box(value.clone()));
                    String::new()
                }
                "floor_value" => floor_value(value.clone()),
                "server" => output_text(server.call(tool, value.clone())),
                "layered" => output_text(layered.call(tool, value.clone())),
                other => panic!(
                    "unknown ALEPH_BENCH_PATH `{other}`: use floor, server_str, clone, floor_value, server or layered"
                ),
            };
            // Once outside the count: what a first call sets up once is not a call's cost.
            drop(black_box(run()));
            measured(iters, run);
        }
    }
}

/// Runs `run` `iters` times: the only function callgrind counts.
#[inline(never)]
fn measured(iters: usize, run: impl Fn() -> String) {
    for _ in 0..iters {
        drop(black_box(run()));
    }
}
