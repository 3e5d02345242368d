//! What a served tool and an idle MCP session over streamable HTTP hold. The server serves
//! `TOOLS` runtime tools (1000 unless set), each with a small schema of its own; the heap
//! and resident size they add are read first. Then three batches of `SESSIONS` sessions
//! (1000 unless set) are opened on it in this process and left alone, and the heap in use
//! is read right after each batch opens (awake: rmcp's service of each, its tasks and
//! channels) and ten seconds later, once the server has had the time to put them to sleep
//! (every allocation counted, so the figure is what the sessions hold, not what the
//! allocator keeps):
//!
//! - sessions that only shook hands;
//! - sessions that also listed the tools and called one;
//! - sessions whose client holds the `GET` stream open, as the official SDK clients do
//!   (the connections' own memory, on both ends, is in the figure).
//!
//! Each batch opens in the memory the one before gave back: the allocator keeps freed
//! pages, so the resident size stays near its high-water mark, which `with_max_sessions`
//! bounds.
//!
//! Run with `cargo bench -p aleph-tools --features mcp-http --bench mcp_sessions`.

#![allow(missing_docs)]

use std::alloc::System;
use std::net::SocketAddr;
use std::time::Duration;

use aleph_tools::mcp::McpServer;
use aleph_tools::{AlephToolServer, RuntimeTool, ToolContext, ToolDefinition, ToolOutput};
use cap::Cap;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

#[global_allocator]
static ALLOCATOR: Cap<System> = Cap::new(System, usize::MAX);

/// How long after its last request a session with nothing to resume sleeps (five seconds),
/// with the time between two looks of the server (five seconds) and a little more.
const QUIET: Duration = Duration::from_secs(11);

/// The resident size of this process, in bytes.
fn rss() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| {
            rest.trim()
                .trim_end_matches("kB")
                .trim()
                .parse::<usize>()
                .ok()
        })
        .map_or(0, |kib| kib * 1024)
}

/// Sends one `POST /mcp` on a connection of its own and reads the whole answer.
async fn post(addr: SocketAddr, session: Option<&str>, body: &str) -> String {
    send(addr, "POST", session, body).await
}

/// Sends one request to `/mcp` on a connection of its own and reads the whole answer.
async fn send(addr: SocketAddr, method: &str, session: Option<&str>, body: &str) -> String {
    let mut socket = TcpStream::connect(addr).await.expect("connect");
    let session = session.map_or(String::new(), |id| {
        format!("Mcp-Session-Id: {id}\r\nMcp-Protocol-Version: 2025-11-25\r\n")
    });
    let request = format!(
        "{method} /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\n{session}Content-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    );
    socket.write_all(request.as_bytes()).await.expect("send");
    let mut answer = String::new();
    socket.read_to_string(&mut answer).await.expect("read");
    answer
}

/// What a batch's sessions do after the handshake.
#[derive(Clone, Copy)]
enum Then {
    /// Nothing.
    Rest,
    /// List the tools and call one.
    ListAndCall,
    /// Open the `GET` stream and hold it.
    Listen,
}

/// Opens a session with the handshake and does `then` in it; its id, and the connection of
/// its `GET` stream when it holds one.
async fn open(addr: SocketAddr, then: Then) -> (String, Option<TcpStream>) {
    let initialize = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}"#;
    let answer = post(addr, None, initialize).await;
    let id = answer
        .lines()
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("mcp-session-id")
                .then(|| value.trim().to_owned())
        })
        .unwrap_or_else(|| panic!("no session: {answer}"));
    let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    let answer = post(addr, Some(&id), initialized).await;
    assert!(answer.starts_with("HTTP/1.1 202"), "{answer}");
    match then {
        Then::Rest => (id, None),
        Then::ListAndCall => {
            let list = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;
            let answer = post(addr, Some(&id), list).await;
            assert!(answer.contains(r#""tools":["#), "{answer}");
            let call = r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"tool_0","arguments":{"query":"q"}}}"#;
            let answer = post(addr, Some(&id), call).await;
            assert!(answer.contains(r#""isError":false"#), "{answer}");
            (id, None)
        }
        Then::Listen => {
            let listening = listen(addr, &id).await;
            (id, Some(listening))
        }
    }
}

/// Opens session `id`'s `GET` stream and reads its head; the connection, held open.
async fn listen(addr: SocketAddr, id: &str) -> TcpStream {
    let mut socket = TcpStream::connect(addr).await.expect("connect");
    let request = format!(
        "GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\
         Mcp-Session-Id: {id}\r\nMcp-Protocol-Version: 2025-11-25\r\n\r\n"
    );
    socket.write_all(request.as_bytes()).await.expect("send");
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        let mut byte = [0u8; 1];
        socket.read_exact(&mut byte).await.expect("read the head");
        head.push(byte[0]);
    }
    assert!(
        head.starts_with(b"HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&head)
    );
    socket
}

/// The heap in use and the resident size now.
fn memory() -> (usize, usize) {
    (ALLOCATOR.allocated(), rss())
}

/// What a batch left: the memory right after it opened and once the server had the time to
/// put its sessions to sleep, the sessions' ids, and the connections of their `GET`
/// streams, held open.
struct Batch {
    awake: (usize, usize),
    quiet: (usize, usize),
    ids: Vec<String>,
    held: Vec<TcpStream>,
}

/// Opens `count` sessions that do `then`.
async fn open_batch(addr: SocketAddr, count: usize, then: Then) -> Batch {
    let (mut ids, mut held) = (Vec::new(), Vec::new());
    for _ in 0..count {
        let (id, listening) = open(addr, then).await;
        ids.push(id);
        held.extend(listening);
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let awake = memory();
    tokio::time::sleep(QUIET).await;
    Batch {
        awake,
        quiet: memory(),
        ids,
        held,
    }
}

/// The mean time of a `tools/call` in each of `sessions`, each on a connection of its own.
async fn mean_call(addr: SocketAddr, sessions: &[String]) -> Duration {
    let call = r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"tool_0","arguments":{"query":"q"}}}"#;
    let started = std::time::Instant::now();
    for id in sessions {
        let answer = post(addr, Some(id), call).await;
        assert!(answer.contains(r#""isError":false"#), "{answer}");
    }
    started.elapsed() / u32::try_from(sessions.len().max(1)).unwrap_or(u32::MAX)
}

/// `count` runtime tools, each with a description and a two-argument schema of its own.
fn served_tools(count: usize) -> AlephToolServer {
    let server = AlephToolServer::new();
    for i in 0..count {
        let schema = json!({
            "type": "object",
            "properties": {
                "query": { "type": "string", "description": format!("What tool {i} looks for") },
                "limit": { "type": "integer", "minimum": 1, "maximum": 100 }
            },
            "required": ["query"]
        });
        let definition = ToolDefinition::new(
            format!("tool_{i}"),
            format!("Looks something up in source number {i}."),
            schema,
        );
        let tool = RuntimeTool::new(definition, |args: Value, _: ToolContext| async move {
            Ok(ToolOutput::text(args.to_string()))
        });
        server.add(tool).expect("a valid tool");
    }
    server
}

/// A count from the environment variable `name`, or `default`.
fn count(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let sessions = count("SESSIONS", 1000);
    let tools = count("TOOLS", 1000);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let empty = (ALLOCATOR.allocated(), rss());
        let server = served_tools(tools);
        println!(
            "{tools} tools: heap {} bytes each ({} in all), resident {} in all",
            ALLOCATOR.allocated().saturating_sub(empty.0) / tools.max(1),
            ALLOCATOR.allocated().saturating_sub(empty.0),
            rss().saturating_sub(empty.1),
        );
        let http = McpServer::new(&server)
            .with_max_sessions(3 * sessions + 100)
            .serve_http("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = http.local_addr();
        // What the first sessions set up once (tables, the runtime's slabs) is not theirs.
        for _ in 0..20 {
            open(addr, Then::Rest).await;
        }
        // The first list of the tools builds the list every session is answered from.
        let (listed, _) = open(addr, Then::ListAndCall).await;
        let ended = send(addr, "DELETE", Some(&listed), "").await;
        assert!(ended.starts_with("HTTP/1.1 2"), "{ended}");
        tokio::time::sleep(QUIET).await;
        let each = |now: (usize, usize), then: (usize, usize)| {
            format!(
                "heap {} bytes each, resident {}",
                now.0.saturating_sub(then.0) / sessions,
                now.1.saturating_sub(then.1) / sessions
            )
        };
        let mut before = memory();
        let mut streams = Vec::new();
        let mut called = Vec::new();
        for (then, what) in [
            (Then::Rest, "only shook hands"),
            (Then::ListAndCall, "also listed the tools and called one"),
            (Then::Listen, "hold their GET stream open"),
        ] {
            let batch = open_batch(addr, sessions, then).await;
            println!(
                "{sessions} sessions that {what}: just opened, {}; ten seconds later, {}",
                each(batch.awake, before),
                each(batch.quiet, before),
            );
            println!("  sessions awake now, in all: {}", http.sessions().awake);
            streams.extend(batch.held);
            if matches!(then, Then::ListAndCall) {
                called = batch.ids;
            }
            before = batch.quiet;
        }
        // A call in a session asleep wakes it first; the next finds it awake.
        let some = &called[..called.len().min(50)];
        let waking = mean_call(addr, some).await;
        let awake = mean_call(addr, some).await;
        println!(
            "a call in {} sessions asleep (each woken): {waking:?} on average; again, awake: \
             {awake:?}",
            some.len()
        );
        println!(
            "the process with {tools} tools and {} idle sessions ({} with a GET stream): \
             resident {} bytes",
            3 * sessions + 20,
            streams.len(),
            rss()
        );
        drop(streams);
        http.shutdown().await.expect("stop");
    });
}
