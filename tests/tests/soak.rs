//! Soak: many calls from 16 tasks while the tool set churns every millisecond, a WASM plugin
//! is hot-reloaded every second and an MCP client calls over streamable HTTP. Tools that stay
//! registered lose no call and give no wrong answer; memory, file descriptors and threads
//! stop growing once warmed up.
//!
//! Ignored by default. `SOAK_CALLS` sets the number of calls to `add` (default 1,000,000);
//! `SOAK_NO_CHURN`, `SOAK_NO_RELOAD`, `SOAK_NO_MCP` and `SOAK_NO_PLUGIN` (set to anything)
//! leave one load out, to find which one a growth comes with. The footprint is printed at
//! every tenth of the calls.
//!
//! ```text
//! SOAK_CALLS=1000000 cargo test --release -p aleph-tools-tests --test soak -- --ignored --nocapture
//! ```

use std::alloc::System;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use aleph_tools::mcp::{McpConnection, McpEndpoint, McpServer};
use aleph_tools::plugin::{PluginManager, PluginsConfig};
use aleph_tools::prelude::*;
use aleph_tools::{AlephToolDyn, AlephToolServer, BoxFuture, ToolErrorKind};
use aleph_tools_tests::{copy_dir, example_plugins};
use cap::Cap;
use serde_json::{Value, json};

/// Add two integers.
#[tool(inline, register = false)]
fn add(
    /// First
    a: i64,
    /// Second
    b: i64,
) -> i64 {
    a + b
}

/// A tool that comes and goes: answers with its version.
struct Churn {
    name: String,
    version: u64,
}

impl AlephToolDyn for Churn {
    fn name(&self) -> &str {
        &self.name
    }

    fn definition(&self) -> ToolDefinition {
        ToolDefinition::new(
            self.name.clone(),
            format!("Churning tool, version {}.", self.version),
            json!({ "type": "object", "properties": {} }),
        )
    }

    fn call<'a>(
        &'a self,
        _args: Value,
        _ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move { Ok(ToolOutput::json(json!(self.version))) })
    }
}

/// The system allocator, counting the bytes allocated and not yet freed: a leak shows there
/// as steady growth, where resident memory also moves with the allocator's caching.
#[global_allocator]
static ALLOCATOR: Cap<System> = Cap::new(System, usize::MAX);

/// What a process holds: heap bytes in use, resident memory, open file descriptors,
/// threads.
#[derive(Debug, Clone, Copy)]
struct Footprint {
    heap_kib: usize,
    rss_kib: u64,
    fds: usize,
    threads: u64,
}

impl Footprint {
    fn now() -> Self {
        let status = std::fs::read_to_string("/proc/self/status").expect("read /proc/self/status");
        let field = |name: &str| {
            status
                .lines()
                .find_map(|line| line.strip_prefix(name))
                .and_then(|rest| rest.split_whitespace().next())
                .and_then(|n| n.parse::<u64>().ok())
                .unwrap_or_else(|| panic!("{name} in /proc/self/status"))
        };
        Self {
            heap_kib: ALLOCATOR.allocated() / 1024,
            rss_kib: field("VmRSS:"),
            fds: std::fs::read_dir("/proc/self/fd")
                .expect("list fds")
                .count(),
            threads: field("Threads:"),
        }
    }
}

#[derive(Default)]
struct Tally {
    calls: AtomicU64,
    wrong: AtomicU64,
    remote_calls: AtomicU64,
    remote_wrong: AtomicU64,
    plugin_calls: AtomicU64,
    plugin_wrong: AtomicU64,
    churn_calls: AtomicU64,
    churn_unexpected: AtomicU64,
    churn_changes: AtomicU64,
    reloads: AtomicU64,
}

fn count(counter: &AtomicU64) -> u64 {
    counter.load(Ordering::Relaxed)
}

#[test]
#[ignore = "a soak; run with --ignored (SOAK_CALLS sets its length)"]
fn soak_under_churn() {
    let calls: u64 = std::env::var("SOAK_CALLS")
        .ok()
        .map_or(1_000_000, |n| n.parse().expect("SOAK_CALLS is a number"));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(soak(calls));
}

/// Whether the load `part` is left out (`SOAK_NO_{part}` is set).
fn off(part: &str) -> bool {
    std::env::var(format!("SOAK_NO_{part}")).is_ok()
}

async fn soak(calls: u64) {
    let plugins = tempfile::tempdir().expect("a plugin directory");
    let plugin_dir = plugins.path().join("text-tools");
    copy_dir(&example_plugins().join("text-tools"), &plugin_dir);
    let server = AlephToolServer::builder()
        .with_tool(AddTool)
        .build()
        .expect("valid tools");
    let manager = PluginManager::new(&server, PluginsConfig::with_search_paths([plugins.path()]));
    assert_eq!(manager.load_all().loaded, ["text-tools"]);
    let _watcher = manager
        .watch_with(Duration::from_millis(50))
        .expect("watch the plugin");
    let http = McpServer::new(&server)
        .serve_http("127.0.0.1:0")
        .await
        .expect("serve over HTTP");
    let host = AlephToolServer::new();
    let remote = McpConnection::builder(McpEndpoint::url(http.url()))
        .prefix("remote")
        .connect(&host)
        .await
        .expect("connect over HTTP");

    let tally = Arc::new(Tally::default());
    let stop = Arc::new(AtomicBool::new(false));
    let background = [
        tokio::spawn(churn(server.clone(), Arc::clone(&stop), Arc::clone(&tally))),
        tokio::spawn(reload(
            plugin_dir.join("aleph_plugin.toml"),
            Arc::clone(&stop),
            Arc::clone(&tally),
        )),
        tokio::spawn(call_over_mcp(host, Arc::clone(&stop), Arc::clone(&tally))),
        tokio::spawn(call_plugin_and_churn(
            server.clone(),
            Arc::clone(&stop),
            Arc::clone(&tally),
        )),
    ];
    let started = Instant::now();
    let (warm, end) = call_add(&server, calls, &tally).await;
    let elapsed = started.elapsed();
    stop.store(true, Ordering::Relaxed);
    for task in background {
        task.await.expect("a background task");
    }
    report(&tally, elapsed, warm, end);

    assert_eq!(count(&tally.calls), calls);
    assert_eq!(count(&tally.wrong), 0, "calls to `add` went wrong");
    assert_eq!(count(&tally.remote_wrong), 0, "calls over MCP went wrong");
    assert_eq!(count(&tally.plugin_wrong), 0, "plugin calls went wrong");
    assert_eq!(
        count(&tally.churn_unexpected),
        0,
        "churning tools misbehaved"
    );
    for (load, counter) in [
        ("MCP", &tally.remote_calls),
        ("PLUGIN", &tally.plugin_calls),
        ("CHURN", &tally.churn_changes),
    ] {
        assert!(off(load) || count(counter) > 0, "the {load} load never ran");
    }
    assert!(
        end.rss_kib * 10 <= warm.rss_kib * 11,
        "resident memory grew by more than 10% after warm-up: {warm:?} → {end:?}"
    );
    assert!(
        end.fds <= warm.fds + 8,
        "file descriptors grew: {warm:?} → {end:?}"
    );
    assert!(
        end.threads <= warm.threads + 8,
        "threads grew: {warm:?} → {end:?}"
    );
    drop(remote);
    http.shutdown().await.expect("shut the HTTP server down");
}

/// The main load: `calls` calls to `add` from 16 tasks, each answer checked. Returns the
/// footprint once a fifth of them are done (warmed up) and at the end.
async fn call_add(
    server: &AlephToolServer,
    calls: u64,
    tally: &Arc<Tally>,
) -> (Footprint, Footprint) {
    const TASKS: u64 = 16;
    let tenth = (calls / 10).max(1);
    let warm = Arc::new(OnceLock::new());
    let workers: Vec<_> = (0..TASKS)
        .map(|task| {
            let (server, tally, warm) = (server.clone(), Arc::clone(tally), Arc::clone(&warm));
            tokio::spawn(async move {
                let share = calls / TASKS + u64::from(task < calls % TASKS);
                for n in 0..share {
                    let a = i64::try_from(task * 1_000_000_000 + n).expect("small");
                    let result = server.call("add", json!({ "a": a, "b": 1 })).await;
                    let done = tally.calls.fetch_add(1, Ordering::Relaxed) + 1;
                    if result.output != json!(a + 1) {
                        eprintln!("add({a}, 1): {result:?}");
                        tally.wrong.fetch_add(1, Ordering::Relaxed);
                    }
                    if done % tenth == 0 {
                        let now = Footprint::now();
                        if done == 2 * tenth {
                            let _ = warm.set(now);
                        }
                        eprintln!("soak: {done} calls, {now:?}");
                    }
                    // A call that never waits never lets the runtime switch tasks; real
                    // callers wait on their I/O between calls.
                    tokio::task::yield_now().await;
                }
            })
        })
        .collect();
    for worker in workers {
        worker.await.expect("a worker");
    }
    let warm = *warm.get().expect("the warm-up footprint was taken");
    (warm, Footprint::now())
}

/// Changes the tool set every millisecond: adds, replaces and removes `churn_0` to
/// `churn_7` in turn.
async fn churn(server: AlephToolServer, stop: Arc<AtomicBool>, tally: Arc<Tally>) {
    let mut tick = tokio::time::interval(Duration::from_millis(1));
    let mut version = 0_u64;
    while !stop.load(Ordering::Relaxed) && !off("CHURN") {
        tick.tick().await;
        version += 1;
        let name = format!("churn_{}", version % 8);
        // Each may find the tool there or not, and fail for that: it is a race.
        let _ = match version % 3 {
            0 => server.add(Churn { name, version }).is_ok(),
            1 => server.replace(Churn { name, version }).is_ok(),
            _ => server.remove(&name),
        };
        tally.churn_changes.fetch_add(1, Ordering::Relaxed);
    }
}

/// Rewrites the plugin's manifest every second: a hot reload each time.
async fn reload(manifest: PathBuf, stop: Arc<AtomicBool>, tally: Arc<Tally>) {
    let original = std::fs::read_to_string(&manifest).expect("read the manifest");
    let mut round = 0_u64;
    while !stop.load(Ordering::Relaxed) && !off("RELOAD") {
        tokio::time::sleep(Duration::from_secs(1)).await;
        round += 1;
        let text = original.replace(
            "Return the arguments unchanged.",
            &format!("Return the arguments unchanged (round {round})."),
        );
        std::fs::write(&manifest, text).expect("rewrite the manifest");
        tally.reloads.fetch_add(1, Ordering::Relaxed);
    }
}

/// Calls `add` over MCP (streamable HTTP), through the wrapped `remote_add`.
async fn call_over_mcp(host: AlephToolServer, stop: Arc<AtomicBool>, tally: Arc<Tally>) {
    let mut i = 0_i64;
    while !stop.load(Ordering::Relaxed) && !off("MCP") {
        i += 1;
        let result = host.call("remote_add", json!({ "a": i, "b": 2 })).await;
        tally.remote_calls.fetch_add(1, Ordering::Relaxed);
        // The served output schema wraps the integer, and so does the structured result.
        if result.output != json!({ "result": i + 2 }) {
            eprintln!("remote_add({i}, 2): {result:?}");
            tally.remote_wrong.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Calls the plugin's `word_count` (checked) and a churning tool (there or not).
async fn call_plugin_and_churn(server: AlephToolServer, stop: Arc<AtomicBool>, tally: Arc<Tally>) {
    let mut i = 0_usize;
    while !stop.load(Ordering::Relaxed) && !off("PLUGIN") {
        i += 1;
        let words = i % 50;
        let result = server
            .call("word_count", json!({ "text": "word ".repeat(words) }))
            .await;
        tally.plugin_calls.fetch_add(1, Ordering::Relaxed);
        if result.output["words"] != json!(words) {
            eprintln!("word_count of {words} words: {result:?}");
            tally.plugin_wrong.fetch_add(1, Ordering::Relaxed);
        }
        let churn = server.call(&format!("churn_{}", i % 8), json!({})).await;
        tally.churn_calls.fetch_add(1, Ordering::Relaxed);
        // A churning tool is there or not; when it answers, it answers a version.
        let fine = churn.output.is_u64() || churn.error_kind == Some(ToolErrorKind::NotFound);
        if !fine {
            eprintln!("churn_{}: {churn:?}", i % 8);
            tally.churn_unexpected.fetch_add(1, Ordering::Relaxed);
        }
    }
}

fn report(tally: &Tally, elapsed: Duration, warm: Footprint, end: Footprint) {
    let millis = u64::try_from(elapsed.as_millis())
        .unwrap_or(u64::MAX)
        .max(1);
    eprintln!(
        "soak: {} calls to add in {:.1} s ({}/s), {} wrong; {} over MCP, {} wrong; \
         {} to the plugin, {} wrong; {} to churning tools, {} unexpected; \
         {} tool-set changes, {} plugin reloads",
        count(&tally.calls),
        elapsed.as_secs_f64(),
        count(&tally.calls) * 1000 / millis,
        count(&tally.wrong),
        count(&tally.remote_calls),
        count(&tally.remote_wrong),
        count(&tally.plugin_calls),
        count(&tally.plugin_wrong),
        count(&tally.churn_calls),
        count(&tally.churn_unexpected),
        count(&tally.churn_changes),
        count(&tally.reloads),
    );
    eprintln!(
        "soak: after warm-up {warm:?}; at the end {end:?}; heap in use {} KiB → {} KiB",
        warm.heap_kib, end.heap_kib
    );
}
