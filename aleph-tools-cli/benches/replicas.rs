//! Throughput and latency of `tools/call` through haproxy with one and with three
//! `aleph-tools serve --http` replicas sharing Redis, 64 clients at once on loopback; and what
//! the Redis store costs a task and a request's stream. Needs `redis-server`, `haproxy` and
//! Node.js.
//!
//! ```sh
//! cargo bench -p aleph-tools-cli --bench replicas
//! ```
//!
//! Every call is a 2026-07-28 `tools/call` of a Node.js plugin's `echo` (no session), so the
//! balancer may send each to any replica.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use aleph_tools::mcp::{EventLog, LoggedEvent, RedisStore, StreamState, TaskRecord, TaskStore};
use aleph_tools_tests::node_plugin;
use aleph_tools_tests::redis::RedisServer;
use aleph_tools_tests::replicas::{Haproxy, Replica};
use serde_json::json;

const CLIENTS: usize = 64;
const CALLS_EACH: usize = 60;

const MANIFEST: &str = r#"
[plugin]
id = "bench"
version = "1.0.0"
kind = "nodejs"
entry = "index.js"

[[tools]]
name = "echo"
description = "Says the text back."
handler = "echo"
input_schema = { type = "object", properties = { text = { type = "string" } }, required = ["text"] }
"#;

const SOURCE: &str = r#"
require("@aleph/plugin-sdk").createServer({
  name: "bench",
  tools: { echo: ({ text }) => text },
}).start();
"#;

/// Sends `CLIENTS × CALLS_EACH` calls to `url`, `CLIENTS` at once; calls a second, and the
/// median and 99th percentile latency.
async fn load(url: &str) -> (f64, Duration, Duration) {
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(CLIENTS)
        .build()
        .unwrap();
    let url: Arc<str> = Arc::from(url);
    let call = |http: reqwest::Client, url: Arc<str>, n: usize| async move {
        let body = json!({
            "jsonrpc": "2.0", "id": n, "method": "tools/call",
            "params": {
                "name": "echo", "arguments": { "text": "hello" },
                "_meta": {
                    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                    "io.modelcontextprotocol/clientCapabilities": {}
                }
            }
        });
        let started = Instant::now();
        let response = http
            .post(&*url)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "tools/call")
            .header("mcp-name", "echo")
            .body(body.to_string())
            .send()
            .await
            .unwrap();
        let status = response.status();
        let text = response.text().await.unwrap();
        assert_eq!(status, 200, "{text}");
        assert!(text.contains("hello"), "{text}");
        started.elapsed()
    };
    // Warm up: connections, the plugins' first calls.
    for n in 0..CLIENTS {
        call(http.clone(), Arc::clone(&url), n).await;
    }
    let started = Instant::now();
    let mut clients = tokio::task::JoinSet::new();
    for client in 0..CLIENTS {
        let (http, url) = (http.clone(), Arc::clone(&url));
        clients.spawn(async move {
            let mut took = Vec::with_capacity(CALLS_EACH);
            for n in 0..CALLS_EACH {
                took.push(call(http.clone(), Arc::clone(&url), client * CALLS_EACH + n).await);
            }
            took
        });
    }
    let mut latencies: Vec<Duration> = clients.join_all().await.into_iter().flatten().collect();
    let elapsed = started.elapsed();
    latencies.sort();
    #[allow(clippy::cast_precision_loss, reason = "a few thousand calls")]
    let rate = latencies.len() as f64 / elapsed.as_secs_f64();
    let at = |q: f64| {
        #[allow(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            clippy::cast_precision_loss,
            reason = "an index into a few thousand"
        )]
        let index = ((latencies.len() - 1) as f64 * q).round() as usize;
        latencies[index]
    };
    (rate, at(0.5), at(0.99))
}

/// What the store costs one task that ends at once: its creation, its state written when it
/// starts and when it ends, one look for signals, and one `tasks/get` read; microseconds.
async fn task_cost(store: &RedisStore) -> f64 {
    const TASKS: u32 = 2000;
    let started = Instant::now();
    for n in 0..TASKS {
        let mut record = TaskRecord::new(format!("bench-{n}"), json!({ "status": "working" }));
        store
            .create(&record, Duration::from_mins(1), 100_000)
            .await
            .unwrap();
        store.save(&record).await.unwrap();
        store.signals(&record.id).await.unwrap();
        record.payload = json!({ "status": "completed" });
        store.save(&record).await.unwrap();
        store.load(&record.id).await.unwrap();
    }
    started.elapsed().as_secs_f64() * 1e6 / f64::from(TASKS)
}

/// What the store costs the stream of a request in a shared session that answers at once:
/// the answer logged by the replica sending it (one command), and read back by a replica the
/// client resumes on (one more); microseconds each.
async fn stream_cost(store: &RedisStore) -> (f64, f64) {
    const STREAMS: u32 = 2000;
    let answer = json!({ "message": {
        "jsonrpc": "2.0", "id": 1,
        "result": { "content": [{ "type": "text", "text": "hello" }], "isError": false }
    }})
    .to_string();
    let events = [LoggedEvent::new(0, answer)];
    let mut state = StreamState::new(json!(1));
    state.ended = true;
    let started = Instant::now();
    for n in 0..STREAMS {
        let stream = format!("{n:x}");
        store
            .append("bench", &stream, &events, &state, Duration::from_mins(1))
            .await
            .unwrap();
    }
    let logged = started.elapsed().as_secs_f64() * 1e6 / f64::from(STREAMS);
    let started = Instant::now();
    for n in 0..STREAMS {
        let read = store
            .read("bench", &format!("{n:x}"), 0, 256)
            .await
            .unwrap();
        assert!(read.is_some_and(|read| read.events.len() == 1));
    }
    let read = started.elapsed().as_secs_f64() * 1e6 / f64::from(STREAMS);
    (logged, read)
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let redis = RedisServer::start();
    let root = tempfile::tempdir().unwrap();
    node_plugin(&root.path().join("plugins"), "bench", MANIFEST, SOURCE);
    let config = root.path().join("aleph-tools.toml");
    std::fs::write(
        &config,
        format!(
            "[plugins]\nsearch_paths = [\"plugins\"]\n\n[server]\nredis_url = \"{}\"\nmax_sessions = 4096\n",
            redis.url()
        ),
    )
    .unwrap();
    println!(
        "{CLIENTS} clients x {CALLS_EACH} calls of a Node.js plugin's `echo`, 2026-07-28 requests"
    );
    println!("| path | calls/s | p50 | p99 |\n| --- | --- | --- | --- |");
    let program = Path::new(env!("CARGO_BIN_EXE_aleph-tools"));
    for count in [1, 3] {
        let replicas: Vec<Replica> = (0..count)
            .map(|_| Replica::start(program, root.path(), &config, &[]))
            .collect();
        let addrs: Vec<&str> = replicas.iter().map(Replica::addr).collect();
        if count == 1 {
            let direct = format!("http://{}/mcp", addrs[0]);
            let (rate, p50, p99) = runtime.block_on(load(&direct));
            println!("| 1 replica, direct | {rate:.0} | {p50:.2?} | {p99:.2?} |");
        }
        let haproxy = Haproxy::start(root.path(), &addrs);
        let (rate, p50, p99) = runtime.block_on(load(&haproxy.url()));
        println!("| {count} replica(s) behind haproxy | {rate:.0} | {p50:.2?} | {p99:.2?} |");
    }
    let (cost, (logged, read)) = runtime.block_on(async {
        let store = RedisStore::connect(&redis.url()).await.unwrap();
        (task_cost(&store).await, stream_cost(&store).await)
    });
    println!("Redis store, per task that ends at once (5 commands): {cost:.0} µs");
    println!(
        "Redis store, per request stream answered at once: {logged:.0} µs to log it, \
         {read:.0} µs more for each replica that reads it back"
    );
}
