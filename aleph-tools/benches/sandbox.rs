//! What the sandbox costs a program's start: `true` run to its end plainly, under the
//! default policy (two launcher stages, six namespaces, a fresh `/proc`, Landlock, seccomp,
//! limits), and under a policy with the network proxy (a third process, loopback brought up,
//! a socket handed out), from this process. The differences are the sandbox's start-up
//! costs; a bench binary is a large program, so its re-execution is the upper end of them.
//!
//! Run with `cargo bench -p aleph-tools --features sandbox --bench sandbox`.

#![allow(missing_docs)]

use std::process::{Command, Stdio};
use std::time::Duration;

use aleph_tools::sandbox::{Network, Sandbox};
use criterion::{Criterion, criterion_group, criterion_main};

fn run(mut command: Command) {
    let status = command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .status()
        .expect("the program runs");
    assert!(status.success(), "{status}");
}

fn start(c: &mut Criterion) {
    Sandbox::check().expect("this machine can sandbox programs");
    let policy = Sandbox::new();
    let mut group = c.benchmark_group("start_true");
    group.bench_function("plain", |b| b.iter(|| run(Command::new("true"))));
    group.bench_function("sandboxed", |b| {
        b.iter(|| run(policy.std_command("true").expect("a sandboxed command")));
    });
    let proxied = Sandbox::new().network(Network::proxy(["example.com"]));
    group.bench_function("sandboxed_proxy", |b| {
        b.iter(|| run(proxied.std_command("true").expect("a sandboxed command")));
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(30)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5));
    targets = start
}
criterion_main!(benches);
