//! The command's part of the security suite (`book/src/threat-model.md`): what it trusts
//! without being told, and what a model may run through `chat`, tried with the built binary
//! against real files and a Chat Completions API on loopback.

use std::path::Path;
use std::process::{Command, Output};

use aleph_tools_tests::model_api::{ModelApi, Reply};
use serde_json::{Value, json};

use crate::output::text;

/// The command run in `dir`, with `home` as the user's home and no config from the
/// environment.
fn command(dir: &Path, home: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_aleph-tools"));
    command
        .current_dir(dir)
        .env("HOME", home)
        .env_remove("ALEPH_TOOLS_CONFIG")
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("RUST_LOG");
    command
}

/// A cloned repository holding an `aleph-tools.toml` whose `[[mcp_servers]]` entry would
/// run a program, and a `plugins/` directory: neither is used unless named.
#[test]
fn a_project_directory_is_not_trusted_unless_named() {
    let root = tempfile::tempdir().unwrap();
    let (home, repo) = (root.path().join("home"), root.path().join("repo"));
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(repo.join("plugins")).unwrap();
    // Where the trap's command may write: it runs in the sandbox, in the repository.
    let marker = repo.join("ran");
    std::fs::write(
        repo.join("aleph-tools.toml"),
        format!(
            "[[mcp_servers]]\nname = \"trap\"\ncommand = \"sh\"\nargs = [\"-c\", \"touch {}\"]\n",
            marker.display()
        ),
    )
    .unwrap();

    let output = command(&repo, &home)
        .args(["tools", "list"])
        .output()
        .unwrap();
    let err = text(&output.stderr);
    assert!(output.status.success(), "{err}");
    assert!(!marker.exists(), "the project's config started a program");
    let said: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("aleph-tools:"))
        .collect();
    assert_eq!(
        said.len(),
        1,
        "one line says where the config came from: {err}"
    );
    assert!(said[0].contains("no config file"), "{err}");
    assert!(
        said[0].contains("`./aleph-tools.toml` is not read unless named"),
        "{err}"
    );
    assert!(
        said[0].contains("`./plugins` is not searched unless named"),
        "{err}"
    );

    // Named, the same file is read, and says so: the trap above was armed.
    let named = command(&repo, &home)
        .args(["tools", "list", "--config", "aleph-tools.toml"])
        .output()
        .unwrap();
    let err = text(&named.stderr);
    assert!(
        err.contains("aleph-tools: config `aleph-tools.toml`"),
        "{err}"
    );
    assert!(marker.exists(), "a named config is read: {err}");

    // The user's own config is read without being named: `~/.aleph/config.toml`, then the
    // one in the platform's config directory in its place once that exists.
    let config_in = |file: &Path, xdg: Option<&Path>| {
        let mut command = command(&repo, &home);
        if let Some(xdg) = xdg {
            command.env("XDG_CONFIG_HOME", xdg);
        }
        let err = text(&command.args(["tools", "list"]).output().unwrap().stderr);
        assert!(
            err.contains(&format!("config `{}`", file.display())),
            "{err}"
        );
    };
    let older = home.join(".aleph/config.toml");
    std::fs::create_dir_all(older.parent().unwrap()).unwrap();
    std::fs::write(&older, "[tools]\nblocked = [\"x\"]\n").unwrap();
    config_in(&older, None);
    let user = home.join(".config/aleph-tools/config.toml");
    std::fs::create_dir_all(user.parent().unwrap()).unwrap();
    std::fs::write(&user, "[tools]\nblocked = [\"y\"]\n").unwrap();
    config_in(&user, None);
    let xdg = home.join("xdg");
    let elsewhere = xdg.join("aleph-tools/config.toml");
    std::fs::create_dir_all(elsewhere.parent().unwrap()).unwrap();
    std::fs::write(&elsewhere, "[tools]\nblocked = [\"z\"]\n").unwrap();
    config_in(&elsewhere, Some(&xdg));
    // A relative XDG_CONFIG_HOME is not a place (the XDG rules): the default is used.
    config_in(&user, Some(Path::new("xdg")));
}

fn chunk(delta: &Value, finish: Option<&str>) -> Value {
    json!({ "object": "chat.completion.chunk", "choices": [{ "index": 0, "delta": delta, "finish_reason": finish }] })
}

/// A turn calling `name` with `arguments`, then a turn answering "done".
fn calls_then_done(name: &str, arguments: &Value) -> Vec<Reply> {
    vec![
        Reply::stream([
            chunk(
                &json!({ "role": "assistant", "tool_calls": [{ "index": 0, "id": "call_1", "type": "function", "function": { "name": name, "arguments": arguments.to_string() } }] }),
                None,
            ),
            chunk(&json!({}), Some("tool_calls")),
            json!("[DONE]"),
        ]),
        Reply::stream([
            chunk(&json!({ "content": "done" }), None),
            chunk(&json!({}), Some("stop")),
            json!("[DONE]"),
        ]),
    ]
}

fn chat(workspace: &Path, api: &ModelApi, extra: &[&str]) -> Output {
    command(workspace, workspace)
        .env("OPENAI_API_KEY", "sk-loopback")
        .env_remove("OPENAI_BASE_URL")
        .args(["--builtin", "chat", "--model", "m", "--base-url"])
        .arg(format!("{}/v1", api.url))
        .args(extra)
        .arg("clean up")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap()
}

/// `chat --builtin` with nobody at the terminal: the model's `bash` does not run unless
/// `--yes` names it, and naming another tool approves nothing else.
#[test]
fn chat_runs_the_models_shell_only_when_approved_by_name() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let root = tempfile::tempdir().unwrap();
    let workspace = root.path().join("work");
    // What the model's shell would delete: inside the workspace, where the sandbox lets an
    // approved call write.
    let victim = workspace.join("keep");
    std::fs::create_dir_all(&victim).unwrap();
    std::fs::write(victim.join("keep.txt"), "mine").unwrap();
    let script = json!({ "command": format!("rm -rf {}", victim.display()) });

    for refused in [&[][..], &["--yes=file_write,file_delete"][..]] {
        let api = runtime.block_on(ModelApi::start(calls_then_done("bash", &script)));
        let output = chat(&workspace, &api, refused);
        let err = text(&output.stderr);
        assert!(output.status.success(), "{err}");
        assert!(victim.join("keep.txt").exists(), "bash ran: {err}");
        assert!(err.contains("[bash("), "{err}");
        assert!(err.contains("needs the user's approval"), "{err}");
        assert!(err.contains("--yes=bash"), "{err}");
        let answered = &api.bodies()[1]["messages"];
        let result = answered.as_array().unwrap().last().unwrap();
        assert!(
            result["content"].as_str().unwrap().contains("approval"),
            "{result}"
        );
    }

    // `--yes` takes its tools after `=` only: a prompt is never read as a tool name.
    let api = runtime.block_on(ModelApi::start(calls_then_done("bash", &script)));
    let misread = chat(&workspace, &api, &["--yes", "bash"]);
    assert_eq!(misread.status.code(), Some(2), "{}", text(&misread.stderr));
    assert!(api.received().is_empty());

    let output = chat(&workspace, &api, &["--yes=bash"]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(!victim.exists(), "approved by name, bash runs");
}

/// The provider's key in the environment never goes to a `--base-url` server; the key
/// `--api-key-env` names does.
#[test]
fn chat_sends_a_base_url_only_the_key_named_for_it() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let done = || {
        vec![Reply::stream([
            chunk(&json!({ "content": "hi" }), None),
            chunk(&json!({}), Some("stop")),
            json!("[DONE]"),
        ])]
    };

    let api = runtime.block_on(ModelApi::start(done()));
    let output = chat(dir.path(), &api, &[]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_eq!(api.received()[0].header("authorization"), None);

    let api = runtime.block_on(ModelApi::start(done()));
    let output = command(dir.path(), dir.path())
        .env("OPENAI_API_KEY", "sk-loopback")
        .env("LOCAL_MODEL_KEY", "sk-local")
        .env_remove("OPENAI_BASE_URL")
        .args([
            "chat",
            "--model",
            "m",
            "--api-key-env",
            "LOCAL_MODEL_KEY",
            "--base-url",
        ])
        .arg(format!("{}/v1", api.url))
        .arg("hello")
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_eq!(
        api.received()[0].header("authorization"),
        Some("Bearer sk-local")
    );
}

/// A wrapped MCP server that never answers cannot keep `serve` from answering its client:
/// the client is answered at once, and the server joins (or is left out) on its own time.
#[test]
fn a_wrapped_server_that_hangs_does_not_hold_up_serve() {
    use std::io::{BufRead as _, BufReader, Write as _};
    use std::process::Stdio;
    use std::sync::mpsc;
    use std::time::Duration;

    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("hang.toml");
    std::fs::write(
        &config,
        "[[mcp_servers]]\nname = \"stuck\"\ncommand = \"sleep\"\nargs = [\"600\"]\n",
    )
    .unwrap();
    let mut child = command(dir.path(), dir.path())
        .args(["--builtin", "serve", "--stdio", "--config"])
        .arg(&config)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    let (lines, received) = mpsc::channel();
    let output = BufReader::new(child.stdout.take().unwrap());
    std::thread::spawn(move || {
        for line in output.lines() {
            if lines.send(line.unwrap()).is_err() {
                break;
            }
        }
    });
    let mut ask = |request: Value| {
        writeln!(input, "{request}").unwrap();
        input.flush().unwrap();
    };
    ask(
        json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": { "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": { "name": "t", "version": "1" } } }),
    );
    // The wrapped server is given 30 s to connect; the answer must not wait for it.
    let answer = received.recv_timeout(Duration::from_secs(20));
    let _ = child.kill();
    let _ = child.wait();
    let answer: Value = serde_json::from_str(&answer.expect("initialize is answered")).unwrap();
    assert_eq!(answer["id"], 1);
    assert!(answer["result"]["serverInfo"].is_object(), "{answer}");
}

/// Under an address-space limit (`ulimit -v`), WebAssembly plugins load when the config says
/// how much address space an instance may reserve; without it, they are left out, saying why.
#[test]
fn webassembly_plugins_load_under_an_address_space_limit_when_told_the_reservation() {
    let dir = tempfile::tempdir().unwrap();
    let plugins = dir.path().join("plugins");
    aleph_tools_tests::copy_dir(
        &aleph_tools_tests::example_plugins().join("text-tools"),
        &plugins.join("text-tools"),
    );
    let call = |config: &str| {
        let file = dir.path().join("limited.toml");
        std::fs::write(
            &file,
            format!("[plugins]\nsearch_paths = [\"plugins\"]\n{config}"),
        )
        .unwrap();
        let script = format!(
            "ulimit -v 2000000 && exec {:?} --config {:?} tools call word_count '{{\"text\": \"a b c\"}}'",
            env!("CARGO_BIN_EXE_aleph-tools"),
            file
        );
        // A shell sets the limit, then becomes the command.
        Command::new("sh")
            .current_dir(dir.path())
            .env("HOME", dir.path())
            .env_remove("ALEPH_TOOLS_CONFIG")
            .env_remove("XDG_CONFIG_HOME")
            .args(["-c", &script])
            .output()
            .unwrap()
    };
    let unlimited = call("");
    assert!(!unlimited.status.success());
    assert!(
        text(&unlimited.stderr).contains("Cannot allocate memory"),
        "{}",
        text(&unlimited.stderr)
    );
    let told = call("[plugins.runtimes.wasm]\nmemory_reservation = \"64MB\"\n");
    assert!(told.status.success(), "{}", text(&told.stderr));
    assert!(
        text(&told.stdout).contains("\"words\": 3"),
        "{}",
        text(&told.stdout)
    );
}

/// A model's `bash` cannot read the command's environment (its API keys and bearer tokens)
/// through `/proc/$PPID/environ`. Run as a user other than root, as a server should be (root
/// may read any process); when the tests run as root, the command runs as `nobody`.
#[test]
fn bash_cannot_read_the_commands_environment() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let root = runs_as_root();
    if root {
        // `nobody` runs in a directory it may write.
        std::fs::set_permissions(
            dir.path(),
            std::os::unix::fs::PermissionsExt::from_mode(0o777),
        )
        .unwrap();
        std::fs::set_permissions(&work, std::os::unix::fs::PermissionsExt::from_mode(0o777))
            .unwrap();
    }
    let mut run = if root {
        // A copy `nobody` may run, wherever the build directory is (a home only root reads).
        let binary = dir.path().join("aleph-tools");
        std::fs::copy(env!("CARGO_BIN_EXE_aleph-tools"), &binary).unwrap();
        std::fs::set_permissions(&binary, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        let mut run = Command::new("setpriv");
        run.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(&binary);
        run
    } else {
        Command::new(env!("CARGO_BIN_EXE_aleph-tools"))
    };
    let script = r"cat /proc/$PPID/environ | tr '\0' '\n' | grep -c ALEPH_TEST_SECRET; cat /proc/$PPID/mem >/dev/null; echo done";
    let output = run
        .current_dir(&work)
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("HOME", &work)
        .env("ALEPH_TEST_SECRET", "hunter2")
        .args(["--builtin", "tools", "call", "bash"])
        .arg(json!({ "command": script }).to_string())
        .output()
        .unwrap();
    let (out, err) = (text(&output.stdout), text(&output.stderr));
    assert!(output.status.success(), "{out}\n{err}");
    let result: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(result["stdout"], "0\ndone\n", "{result}");
    let stderr = result["stderr"].as_str().unwrap();
    assert!(stderr.contains("environ: Permission denied"), "{stderr}");
    assert!(stderr.contains("mem: Permission denied"), "{stderr}");
    assert!(!out.contains("hunter2"), "{out}");
}

/// Whether the tests run as root.
fn runs_as_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|line| line.strip_prefix("Uid:"))
                .and_then(|ids| ids.split_whitespace().nth(1).map(|e| e == "0"))
        })
        .unwrap_or(false)
}
