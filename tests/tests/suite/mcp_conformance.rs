//! The official MCP conformance suite (`@modelcontextprotocol/conformance`, run on Node 24)
//! against the served tools of `mcp_conformance_server`. Its client is the TypeScript SDK's,
//! which validates every listed output schema and every structured result against it.
//!
//! The scenarios the server cannot pass yet are listed, with the reason, in
//! `tests/interop/conformance-baseline.yml`; the suite fails on any other failure and on a
//! listed scenario that passes.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use aleph_tools_tests::interop_peers;

/// The scenarios that must pass; the suite's summary names each one.
const MUST_PASS: &[&str] = &[
    "server-initialize",
    "ping",
    "tools-list",
    "tools-call-simple-text",
    "tools-call-error",
    "tools-call-with-progress",
    "tools-call-image",
    "tools-call-audio",
    "tools-call-embedded-resource",
    "tools-call-mixed-content",
    "prompts-list",
    "prompts-get-simple",
    "prompts-get-with-args",
    "prompts-get-embedded-resource",
    "prompts-get-with-image",
    "logging-set-level",
    "tools-call-with-logging",
    "resources-list",
    "resources-read-text",
    "resources-read-binary",
    "resources-templates-read",
    "resources-subscribe",
    "resources-unsubscribe",
    "tools-call-sampling",
    "tools-call-elicitation",
    "elicitation-sep1034-defaults",
    "elicitation-sep1330-enums",
    "json-schema-2020-12",
    "server-sse-multiple-streams",
    "server-sse-polling",
    "dns-rebinding-protection",
];

#[test]
fn the_conformance_suite_passes_every_tool_scenario() {
    let interop = interop_peers();
    let mut server = Command::new(env!("CARGO_BIN_EXE_mcp_conformance_server"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start the conformance server");
    let mut url = String::new();
    BufReader::new(server.stdout.take().expect("stdout"))
        .read_line(&mut url)
        .expect("the server prints its URL");
    let results = tempfile::tempdir().expect("a directory for the results");
    let output = Command::new(interop.join(".venv/bin/node24"))
        .arg(interop.join("node_modules/@modelcontextprotocol/conformance/dist/index.js"))
        .args(["server", "--suite", "all", "--url", url.trim()])
        .arg("--expected-failures")
        .arg(interop.join("conformance-baseline.yml"))
        .arg("--output-dir")
        .arg(results.path())
        .output()
        .expect("run the conformance suite");
    // Closing its stdin ends the server.
    drop(server.stdin.take());
    let _ = server.wait();

    let stdout = String::from_utf8_lossy(&output.stdout);
    let report = format!("{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    assert!(output.status.success(), "{report}");
    assert!(
        report.contains("Baseline check passed"),
        "the suite did not check its baseline:\n{report}"
    );
    for scenario in MUST_PASS {
        let line = format!("✓ {scenario}: ");
        assert!(
            stdout
                .lines()
                .any(|l| l.starts_with(&line) && l.ends_with(" 0 failed")),
            "`{scenario}` did not pass:\n{report}"
        );
    }
}
