//! The main job, `cargo run -p quickstart`, runs to its end and shows each part of the demo.
//! As a test, the program is built with the rest of the workspace's tests rather than in a
//! build of its own.

use std::process::Command;

/// What the demo prints at each step, in order: the tools, the calls, the provider formats,
/// then MCP: the wrapped tools called (a misspelled name repaired, bad arguments refused) and
/// a tool added while served reaching the wrapping side.
const STEPS: &[&str] = &[
    "tools, collected at link time",
    "== calls ==",
    "== the same tools for each model API ==",
    "== the same tools over MCP ==",
    "ok  remote_add({\"a\":2,\"b\":40}) -> 42",
    "ok  Remote_Add({\"a\":1,\"b\":1}) -> 2",
    "err remote_add({\"a\":\"two\",\"b\":40})",
    "hot-added remote_subtract -> 42",
];

#[test]
fn the_demo_runs_to_its_end() {
    let output = Command::new(env!("CARGO_BIN_EXE_quickstart"))
        .output()
        .expect("start quickstart");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "quickstart failed ({}):\n--- stdout\n{stdout}\n--- stderr\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    let mut rest = &stdout[..];
    for step in STEPS {
        let at = rest
            .find(step)
            .unwrap_or_else(|| panic!("`{step}` is not printed where expected:\n{stdout}"));
        rest = &rest[at + step.len()..];
    }
}
