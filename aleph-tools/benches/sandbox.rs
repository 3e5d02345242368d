//! What the sandbox costs a program's start: `true` run to its end plainly, and run under
//! the default policy (two launcher stages, six namespaces, a fresh `/proc`, Landlock,
//! seccomp, limits), from this process. The difference is the sandbox's start-up cost; a
//! bench binary is a large program, so its re-execution is the upper end of it.
//!
//! Run with `cargo bench -p aleph-tools --features sandbox --bench sandbox`.

#![allow(missing_docs)]

use std::process::{Command, Stdio};
use std::time::Duration;

use aleph_tools::sandbox::Sandbox;
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
