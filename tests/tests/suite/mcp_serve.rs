//! aleph-tools' MCP server against a client nobody here wrote: the official Python SDK,
//! over stdio and streamable HTTP, with the handshake (`legacy`) and with the
//! handshake-free protocol the SDK picks by itself (`auto`).

use std::path::PathBuf;

use aleph_tools_tests::{assert_client_passed, interop_peers, mcp_test_endpoint};
use serde_json::{Value, json};

/// The number of `ok:` lines `client.py` prints when every check passes: with the
/// handshake, and without (which adds a check of `input_required` rounds).
fn python_checks(mode: &str) -> usize {
    if mode == "legacy" { 22 } else { 23 }
}

/// The number of `ok:` lines `client.mjs` prints when every check passes.
const TYPESCRIPT_CHECKS: usize = 16;

fn client() -> (PathBuf, PathBuf) {
    let peers = interop_peers();
    (peers.join(".venv/bin/python"), peers.join("client.py"))
}

fn stdio(mode: &str) {
    let (python, script) = client();
    let output = std::process::Command::new(python)
        .arg(script)
        .args([
            "--mode",
            mode,
            "--stdio",
            env!("CARGO_BIN_EXE_mcp_stdio_server"),
        ])
        .output()
        .expect("run the Python client");
    assert_client_passed(&output, "Python", python_checks(mode));
}

async fn http(mode: &str) {
    let (python, script) = client();
    let (tools, mcp) = mcp_test_endpoint();
    let http = mcp
        .serve_http("127.0.0.1:0")
        .await
        .expect("bind a loopback port");
    let output = tokio::process::Command::new(python)
        .arg(script)
        .args(["--mode", mode, "--url", &http.url()])
        .output()
        .await
        .expect("run the Python client");
    assert_client_passed(&output, "Python", python_checks(mode));
    assert!(
        tools.contains("echo_from_python"),
        "the hot add happened on this server"
    );
    http.shutdown().await.expect("the server stops cleanly");
}

#[test]
fn python_client_over_stdio_with_the_handshake() {
    stdio("legacy");
}

#[test]
fn python_client_over_stdio_negotiating_by_itself() {
    stdio("auto");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_client_over_http_with_the_handshake() {
    http("legacy").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_client_over_http_negotiating_by_itself() {
    http("auto").await;
}

/// The TypeScript SDK's client parses the tool list strictly and checks every structured
/// result against its tool's output schema.
#[test]
fn typescript_client_over_stdio() {
    let interop = interop_peers();
    let output = std::process::Command::new(interop.join(".venv/bin/node24"))
        .arg(interop.join("client.mjs"))
        .arg(env!("CARGO_BIN_EXE_mcp_stdio_server"))
        .output()
        .expect("run the TypeScript client");
    assert_client_passed(&output, "TypeScript", TYPESCRIPT_CHECKS);
}

/// The stdio server as a child process, its three streams piped.
fn stdio_server() -> std::process::Child {
    use std::process::{Command, Stdio};

    Command::new(env!("CARGO_BIN_EXE_mcp_stdio_server"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the stdio server")
}

/// A line of the server's stdout, which must be a JSON-RPC message.
fn protocol_message(line: &str) -> Value {
    let message: Value = serde_json::from_str(line)
        .unwrap_or_else(|e| panic!("stdout carried a line that is not JSON ({e}): {line:?}"));
    assert_eq!(message["jsonrpc"], "2.0", "{message}");
    message
}

/// Bytes no MCP client would send: the server answers what it can, never panics, and ends
/// cleanly when the input ends.
#[test]
fn garbage_on_stdin_never_panics_the_server() {
    use std::io::Write;

    let mut child = stdio_server();
    let mut stdin = child.stdin.take().expect("stdin");
    let hostile = [
        "this is not JSON",
        "{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": \"tools/call\"",
        "[1, 2, 3]",
        "{\"jsonrpc\": \"2.0\", \"id\": 2, \"method\": \"tools/call\", \"params\": {\"name\": 7}}",
        "{\"jsonrpc\": \"2.0\", \"id\": 3, \"method\": \"no/such/method\"}",
        &"[".repeat(100_000),
        "\u{0}\u{1}\u{2}",
    ];
    for line in hostile {
        let _ = writeln!(stdin, "{line}");
    }
    drop(stdin);
    let output = child.wait_with_output().expect("the server ends");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
}

/// A tool that panics fails its own call; the panic message goes to standard error, and
/// standard output carries nothing but protocol messages.
#[test]
fn a_panic_stays_off_stdout() {
    use std::io::{BufRead, BufReader, Write};

    let mut child = stdio_server();
    let mut stdin = child.stdin.take().expect("stdin");
    let requests = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "explode", "arguments": {}}}),
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
            "params": {"name": "add", "arguments": {"a": 2, "b": 3}}}),
    ];
    for request in requests {
        writeln!(stdin, "{request}").expect("write a request");
    }
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let mut answers = std::collections::HashMap::new();
    let mut line = String::new();
    while answers.len() < 3 {
        line.clear();
        if stdout.read_line(&mut line).expect("read stdout") == 0 {
            break;
        }
        let message = protocol_message(&line);
        if let Some(id) = message["id"].as_i64() {
            answers.insert(id, message);
        }
    }
    drop(stdin);
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut rest).expect("read the rest of stdout");
    for line in rest.lines().filter(|l| !l.trim().is_empty()) {
        protocol_message(line);
    }
    let output = child.wait_with_output().expect("the server ends");

    let exploded = &answers[&2]["result"];
    assert_eq!(exploded["isError"], true, "{exploded}");
    assert!(
        exploded.to_string().contains("failed unexpectedly"),
        "{exploded}"
    );
    assert_eq!(
        answers[&3]["result"]["structuredContent"],
        json!({"result": 5})
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("explode was asked to panic"), "{stderr}");
}

/// A malformed HTTP request costs only itself: a client connecting next is served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_http_requests_leave_the_server_serving() {
    use aleph_tools::mcp::{McpConnection, McpEndpoint};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let (tools, mcp) = mcp_test_endpoint();
    let http = mcp.serve_http("127.0.0.1:0").await.expect("bind");
    let bodies = [
        "not json at all".to_owned(),
        "{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": \"tools/call\", \"params\": {}}".to_owned(),
        "[".repeat(50_000),
    ];
    for body in &bodies {
        let mut socket = tokio::net::TcpStream::connect(http.local_addr())
            .await
            .expect("connect");
        let request = format!(
            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n\
             Connection: close\r\n\r\n{body}",
            body.len()
        );
        socket.write_all(request.as_bytes()).await.expect("send");
        let mut answer = Vec::new();
        let _ = socket.read_to_end(&mut answer).await;
        let answer = String::from_utf8_lossy(&answer);
        assert!(answer.starts_with("HTTP/1.1 4"), "a client error: {answer}");
    }
    // A `Host` that is not loopback is refused (DNS rebinding).
    let mut socket = tokio::net::TcpStream::connect(http.local_addr())
        .await
        .expect("connect");
    socket
        .write_all(b"POST /mcp HTTP/1.1\r\nHost: evil.example\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}")
        .await
        .expect("send");
    let mut answer = Vec::new();
    let _ = socket.read_to_end(&mut answer).await;
    assert!(String::from_utf8_lossy(&answer).starts_with("HTTP/1.1 4"));

    let agent = aleph_tools::AlephToolServer::new();
    let _conn = McpConnection::builder(McpEndpoint::url(http.url()))
        .connect(&agent)
        .await
        .expect("the server still serves");
    let sum = agent
        .call("add", serde_json::json!({ "a": 1, "b": 2 }))
        .await;
    assert!(sum.success, "{sum:?}");
    // The wrapping client followed the cursors through every page.
    assert_eq!(agent.len(), tools.len(), "{:?}", agent.tools().names());
}
