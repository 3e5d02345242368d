//! Three `aleph-tools serve --http` replicas sharing Redis, behind haproxy sending each
//! request to the next replica (round robin, no stickiness), as a deployment runs them:
//! driven with the official Python and TypeScript clients through the balancer, then one
//! replica killed in the middle of a task, which is reported failed through the others.

use std::fmt::Write as _;
use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use aleph_tools_tests::mcp_http::{open_session_with, post_in_session};
use aleph_tools_tests::redis::RedisServer;
use aleph_tools_tests::{assert_client_passed, http_answer, interop_peers, node_plugin};
use serde_json::{Value, json};

const ANN: &str = "ann-5c1d";
const BOB: &str = "bob-93e0";
const TASKS: &str = "io.modelcontextprotocol/tasks";

const MANIFEST: &str = r#"
[plugin]
id = "desk"
version = "1.0.0"
kind = "nodejs"
entry = "index.js"

[[tools]]
name = "echo"
description = "Says the text back."
handler = "echo"
input_schema = { type = "object", properties = { text = { type = "string" } }, required = ["text"] }

[[tools]]
name = "wait"
description = "Waits a minute, as a task."
handler = "wait"
task = true
"#;

const SOURCE: &str = r#"
require("@aleph/plugin-sdk").createServer({
  name: "desk",
  tools: {
    echo: ({ text }) => `echo: ${text}`,
    wait: () => new Promise((done) => setTimeout(() => done("waited"), 60000)),
  },
}).start();
"#;

/// A free port on loopback.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .unwrap()
        .port()
}

/// A process ended when dropped.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts a replica; it and the address it serves at.
fn replica(work: &Path, config: &Path) -> (Running, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_aleph-tools"))
        .args(["serve", "--http", "127.0.0.1:0", "--no-watch"])
        .current_dir(work)
        .env("HOME", work)
        .env("ALEPH_TOOLS_CONFIG", config)
        .env("ANN_TOKEN", ANN)
        .env("BOB_TOKEN", BOB)
        .env_remove("XDG_CONFIG_HOME")
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

/// haproxy in front of `replicas`, round robin, each replica checked at `/healthz`; the
/// balancer's port.
fn balancer(dir: &Path, replicas: &[String]) -> (Running, u16) {
    let port = free_port();
    let mut config = format!(
        "global\n    maxconn 256\n\ndefaults\n    mode http\n    timeout connect 2s\n    timeout client 60s\n    timeout server 60s\n    retries 3\n    option redispatch\n\nfrontend mcp\n    bind 127.0.0.1:{port}\n    default_backend replicas\n\nbackend replicas\n    balance roundrobin\n    option httpchk GET /healthz\n"
    );
    for (n, addr) in replicas.iter().enumerate() {
        let _ = writeln!(
            config,
            "    server replica{n} {addr} check inter 200ms fall 1 rise 1"
        );
    }
    let file = dir.join("haproxy.cfg");
    std::fs::write(&file, config).unwrap();
    let child = Command::new(haproxy())
        .arg("-f")
        .arg(&file)
        .arg("-db")
        .stdout(Stdio::null())
        .spawn()
        .expect("haproxy runs (Debian's package `haproxy`)");
    let started = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "haproxy did not listen"
        );
        std::thread::sleep(Duration::from_millis(25));
    }
    (Running(child), port)
}

fn haproxy() -> PathBuf {
    ["/usr/sbin/haproxy", "/usr/bin/haproxy"]
        .iter()
        .map(PathBuf::from)
        .find(|path| path.is_file())
        .unwrap_or_else(|| PathBuf::from("haproxy"))
}

fn config(root: &Path, redis: &RedisServer) -> PathBuf {
    let plugins = root.join("plugins");
    node_plugin(&plugins, "desk", MANIFEST, SOURCE);
    let file = root.join("aleph-tools.toml");
    std::fs::write(
        &file,
        format!(
            "[plugins]\nsearch_paths = [\"plugins\"]\n\n[server]\nredis_url = \"{}\"\n\n[[server.tokens]]\nsubject = \"ann\"\nenv = \"ANN_TOKEN\"\n\n[[server.tokens]]\nsubject = \"bob\"\nenv = \"BOB_TOKEN\"\n",
            redis.url()
        ),
    )
    .unwrap();
    file
}

/// Runs `command` to its end off the async threads; what it printed.
async fn run(mut command: Command) -> std::process::Output {
    tokio::task::spawn_blocking(move || command.output())
        .await
        .unwrap()
        .unwrap()
}

fn client(token: &str) -> reqwest::Client {
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert("authorization", format!("Bearer {token}").parse().unwrap());
    reqwest::Client::builder()
        .default_headers(headers)
        .build()
        .unwrap()
}

async fn rpc(
    http: &reqwest::Client,
    url: &str,
    session: &str,
    method: &str,
    params: Value,
) -> Value {
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params });
    let response = post_in_session(http, url, session, &body).await;
    let status = response.status();
    let answer = http_answer(response).await;
    assert_eq!(status, 200, "{answer}");
    answer
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_behind_a_balancer_share_sessions_and_tasks_and_outlive_one_of_them() {
    let redis = RedisServer::start();
    let root = tempfile::tempdir().unwrap();
    let file = config(root.path(), &redis);
    let mut replicas: Vec<(Running, String)> =
        (0..3).map(|_| replica(root.path(), &file)).collect();
    let addrs: Vec<String> = replicas.iter().map(|(_, addr)| addr.clone()).collect();
    let (_haproxy, port) = balancer(root.path(), &addrs);
    let url = format!("http://127.0.0.1:{port}/mcp");

    // The official Python client, through the balancer.
    let peers = interop_peers();
    let mut python = Command::new(peers.join(".venv/bin/python"));
    python.arg(peers.join("replicas_client.py")).args([
        "--url",
        &url,
        "--token",
        ANN,
        "--other-token",
        BOB,
    ]);
    assert_client_passed(&run(python).await, "Python (replicas)", 5);
    // And the official TypeScript client.
    let mut node = Command::new(peers.join(".venv/bin/node24"));
    node.arg(peers.join("replicas_client.mjs"))
        .args([&url, ANN]);
    let output = run(node).await;
    assert_client_passed(&output, "TypeScript (replicas)", 1);

    // A session of Ann's is no session for Bob, on any replica.
    let ann = client(ANN);
    let session = open_session_with(&ann, &url, &json!({ "extensions": { TASKS: {} } })).await;
    let bob = client(BOB);
    let list = json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/list" });
    for _ in 0..3 {
        let stolen = post_in_session(&bob, &url, &session, &list).await;
        assert!(
            stolen.status() == 403 || stolen.status() == 404,
            "{}",
            stolen.status()
        );
    }

    // A task started on the first replica; that replica is killed; the task is reported
    // failed through the others once its lease runs out, never left working.
    let first = format!("http://{}/mcp", addrs[0]);
    let started = rpc(
        &ann,
        &first,
        &session,
        "tools/call",
        json!({ "name": "wait", "arguments": {} }),
    )
    .await;
    let task = started["result"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("a task handle: {started}"))
        .to_owned();
    let (mut killed, _) = replicas.remove(0);
    killed.0.kill().unwrap();
    killed.0.wait().unwrap();
    let since = Instant::now();
    let ended = loop {
        let state = rpc(&ann, &url, &session, "tasks/get", json!({ "taskId": task })).await;
        if state["result"]["status"] != "working" {
            break state;
        }
        assert!(
            since.elapsed() < Duration::from_secs(30),
            "still working: {state}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    assert_eq!(ended["result"]["status"], "failed", "{ended}");
    assert!(
        ended["result"]["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("stopped before the task ended")),
        "{ended}"
    );
    // The survivors go on serving the session.
    let answer = rpc(
        &ann,
        &url,
        &session,
        "tools/call",
        json!({ "name": "echo", "arguments": { "text": "still here" } }),
    )
    .await;
    assert_eq!(answer["result"]["isError"], false, "{answer}");
}
