//! aleph-tools' MCP server against a client nobody here wrote: the official Python SDK,
//! over stdio and streamable HTTP, with the handshake (`legacy`) and with the
//! handshake-free protocol the SDK picks by itself (`auto`).

use std::path::PathBuf;
use std::process::Output;

use aleph_tools::mcp::McpServer;
use aleph_tools_tests::{interop_peers, mcp_test_server};

/// The number of `ok:` lines `client.py` prints when every check passes.
const CHECKS: usize = 11;

fn client() -> (PathBuf, PathBuf) {
    let peers = interop_peers();
    (peers.join(".venv/bin/python"), peers.join("client.py"))
}

fn assert_passed(output: &Output) {
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success() && stdout.contains(&format!("passed: {CHECKS}")),
        "the Python client failed ({}):\n--- stdout\n{stdout}\n--- stderr\n{stderr}",
        output.status
    );
    assert_eq!(stdout.matches("ok: ").count(), CHECKS, "{stdout}");
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
    assert_passed(&output);
}

async fn http(mode: &str) {
    let (python, script) = client();
    let tools = mcp_test_server();
    let http = McpServer::new(&tools)
        .serve_http("127.0.0.1:0")
        .await
        .expect("bind a loopback port");
    let output = tokio::process::Command::new(python)
        .arg(script)
        .args(["--mode", mode, "--url", &http.url()])
        .output()
        .await
        .expect("run the Python client");
    assert_passed(&output);
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
