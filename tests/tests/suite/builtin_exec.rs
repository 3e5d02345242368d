//! `code_exec` and `bash` through the server, with real `python3`, `node` and shell
//! processes: output, exit codes, the time limit, output caps, the cleared environment,
//! closed standard input, and children that try to outlive the run.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use aleph_tools::builtin::CodeExec;
use aleph_tools::prelude::*;
use aleph_tools::{ProgressEvent, ToolCallRequest, ToolErrorKind};
use aleph_tools_tests::{eventually, processes_running};
use serde_json::{Value, json};

fn server(root: &Path, exec: CodeExec) -> AlephToolServer {
    AlephToolServer::builder()
        .with_builtin(exec)
        .with_builtin(CodeExec::new().bash_only())
        .with_working_dir(root)
        .with_allowed_paths([root])
        .build()
        .unwrap()
}

fn workspace() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::write(root.join("data.txt"), "from the workspace\n").unwrap();
    (dir, root)
}

async fn run(server: &AlephToolServer, language: &str, code: &str) -> ToolResult {
    let result = server
        .call("code_exec", json!({ "language": language, "code": code }))
        .await;
    assert!(result.success, "{language}: {:?}", result.error);
    result
}

#[tokio::test]
async fn python_javascript_and_shell_run_and_report_their_exit_code() {
    let (_dir, root) = workspace();
    let server = server(&root, CodeExec::new());
    let py = run(
        &server,
        "python",
        "import sys\nprint(open('../data.txt').read().strip())\nprint('to stderr', file=sys.stderr)\nsys.exit(3)",
    )
    .await;
    assert_eq!(py.output["exit_code"], 3);
    assert_eq!(py.output["stdout"], "from the workspace\n");
    assert_eq!(py.output["stderr"], "to stderr\n");
    assert!(
        py.model_text().starts_with("exit code 3"),
        "{}",
        py.model_text()
    );
    let js = run(&server, "javascript", "console.log(6 * 7)").await;
    assert_eq!(js.output["exit_code"], 0);
    assert_eq!(js.output["stdout"], "42\n");
    let sh = run(&server, "shell", "echo $((6 * 7)); pwd").await;
    let stdout = sh.output["stdout"].as_str().unwrap();
    let mut lines = stdout.lines();
    assert_eq!(lines.next(), Some("42"));
    let run_dir = PathBuf::from(lines.next().unwrap());
    assert_eq!(run_dir.parent(), Some(root.as_path()));
    assert!(
        !run_dir.exists(),
        "the run's directory is removed afterwards"
    );
    let bash = server
        .call("bash", json!({ "command": "arr=(a b c); echo ${#arr[@]}" }))
        .await;
    assert_eq!(bash.output["stdout"], "3\n");
}

#[tokio::test]
async fn the_environment_is_cleared_and_stdin_is_closed() {
    let (_dir, root) = workspace();
    let server = server(&root, CodeExec::new().allow_env(["ALEPH_EXEC_ALLOWED"]));
    let env = run(&server, "shell", "env | cut -d= -f1 | sort | tr '\\n' ' '").await;
    let names = env.output["stdout"].as_str().unwrap().to_owned();
    for name in names.split_whitespace() {
        assert!(
            [
                "PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "PWD", "SHLVL", "_",
                "OLDPWD"
            ]
            .contains(&name),
            "{name} leaked into the environment: {names}"
        );
    }
    let stdin = run(
        &server,
        "python",
        "import sys\ndata = sys.stdin.read()\nprint(repr(data))",
    )
    .await;
    assert_eq!(stdin.output["stdout"], "''\n");
    let started = Instant::now();
    let cat = run(&server, "shell", "cat; echo done").await;
    assert_eq!(cat.output["stdout"], "done\n");
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[tokio::test]
async fn the_time_limit_kills_everything_the_program_started() {
    let (_dir, root) = workspace();
    let server = server(&root, CodeExec::new());
    // The background child leaves the process group and the session; the sandbox ends it.
    let code = "setsid sleep 86401 & echo started; sleep 86401";
    let started = Instant::now();
    let result = server
        .call(
            "code_exec",
            json!({ "language": "shell", "code": code, "timeout_secs": 1 }),
        )
        .await;
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert!(result.success);
    assert_eq!(result.output["timed_out"], true);
    assert_eq!(result.output["exit_code"], Value::Null);
    assert_eq!(result.output["stdout"], "started\n");
    assert!(
        result.model_text().starts_with("timed out after 1 s"),
        "{}",
        result.model_text()
    );
    eventually("the background child was killed", || {
        processes_running(&["sleep", "86401"]) == 0
    })
    .await;
}

#[tokio::test]
async fn a_child_that_outlives_its_parent_is_killed_when_the_parent_exits() {
    let (_dir, root) = workspace();
    let server = server(&root, CodeExec::new());
    // The child keeps the output pipe open; were it not ended with the program, the run
    // would last until its time limit.
    let code = "import subprocess, os\np = subprocess.Popen(['sleep', '86402'], start_new_session=True)\nprint('parent done')";
    let started = Instant::now();
    let result = run(&server, "python", code).await;
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(result.output["exit_code"], 0, "{}", result.model_text());
    assert_eq!(result.output["timed_out"], false);
    eventually("the orphan was killed", || {
        processes_running(&["sleep", "86402"]) == 0
    })
    .await;
}

#[tokio::test]
async fn a_hundred_megabytes_of_output_is_capped_at_both_ends() {
    let (_dir, root) = workspace();
    let server = server(&root, CodeExec::new().output_limit(1000));
    let code = "import sys\nsys.stdout.write('BEGIN')\nchunk = 'é' * 500000\nfor _ in range(100): sys.stdout.write(chunk)\nsys.stdout.write('END')";
    let result = run(&server, "python", code).await;
    let stdout = result.output["stdout"].as_str().unwrap();
    assert!(stdout.starts_with("BEGIN"), "{}", &stdout[..40]);
    assert!(stdout.ends_with("END"));
    assert!(stdout.len() < 1200, "{}", stdout.len());
    assert!(stdout.contains("bytes left out"));
    let omitted = result.output["stdout_omitted"].as_u64().unwrap();
    assert!(omitted > 99_000_000, "{omitted}");
    assert_eq!(result.output["exit_code"], 0);
}

#[tokio::test]
async fn output_streams_as_progress_chunks() {
    let (_dir, root) = workspace();
    let server = server(&root, CodeExec::new());
    let chunks = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&chunks);
    let ctx = ToolContext::new().with_progress(move |_, event| {
        if let ProgressEvent::Chunk { text } = event {
            seen.lock().unwrap().push(text);
        }
    });
    let request: ToolCallRequest<'_> = server.call(
        "code_exec",
        json!({ "language": "python", "code": "import time\nfor i in range(3):\n    print('tick', i)\n    time.sleep(0.1)" }),
    );
    let result = request.context(ctx).await;
    assert!(result.success);
    let streamed = chunks.lock().unwrap().concat();
    assert_eq!(streamed, "tick 0\ntick 1\ntick 2\n");
    assert!(
        chunks.lock().unwrap().len() >= 2,
        "{:?}",
        chunks.lock().unwrap()
    );
}

#[tokio::test]
async fn a_missing_interpreter_and_bad_arguments_are_clear_errors() {
    let (_dir, root) = workspace();
    let server = server(&root, CodeExec::new().python("python-that-does-not-exist"));
    let missing = server
        .call(
            "code_exec",
            json!({ "language": "python", "code": "print(1)" }),
        )
        .await;
    assert!(
        missing
            .error
            .as_deref()
            .unwrap()
            .contains("`python-that-does-not-exist` is not installed here"),
        "{:?}",
        missing.error
    );
    let language = server
        .call("code_exec", json!({ "language": "cobol", "code": "x" }))
        .await;
    assert!(
        language.error.as_deref().unwrap().contains("/language"),
        "{:?}",
        language.error
    );
    let no_code = server
        .call("code_exec", json!({ "language": "shell" }))
        .await;
    assert!(
        no_code.error.as_deref().unwrap().contains("code"),
        "{:?}",
        no_code.error
    );
    // The server keeps serving.
    let fine = server
        .call(
            "code_exec",
            json!({ "language": "shell", "code": "echo ok" }),
        )
        .await;
    assert_eq!(fine.output["stdout"], "ok\n");
}

#[tokio::test]
async fn a_cancelled_call_kills_everything_it_started() {
    let (_dir, root) = workspace();
    let server = server(&root, CodeExec::new());
    let token = CancellationToken::new();
    let code = "sleep 86403";
    let call = {
        let (server, token) = (server.clone(), token.clone());
        tokio::spawn(async move {
            server
                .call("code_exec", json!({ "language": "shell", "code": code }))
                .context(ToolContext::new().with_cancellation(token))
                .await
        })
    };
    eventually("the program started", || {
        processes_running(&["sleep", "86403"]) == 1
    })
    .await;
    token.cancel();
    let result = call.await.unwrap();
    assert_eq!(result.error_kind, Some(ToolErrorKind::Cancelled));
    eventually("the cancelled program was killed", || {
        processes_running(&["sleep", "86403"]) == 0
    })
    .await;
}
