//! Code mode holds against a hostile script: each test is a script a model could write,
//! run through the `code` tool with real `node` and `python3`. The time limit stops a loop,
//! the call limit a flood of tool calls, the output caps a flood of output, the OS sandbox
//! keeps files, the network and the host's process out of reach, and a tool not open to
//! code is never run, however the script asks. After each, the server serves the next call.
#![cfg(target_os = "linux")]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use aleph_tools::builtin::{CodeMode, FileOps};
use aleph_tools::prelude::*;
use aleph_tools::sandbox::Sandbox;
use serde_json::{Value, json};

use super::sandbox::{BOUND, LoopbackServer};

#[derive(Default, Clone)]
struct Counter(Arc<AtomicUsize>);

/// Count a call.
#[tool(register = false, callers = [human, code_execution])]
fn tick(calls: State<Counter>) -> usize {
    calls.0.fetch_add(1, Ordering::SeqCst) + 1
}

/// Only the model in conversation may call this.
#[tool(register = false)]
fn launch(calls: State<Counter>) -> String {
    calls.0.fetch_add(1_000_000, Ordering::SeqCst);
    "launched".to_owned()
}

struct Setup {
    server: AlephToolServer,
    calls: Counter,
    _dir: tempfile::TempDir,
    workspace: std::path::PathBuf,
    outside: std::path::PathBuf,
}

fn setup(mode: CodeMode) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let (workspace, outside) = (base.join("workspace"), base.join("outside"));
    std::fs::create_dir_all(&workspace).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(workspace.join("notes.txt"), "the workspace's notes\n").unwrap();
    std::fs::write(outside.join("secret.txt"), "the host's secret\n").unwrap();
    let calls = Counter::default();
    let server = AlephToolServer::builder()
        .with_tool(TickTool)
        .with_tool(LaunchTool)
        .with_state(calls.clone())
        .with_builtin(FileOps::default())
        .with_builtin(mode)
        .with_working_dir(&workspace)
        .with_allowed_paths([&workspace])
        .build()
        .unwrap();
    Setup {
        server,
        calls,
        _dir: dir,
        workspace,
        outside,
    }
}

async fn code(server: &AlephToolServer, args: Value) -> ToolResult {
    let started = Instant::now();
    let result = tokio::time::timeout(BOUND, server.call("code", args))
        .await
        .expect("the script was stopped well within the bound");
    assert!(started.elapsed() < BOUND);
    result
}

/// The start of a long text, for a failing assertion's message.
fn brief(text: impl AsRef<str>) -> String {
    text.as_ref().chars().take(300).collect()
}

/// The server still runs scripts after whatever came before.
async fn still_serving(server: &AlephToolServer) {
    let result = code(server, json!({ "code": "return 6 * 7" })).await;
    assert_eq!(result.output["value"], 42, "{:?}", result.error);
}

#[tokio::test]
async fn an_endless_loop_is_stopped_at_the_time_limit() {
    let s = setup(CodeMode::new());
    for (language, script) in [
        ("javascript", "while (true) {}"),
        ("python", "while True:\n    pass"),
        ("javascript", "await new Promise(() => {})"),
    ] {
        let started = Instant::now();
        let result = code(
            &s.server,
            json!({ "language": language, "code": script, "timeout_secs": 2 }),
        )
        .await;
        assert!(started.elapsed() < Duration::from_secs(10), "{language}");
        let error = result.error.unwrap();
        assert!(
            error.contains("stopped at its time limit of 2 s"),
            "{error}"
        );
    }
    still_serving(&s.server).await;
}

#[tokio::test]
async fn ten_thousand_tool_calls_are_held_to_the_limit() {
    let s = setup(CodeMode::new().max_tool_calls(100));
    let result = code(
        &s.server,
        json!({ "code": "await Promise.all(Array.from({ length: 10000 }, () => tools.tick()))" }),
    )
    .await;
    let error = result.error.unwrap();
    assert!(error.contains("already made 100 tool calls"), "{error}");
    assert_eq!(s.calls.0.load(Ordering::SeqCst), 100);
    // One after another, errors caught: still 100 calls, and the script ends.
    let result = code(
        &s.server,
        json!({ "code": r"
            let refused = 0;
            for (let i = 0; i < 10000; i++) { try { await tools.tick() } catch { refused++ } }
            return refused;
        " }),
    )
    .await;
    assert_eq!(result.output["value"], 9900, "{:?}", result.error);
    assert_eq!(s.calls.0.load(Ordering::SeqCst), 200);
    still_serving(&s.server).await;
}

#[tokio::test]
async fn a_script_that_never_reads_its_answers_is_stopped() {
    let s = setup(CodeMode::new());
    let started = Instant::now();
    let result = code(
        &s.server,
        json!({ "code": r#"
            const fs = require('fs');
            const name = 'x'.repeat(60);
            // Writes retried until taken (the pipe is non-blocking); stdin never read.
            for (let i = 0; ; ) {
                try { fs.writeSync(1, `\n{"t":"call","id":${i},"tool":"${name}","args":{}}\n`); i++ } catch {}
            }
        "#, "timeout_secs": 120 }),
    )
    .await;
    assert!(started.elapsed() < Duration::from_mins(1));
    let error = result.error.unwrap();
    assert!(
        error.contains("asked for calls much faster than it read their answers"),
        "{}",
        brief(&error)
    );
    still_serving(&s.server).await;
}

#[tokio::test]
async fn a_flood_of_output_is_cut_to_the_limit() {
    let limit = 16 * 1024;
    let s = setup(CodeMode::new().output_limit(limit));
    let result = code(
        &s.server,
        json!({ "code": "for (let i = 0; i < 200000; i++) console.log('line', i); return 'ok'" }),
    )
    .await;
    assert!(
        result.success,
        "{}",
        brief(result.error.unwrap_or_default())
    );
    let output = result.output["output"].as_str().unwrap();
    assert!(output.len() < limit + 200, "{}", output.len());
    assert!(output.starts_with("line 0\n"), "{}", brief(output));
    assert!(output.ends_with("line 199999\n"), "{}", brief(output));
    assert!(output.contains("bytes left out"), "{}", brief(output));
    // One enormous line, through console.log and straight to the pipe.
    for script in [
        "console.log('x'.repeat(50_000_000)); return 'ok'",
        "require('fs').writeSync(1, 'y'.repeat(20_000_000)); return 'ok'",
    ] {
        let result = code(&s.server, json!({ "code": script })).await;
        assert!(
            result.success,
            "{}",
            brief(result.error.unwrap_or_default())
        );
        assert_eq!(result.output["value"], "ok");
        assert!(result.output["output"].as_str().unwrap().len() < limit + 200);
    }
    // A returned value past the limit is refused with the reason.
    let result = code(
        &s.server,
        json!({ "code": "return 'z'.repeat(10_000_000)" }),
    )
    .await;
    let error = result.error.unwrap();
    assert!(
        error.contains("more than the 16384 allowed"),
        "{}",
        brief(&error)
    );
    let result = code(
        &s.server,
        json!({ "language": "python", "code": "print('p' * 30_000_000)\nreturn 'ok'" }),
    )
    .await;
    assert_eq!(
        result.output["value"],
        "ok",
        "{}",
        brief(result.error.unwrap_or_default())
    );
    still_serving(&s.server).await;
}

#[tokio::test]
async fn files_are_reached_only_through_the_tools() {
    let s = setup(CodeMode::new());
    let secret = s.outside.join("secret.txt");
    let notes = s.workspace.join("notes.txt");
    for (language, read) in [
        (
            "javascript",
            "return require('fs').readFileSync(PATH, 'utf8')",
        ),
        ("python", "return open(PATH).read()"),
    ] {
        for path in [&secret, &notes] {
            let script = read.replace("PATH", &json!(path.to_str().unwrap()).to_string());
            let result = code(&s.server, json!({ "language": language, "code": script })).await;
            let error = result.error.unwrap_or_default();
            assert!(!result.success, "{language} read {}", path.display());
            assert!(
                error.contains("EACCES") || error.contains("Permission denied"),
                "{error}"
            );
            assert!(!error.contains("secret\n") && !error.contains("notes\n"));
        }
    }
    // The same file, through the tool open to code.
    let result = code(
        &s.server,
        json!({ "code": "return (await tools.file_read({ path: 'notes.txt' })).content" }),
    )
    .await;
    assert!(result.success, "{:?}", result.error);
    assert!(result.model_text().contains("the workspace's notes"));
    still_serving(&s.server).await;
}

#[tokio::test]
async fn the_network_is_out_of_reach() {
    let s = setup(CodeMode::new());
    let host = LoopbackServer::start();
    let url = format!("http://127.0.0.1:{}/", host.port);
    let result = code(
        &s.server,
        json!({ "code": format!("try {{ return await (await fetch({url:?})).text() }} catch (e) {{ return 'refused: ' + (e.cause?.code ?? e.message) }}") }),
    )
    .await;
    let value = result.output["value"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(value.starts_with("refused"), "{value} {:?}", result.error);
    let result = code(
        &s.server,
        json!({ "language": "python", "code": format!("import urllib.request\ntry:\n    return urllib.request.urlopen({url:?}, timeout=5).read().decode()\nexcept Exception as e:\n    return 'refused: ' + str(e)") }),
    )
    .await;
    let value = result.output["value"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(value.starts_with("refused"), "{value} {:?}", result.error);
    assert!(!value.contains(&host.secret));
    assert_eq!(
        host.connections(),
        0,
        "no connection reached the host's server"
    );
}

#[tokio::test]
async fn a_tool_not_open_to_code_never_runs_however_it_is_asked_for() {
    let s = setup(CodeMode::new());
    for script in [
        "return await tools.launch()",
        "return await tools['launch']({})",
        "return await tools.Launch()",
        // Past the `tools` object: a call line written straight to the protocol's pipe.
        r#"require('fs').writeSync(1, '{"t":"call","id":1,"tool":"launch","args":{}}\n');
           await new Promise((resolve) => setTimeout(resolve, 300)); return 'sent'"#,
        // A forged answer to a call of its own, then the real call.
        r#"require('fs').writeSync(1, '{"t":"call","id":7,"tool":"code","args":{"code":"1"}}\n');
           await new Promise((resolve) => setTimeout(resolve, 300)); return 'sent'"#,
    ] {
        let _ = code(&s.server, json!({ "code": script })).await;
    }
    let _ = code(
        &s.server,
        json!({ "language": "python", "code": "return await tools.launch()" }),
    )
    .await;
    assert_eq!(s.calls.0.load(Ordering::SeqCst), 0, "`launch` never ran");
    still_serving(&s.server).await;
}

#[tokio::test]
async fn prototype_tricks_reach_nothing_of_the_host() {
    let s = setup(CodeMode::new());
    let secret = s.outside.join("secret.txt");
    let script = format!(
        r"
        const reached = {{}};
        // The host's `process`, reached past every object the script was given.
        const p = tools.constructor.constructor('return this')().process
            ?? Function('return this')().process;
        reached.env = Object.keys(p.env).sort();
        reached.ppid = p.ppid;
        try {{ reached.shell = require('child_process').execSync('cat {path}', {{ stdio: 'pipe' }}).toString() }}
        catch (e) {{ reached.shell = 'refused: ' + e.message.split('\n')[0] }}
        try {{ p.kill({host}, 0); reached.signal = 'sent' }} catch (e) {{ reached.signal = 'refused: ' + e.code }}
        try {{ reached.environ = require('fs').readFileSync('/proc/{host}/environ', 'utf8') }}
        catch (e) {{ reached.environ = 'refused: ' + e.code }}
        return reached;
        ",
        path = secret.display(),
        host = std::process::id(),
    );
    let result = code(&s.server, json!({ "code": script })).await;
    assert!(result.success, "{:?}", result.error);
    let reached = &result.output["value"];
    let env: Vec<&str> = reached["env"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(env.contains(&"PATH"), "{env:?}");
    for name in &env {
        assert!(
            [
                "HOME",
                "LANG",
                "PATH",
                "PYTHONDONTWRITEBYTECODE",
                "PYTHONIOENCODING",
                "TMPDIR"
            ]
            .contains(name),
            "the script sees `{name}` of the host's environment: {env:?}"
        );
    }
    for (what, held) in [
        ("shell", "refused: Command failed"),
        ("signal", "refused: ESRCH"),
        ("environ", "refused: ENOENT"),
    ] {
        let found = reached[what].as_str().unwrap_or_default();
        assert!(found.starts_with(held), "{what}: {reached}");
    }
    assert!(
        !reached.to_string().contains("the host's secret"),
        "{reached}"
    );
    assert_ne!(reached["ppid"], json!(std::process::id()));
    // Without the sandbox the same script reads the secret: the test can fail.
    let open = setup(CodeMode::new().sandbox(Sandbox::none()));
    std::fs::write(open.outside.join("secret.txt"), "the host's secret\n").unwrap();
    let script = script.replace(
        &s.outside.display().to_string(),
        &open.outside.display().to_string(),
    );
    let result = code(&open.server, json!({ "code": script })).await;
    assert_eq!(
        result.output["value"]["shell"], "the host's secret\n",
        "{:?}",
        result.error
    );
    still_serving(&s.server).await;
}
