//! End-to-end tests of aleph-tools; the tests live under `tests/`, the book is compiled here.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

pub mod https;
pub mod logs;
pub mod manifests;
pub mod mcp_http;
mod mcp_tools;
pub mod model_api;
pub mod plugin_files;
mod raw_mcp;
pub mod redis;
pub mod replicas;
pub mod sse;
mod traversal;

pub use mcp_tools::{
    ECHO_TOOLS, Echo, NOTE_URI, PAGE_SIZE, RED_PIXEL, ServerSlot, Weather, add_echo_tools,
    mcp_test_endpoint, mcp_test_prompts, mcp_test_server,
};
pub use raw_mcp::RawMcp;
pub use traversal::Tree;

/// The JSON-RPC answer in an MCP HTTP response, sent as JSON or as server-sent events (the
/// event carrying an `id`); the body must come within a minute.
///
/// # Panics
///
/// When the body does not come in time, or holds no answer.
pub async fn http_answer(response: reqwest::Response) -> serde_json::Value {
    let text = tokio::time::timeout(std::time::Duration::from_mins(1), response.text())
        .await
        .expect("the answer comes")
        .expect("the body reads");
    if let Ok(value) = serde_json::from_str(&text) {
        return value;
    }
    text.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str::<serde_json::Value>(data.trim()).ok())
        .find(|message| message.get("id").is_some())
        .unwrap_or_else(|| panic!("no JSON-RPC answer in {text}"))
}

/// An error and its sources, each said once, joined with `: ` (as `{:#}` of an
/// `anyhow::Error` prints them): what a program that reports the whole chain shows.
pub fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// The example plugins' directory (`examples/plugins`), each plugin's module built beside its
/// manifest. The first call in a process runs `examples/plugins/build.sh`, which installs the
/// `wasm32-unknown-unknown` target when it is missing; cargo makes later builds no-ops.
///
/// # Panics
///
/// When the plugins cannot be built, with the build's output.
pub fn example_plugins() -> PathBuf {
    static BUILT: OnceLock<Result<(), String>> = OnceLock::new();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/plugins");
    run_once(&BUILT, &dir.join("build.sh"));
    dir.canonicalize().expect("examples/plugins exists")
}

/// The MCP peers of the interop tests (`tests/interop`): `.venv/bin/python` with the official
/// Python SDK, and `node_modules` with `@modelcontextprotocol/server-everything`. The first call in a process runs `tests/interop/setup.sh`, which
/// installs them from the package registries unless the pinned versions are there.
///
/// # Panics
///
/// When they cannot be installed, with the installer's output.
pub fn interop_peers() -> PathBuf {
    static INSTALLED: OnceLock<Result<(), String>> = OnceLock::new();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("interop");
    run_once(&INSTALLED, &dir.join("setup.sh"));
    dir.canonicalize().expect("tests/interop exists")
}

/// Asserts that an interop client (`tests/interop/*.py`, `*.mjs`) passed: it exited
/// successfully and printed `ok: …` for each of its `checks` and `passed: N` at the end.
///
/// # Panics
///
/// When it did not, with everything it printed.
pub fn assert_client_passed(output: &std::process::Output, client: &str, checks: usize) {
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success() && stdout.contains(&format!("passed: {checks}")),
        "the {client} client failed ({}):\n--- stdout\n{stdout}\n--- stderr\n{stderr}",
        output.status
    );
    assert_eq!(stdout.matches("ok: ").count(), checks, "{stdout}");
}

/// The Node.js plugin SDK (`sdk/node`), built: the first call in a process runs
/// `sdk/node/build.sh`, which installs TypeScript from npm and compiles the SDK unless its
/// sources are unchanged since the last build.
///
/// # Panics
///
/// When the SDK cannot be built, with the build's output.
pub fn plugin_sdk() -> PathBuf {
    static BUILT: OnceLock<Result<(), String>> = OnceLock::new();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../sdk/node");
    run_once(&BUILT, &dir.join("build.sh"));
    dir.canonicalize().expect("sdk/node exists")
}

/// Writes a Node.js plugin into `root/<id>`: `manifest` as `aleph_plugin.toml`, `source` as
/// `index.js`, and the SDK installed as a copy in `node_modules/@aleph/plugin-sdk` (a copy,
/// not a link, so Node's permission model lets the plugin read it). Returns the directory.
///
/// # Panics
///
/// On any I/O error, or when the SDK cannot be built.
pub fn node_plugin(root: &Path, id: &str, manifest: &str, source: &str) -> PathBuf {
    let dir = root.join(id);
    let sdk = dir.join("node_modules/@aleph/plugin-sdk");
    std::fs::create_dir_all(&sdk).expect("create the plugin's directory");
    let built = plugin_sdk();
    std::fs::copy(built.join("package.json"), sdk.join("package.json")).expect("copy the SDK");
    copy_dir(&built.join("dist"), &sdk.join("dist"));
    std::fs::write(dir.join("aleph_plugin.toml"), manifest).expect("write the manifest");
    std::fs::write(dir.join("index.js"), source).expect("write the entry");
    dir
}

/// The command lines of the live processes on this machine, words joined by spaces: how a
/// test finds, from outside, the processes a sandboxed program started, whose PIDs inside
/// the sandbox mean nothing here.
pub fn command_lines() -> Vec<String> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter(|entry| {
            entry
                .file_name()
                .to_str()
                .and_then(|pid| pid.parse().ok())
                .is_some_and(process_alive)
        })
        .filter_map(|entry| std::fs::read(entry.path().join("cmdline")).ok())
        .filter(|line| !line.is_empty())
        .map(|line| {
            let words: Vec<String> = line
                .strip_suffix(&[0])
                .unwrap_or(&line)
                .split(|&byte| byte == 0)
                .map(|word| String::from_utf8_lossy(word).into_owned())
                .collect();
            words.join(" ")
        })
        .collect()
}

/// How many live processes have `needle` in their command line (a temporary directory's
/// path, say): a plugin's processes, the sandbox's launcher among them.
pub fn processes_mentioning(needle: &str) -> usize {
    command_lines()
        .iter()
        .filter(|line| line.contains(needle))
        .count()
}

/// How many live processes run exactly `argv` (a `sleep` with a number no other test uses).
pub fn processes_running(argv: &[&str]) -> usize {
    let wanted = argv.join(" ");
    command_lines()
        .iter()
        .filter(|line| **line == wanted)
        .count()
}

/// Whether process `pid` is running (a zombie, exited but not yet reaped, is not).
pub fn process_alive(pid: u64) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        !stat
            .rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z')
    })
}

/// Waits until `check` holds, looking every 25 ms for 10 s.
///
/// # Panics
///
/// When it does not hold by then, naming `what` was awaited.
pub async fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    for _ in 0..400 {
        if check() {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    panic!("timed out waiting until {what}");
}

/// Runs a bash script once per process, panicking with its output if it fails.
fn run_once(done: &OnceLock<Result<(), String>>, script: &Path) {
    let outcome = done.get_or_init(|| {
        let output = Command::new("bash")
            .arg(script)
            .output()
            .map_err(|e| format!("cannot run bash: {e}"))?;
        if output.status.success() {
            Ok(())
        } else {
            Err(format!(
                "{} failed:\n{}{}",
                script.display(),
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            ))
        }
    });
    if let Err(message) = outcome {
        panic!("{message}");
    }
}

/// Copies the directory `from` into `to` (created), files and subdirectories.
///
/// # Panics
///
/// On any I/O error.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("create the copy's directory");
    for entry in std::fs::read_dir(from).expect("read the directory") {
        let entry = entry.expect("read an entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("file type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy a file");
        }
    }
}

/// The guide's pages, compiled and run as doctests: every Rust snippet in `book/` must work.
#[cfg(doctest)]
mod book {
    #[doc = include_str!("../../book/src/introduction.md")]
    mod introduction {}

    #[doc = include_str!("../../book/src/getting-started.md")]
    mod getting_started {}

    #[doc = include_str!("../../book/src/writing-tools.md")]
    mod writing_tools {}

    #[doc = include_str!("../../book/src/server.md")]
    mod server {}

    #[doc = include_str!("../../book/src/repair.md")]
    mod repair {}

    #[doc = include_str!("../../book/src/arguments.md")]
    mod arguments {}

    #[doc = include_str!("../../book/src/filters.md")]
    mod filters {}

    #[doc = include_str!("../../book/src/context.md")]
    mod context {}

    #[doc = include_str!("../../book/src/middleware.md")]
    mod middleware {}

    #[doc = include_str!("../../book/src/providers.md")]
    mod providers {}

    #[doc = include_str!("../../book/src/agent.md")]
    mod agent {}

    #[doc = include_str!("../../book/src/builtin.md")]
    mod builtin {}

    #[doc = include_str!("../../book/src/code-mode.md")]
    mod code_mode {}
    #[doc = include_str!("../../book/src/tool-search.md")]
    mod tool_search {}
    #[doc = include_str!("../../book/src/browser.md")]
    mod browser {}

    #[doc = include_str!("../../book/src/plugins.md")]
    mod plugins {}

    #[doc = include_str!("../../book/src/command.md")]
    mod command {}

    #[doc = include_str!("../../book/src/sandbox.md")]
    mod sandbox {}
}

#[doc = include_str!("../../book/src/mcp.md")]
mod mcp {}

#[doc = include_str!("../../book/src/clients.md")]
mod clients {}

/// The README's quick start, compiled like the guide; it serves over stdio until its client
/// leaves, so `guide_crate::readme` in the suite runs it, for an MCP client.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
mod readme {}

/// The path an HTTP request on `stream` asks for, read from its head (up to the blank line);
/// `None` when the peer closes first.
pub async fn request_path(stream: &mut tokio::net::TcpStream) -> Option<String> {
    use tokio::io::AsyncReadExt as _;
    let mut head = Vec::new();
    let mut byte = [0_u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if stream.read(&mut byte).await.unwrap_or(0) == 0 {
            return None;
        }
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head);
    Some(head.split_whitespace().nth(1).unwrap_or("/").to_owned())
}
