//! Throughput and latency of `tools/call` through haproxy with one and with three
//! `aleph-tools serve --http` replicas sharing Redis, 64 clients at once on loopback; and what
//! the Redis store costs a task. Needs `redis-server`, `haproxy` and Node.js.
//!
//! ```sh
//! cargo bench -p aleph-tools-cli --bench replicas
//! ```
//!
//! Every call is a 2026-07-28 `tools/call` of a Node.js plugin's `echo` (no session), so the
//! balancer may send each to any replica.

use std::fmt::Write as _;
use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use aleph_tools::mcp::{RedisStore, TaskRecord, TaskStore};
use aleph_tools_tests::node_plugin;
use aleph_tools_tests::redis::RedisServer;
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

struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .unwrap()
        .port()
}

fn replica(work: &Path, config: &Path) -> (Running, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_aleph-tools"))
        .args(["serve", "--http", "127.0.0.1:0", "--no-watch"])
        .current_dir(work)
        .env("HOME", work)
        .env("ALEPH_TOOLS_CONFIG", config)
        .env_remove("RUST_LOG")
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    let addr = loop {
        line.clear();
        assert!(stderr.read_line(&mut line).unwrap() > 0, "a replica ended");
        if let Some((_, rest)) = line.split_once("MCP at http://") {
            break rest.split('/').next().unwrap().to_owned();
        }
    };
    std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
    (Running(child), addr)
}

fn balancer(dir: &Path, replicas: &[String]) -> (Running, u16) {
    let port = free_port();
    let mut config = format!(
        "global\n    maxconn 1024\n\ndefaults\n    mode http\n    timeout connect 2s\n    timeout client 60s\n    timeout server 60s\n\nfrontend mcp\n    bind 127.0.0.1:{port}\n    default_backend replicas\n\nbackend replicas\n    balance roundrobin\n"
    );
    for (n, addr) in replicas.iter().enumerate() {
        let _ = writeln!(config, "    server replica{n} {addr}");
    }
    let file = dir.join("haproxy.cfg");
    std::fs::write(&file, config).unwrap();
    let haproxy = ["/usr/sbin/haproxy", "/usr/bin/haproxy"]
        .iter()
        .map(PathBuf::from)
        .find(|path| path.is_file())
        .unwrap_or_else(|| PathBuf::from("haproxy"));
    let child = Command::new(haproxy)
        .arg("-f")
        .arg(&file)
        .arg("-db")
        .stdout(Stdio::null())
        .spawn()
        .expect("haproxy runs");
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        std::thread::sleep(Duration::from_millis(25));
    }
    (Running(child), port)
}

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
    for count in [1, 3] {
        let replicas: Vec<(Running, String)> =
            (0..count).map(|_| replica(root.path(), &config)).collect();
        let addrs: Vec<String> = replicas.iter().map(|(_, addr)| addr.clone()).collect();
        if count == 1 {
            let direct = format!("http://{}/mcp", addrs[0]);
            let (rate, p50, p99) = runtime.block_on(load(&direct));
            println!("| 1 replica, direct | {rate:.0} | {p50:.2?} | {p99:.2?} |");
        }
        let (_haproxy, port) = balancer(root.path(), &addrs);
        let url = format!("http://127.0.0.1:{port}/mcp");
        let (rate, p50, p99) = runtime.block_on(load(&url));
        println!("| {count} replica(s) behind haproxy | {rate:.0} | {p50:.2?} | {p99:.2?} |");
    }
    let cost = runtime.block_on(async {
        let store = RedisStore::connect(&redis.url()).await.unwrap();
        task_cost(&store).await
    });
    println!("Redis store, per task that ends at once (5 commands): {cost:.0} µs");
}
