//! Every chapter's program runs to its end and exits with success, as
//! `cargo run -p guide-examples --bin <chapter>` runs it. As a test, each program is built
//! with the rest of the workspace's tests rather than in a build of its own.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How long `mcp_serve` has to answer, and then to exit.
const PATIENCE: Duration = Duration::from_mins(1);

/// A test for each chapter's program that runs it, and `CHAPTERS`, their names.
macro_rules! chapters {
    ($($name:ident),* $(,)?) => {
        const CHAPTERS: &[&str] = &[$(stringify!($name)),*];
        $(
            #[test]
            fn $name() {
                run(stringify!($name), env!(concat!("CARGO_BIN_EXE_", stringify!($name))));
            }
        )*
    };
}

chapters![
    name_repair,
    arguments,
    filters,
    context,
    server,
    middleware,
    providers,
    agent,
    builtin,
    code_mode,
    tool_search,
    browser,
    sandbox,
    mcp_wrap,
    mcp_content,
    asking,
    mcp_auth,
    mcp_tasks,
    production,
    management,
    replicas,
];

/// Programs with a test of their own below.
const BY_HAND: &[&str] = &["plugins", "mcp_serve"];

/// Runs a chapter's program with no arguments and checks it succeeded.
fn run(name: &str, exe: &str) {
    succeeded(&format!("`{name}`"), Command::new(exe));
}

/// Runs `command` to its end and checks it succeeded, showing what it printed when not.
fn succeeded(what: &str, mut command: Command) {
    let output = command
        .output()
        .unwrap_or_else(|error| panic!("start {what}: {error}"));
    assert!(
        output.status.success(),
        "{what} failed ({}):\n--- stdout\n{}\n--- stderr\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// `plugins` loads the example plugins, built first as the README says
/// (`examples/plugins/build.sh`: a no-op when they are built).
#[test]
fn plugins() {
    let mut build = Command::new("bash");
    build.arg(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../plugins/build.sh"));
    succeeded("examples/plugins/build.sh", build);
    run("plugins", env!("CARGO_BIN_EXE_plugins"));
}

/// `mcp_serve` over stdio, as an MCP client that starts it as a command: it answers
/// `initialize` with its name and instructions, and exits when its input closes; a server
/// that does neither within a minute is stopped and the test fails.
#[test]
fn mcp_serve() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_mcp_serve"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start mcp_serve");
    let mut input = child.stdin.take().expect("its input");
    writeln!(
        input,
        r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"protocolVersion":"2025-06-18","capabilities":{{}},"clientInfo":{{"name":"chapters","version":"0"}}}}}}"#
    )
    .expect("write initialize");
    let output = child.stdout.take().expect("its output");
    let (sender, answers) = mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let read = BufReader::new(output).read_line(&mut line);
        let _ = sender.send(read.map(|_| line));
    });
    let Ok(line) = answers.recv_timeout(PATIENCE) else {
        let _ = child.kill();
        panic!("mcp_serve did not answer initialize within {PATIENCE:?}");
    };
    let line = line.expect("read the answer");
    drop(input);
    let status = exit_within(&mut child, PATIENCE);
    let answer: serde_json::Value = serde_json::from_str(&line).expect("a JSON-RPC answer");
    assert_eq!(answer["id"], 1, "{answer}");
    assert_eq!(
        answer["result"]["serverInfo"]["name"], "calculator",
        "{answer}"
    );
    assert!(
        answer["result"]["instructions"]
            .as_str()
            .is_some_and(|text| text.contains("unlock_power")),
        "{answer}"
    );
    assert!(
        status.success(),
        "mcp_serve exited with {status} once its input closed"
    );
}

/// The child's exit status, once it exits; a child still running after `limit` is killed
/// and the test fails.
fn exit_within(child: &mut Child, limit: Duration) -> ExitStatus {
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("poll the child") {
            return status;
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            panic!("still running after {limit:?}, once its input closed");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn every_program_is_run_by_a_test() {
    let bins = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/bin");
    let mut found: Vec<String> = std::fs::read_dir(&bins)
        .expect("read src/bin")
        .map(|entry| {
            let path = entry.expect("an entry of src/bin").path();
            let stem = path.file_stem().expect("a file name");
            stem.to_string_lossy().into_owned()
        })
        .collect();
    found.sort();
    let mut listed: Vec<String> = CHAPTERS
        .iter()
        .chain(BY_HAND)
        .map(|name| (*name).to_owned())
        .collect();
    listed.sort();
    assert_eq!(
        found, listed,
        "each program under src/bin is run by a test here"
    );
}
