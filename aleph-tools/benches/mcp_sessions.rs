//! What a served tool and an idle MCP session over streamable HTTP hold. The server serves
//! `TOOLS` runtime tools (1000 unless set), each with a small schema of its own; the heap
//! and resident size they add are read first. Then `SESSIONS` sessions (1000 unless set)
//! are opened on it in this process and left alone, and the heap in use is read (every
//! allocation counted, so the figure is what the sessions hold, not what the allocator
//! keeps):
//!
//! - sessions that only shook hands: right after they open (awake: rmcp's service of each,
//!   its tasks and channels), then after ten seconds (asleep: nothing to resume, so only
//!   what wakes them is kept);
//! - sessions that also listed the tools: awake for a minute, as long as rmcp keeps the
//!   answer for a client that resumes its stream, then asleep.
//!
//! The second batch opens in the memory the first gave back: the allocator keeps freed
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

/// How long after its last answer a session sleeps, with the default idle timeout (five
/// minutes), and a little more for the server to look.
const ASLEEP: Duration = Duration::from_secs(70);

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

/// Opens a session with the handshake, and lists the tools in it when `list` says so; its
/// id.
async fn open(addr: SocketAddr, list: bool) -> String {
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
    if list {
        let list = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;
        let answer = post(addr, Some(&id), list).await;
        assert!(answer.contains(r#""tools":["#), "{answer}");
    }
    id
}

/// The heap in use and the resident size now.
fn memory() -> (usize, usize) {
    (ALLOCATOR.allocated(), rss())
}

/// Opens `count` sessions (listing the tools in each when `list` says so); the memory right
/// after, and once the server has had the time to put those with nothing to resume to sleep.
async fn open_batch(
    addr: SocketAddr,
    count: usize,
    list: bool,
) -> ((usize, usize), (usize, usize)) {
    for _ in 0..count {
        open(addr, list).await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let awake = memory();
    tokio::time::sleep(QUIET).await;
    (awake, memory())
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
            .with_max_sessions(2 * sessions + 100)
            .serve_http("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = http.local_addr();
        // What the first sessions set up once (tables, the runtime's slabs) is not theirs.
        for _ in 0..20 {
            open(addr, false).await;
        }
        // The first list of the tools builds the list every session is answered from.
        let listed = open(addr, true).await;
        let ended = send(addr, "DELETE", Some(&listed), "").await;
        assert!(ended.starts_with("HTTP/1.1 2"), "{ended}");
        tokio::time::sleep(QUIET).await;
        let before = memory();
        let each = |now: (usize, usize), then: (usize, usize), count: usize| {
            format!(
                "heap {} bytes each, resident {}",
                now.0.saturating_sub(then.0) / count,
                now.1.saturating_sub(then.1) / count
            )
        };
        let (awake, quiet) = open_batch(addr, sessions, false).await;
        println!(
            "{sessions} sessions that only shook hands: just opened, {}; ten seconds later, {}",
            each(awake, before, sessions),
            each(quiet, before, sessions),
        );
        let first = quiet;
        let (awake, quiet) = open_batch(addr, sessions, true).await;
        tokio::time::sleep(ASLEEP.saturating_sub(QUIET)).await;
        let asleep = memory();
        println!(
            "{sessions} more that also listed the tools: just opened, {}; ten seconds later, \
             {}; a minute later, {}",
            each(awake, first, sessions),
            each(quiet, first, sessions),
            each(asleep, first, sessions),
        );
        println!(
            "all {} asleep: {}",
            2 * sessions,
            each(asleep, before, 2 * sessions)
        );
        println!(
            "the process with {tools} tools and {} idle sessions: resident {} bytes",
            2 * sessions + 20,
            rss()
        );
        http.shutdown().await.expect("stop");
    });
}
