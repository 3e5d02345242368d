//! Instruction counts of the call paths of `benches/call.rs` (`layered` is the server with
//! the audit and rate-limit layers, with no `tracing` subscriber installed), for a machine where
//! timings are too noisy to compare. Each run calls one path `ITERS` times; under
//! `valgrind --tool=callgrind` the difference between `ITERS = N` and `ITERS = 0` divided by
//! `N` is that path's instructions per call. The `clone` path only clones and drops the
//! arguments, which every path does; subtract it to compare the paths themselves:
//!
//! ```sh
//! cargo bench -p aleph-tools --bench call_instructions --no-run
//! BIN=$(ls -t target/release/deps/call_instructions-* | grep -v '\.d$' | head -1)
//! for path in clone floor call_json server layered; do
//!   for iters in 0 100000; do
//!     ALEPH_BENCH_PATH=$path ALEPH_BENCH_ITERS=$iters \
//!       valgrind --tool=callgrind --callgrind-out-file=/dev/null "$BIN" 2>&1 | grep Collected
//!   done
//! done
//! ```
//!
//! Without those variables (as `cargo bench` runs it) each path runs once as a smoke test.

#![allow(missing_docs)]

mod support;

use std::future::IntoFuture;
use std::hint::black_box;

use aleph_tools::prelude::*;
use futures_util::FutureExt;
use serde_json::json;
use support::{AddTool, floor_add, with_audit_and_rate_limit};

fn main() {
    let path = std::env::var("ALEPH_BENCH_PATH").ok();
    let iters: usize = std::env::var("ALEPH_BENCH_ITERS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1);
    let server = AlephToolServer::builder()
        .with_tool(AddTool)
        .build()
        .unwrap();
    let layered = with_audit_and_rate_limit(AlephToolServer::builder().with_tool(AddTool))
        .build()
        .unwrap();
    let ctx = ToolContext::new();
    let args = json!({ "a": 20, "b": 22 });
    let paths: Vec<&str> = match &path {
        Some(path) => vec![path.as_str()],
        None => vec!["floor", "call_json", "server", "layered"],
    };
    for path in paths {
        for _ in 0..iters {
            let args = args.clone();
            match path {
                "clone" => drop(black_box(args)),
                "floor" => drop(black_box(floor_add(args))),
                "call_json" => drop(black_box(
                    AddTool
                        .call_json(args, &ctx)
                        .now_or_never()
                        .unwrap()
                        .unwrap(),
                )),
                "server" => drop(black_box(
                    server
                        .call("add", args)
                        .into_future()
                        .now_or_never()
                        .unwrap(),
                )),
                "layered" => {
                    let result = layered
                        .call("add", args)
                        .into_future()
                        .now_or_never()
                        .unwrap();
                    assert!(result.success);
                    drop(black_box(result));
                }
                other => panic!(
                    "unknown ALEPH_BENCH_PATH `{other}`: use clone, floor, call_json, server or layered"
                ),
            }
        }
    }
}
