//! The `aleph-tools` command, run as a built binary: serving the example plugins to the
//! official Python MCP client, checking broken manifests, printing provider tools arrays, and
//! managing plugins, each with the exit code and messages a user sees.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use aleph_tools::AlephToolServer;
use aleph_tools::plugin::{PluginManager, PluginsConfig};
use aleph_tools::provider::Provider;
use aleph_tools_tests::manifests::broken_manifests;
use aleph_tools_tests::{copy_dir, example_plugins, interop_peers, node_plugin};
use serde_json::Value;

use crate::output::{stderr, stdout, succeeded};

const EXAMPLES: [&str; 5] = [
    "call-guard",
    "http-fetch",
    "notes-node",
    "text-tools",
    "weather-node",
];

/// A scratch world for the command: a home directory, a working directory, and the example
/// plugins copied into `plugins/`.
struct World {
    root: tempfile::TempDir,
}

impl World {
    fn new() -> Self {
        let world = Self {
            root: tempfile::tempdir().unwrap(),
        };
        std::fs::create_dir_all(world.home()).unwrap();
        std::fs::create_dir_all(world.plugins()).unwrap();
        world
    }

    fn with_examples() -> Self {
        let world = Self::new();
        let examples = example_plugins();
        for name in EXAMPLES {
            copy_dir(&examples.join(name), &world.plugins().join(name));
        }
        world
    }

    fn home(&self) -> PathBuf {
        self.root.path().join("home")
    }

    fn plugins(&self) -> PathBuf {
        self.root.path().join("work/plugins")
    }

    fn config(&self) -> PathBuf {
        self.root.path().join("work/aleph-tools.toml")
    }

    /// The command run in the working directory; the config there, when there is one, is
    /// named through `ALEPH_TOOLS_CONFIG` (the command reads none from the working directory
    /// by itself).
    fn command(&self) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_aleph-tools"));
        command
            .current_dir(self.root.path().join("work"))
            .env("HOME", self.home())
            .env_remove("ALEPH_TOOLS_CONFIG")
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("RUST_LOG");
        if self.config().is_file() {
            command.env("ALEPH_TOOLS_CONFIG", self.config());
        }
        command
    }

    fn run(&self, args: &[&str]) -> Output {
        self.command().args(args).output().unwrap()
    }
}

/// The standard error of a failed run, checked to exit with 1, print nothing on standard
/// output and say `error: ` once.
#[track_caller]
fn failed(output: &Output) -> String {
    assert_eq!(output.status.code(), Some(1), "{}", stderr(output));
    assert_eq!(stdout(output), "", "{}", stderr(output));
    let text = stderr(output);
    assert_eq!(text.matches("error: ").count(), 1, "{text}");
    text
}

#[test]
fn serve_stdio_is_answered_by_the_official_python_client() {
    let world = World::with_examples();
    std::fs::write(
        world.config(),
        "[plugins]\nsearch_paths = [\"plugins\"]\n\n[tools]\nblocked = [\"echo\"]\n",
    )
    .unwrap();
    let staging = tempfile::tempdir().unwrap();
    let greeter = node_plugin(
        staging.path(),
        "greeter",
        "[plugin]\nid = \"greeter\"\nversion = \"1.0.0\"\nkind = \"nodejs\"\nentry = \"index.js\"\n\n[[tools]]\nname = \"greet\"\ndescription = \"Greet someone.\"\n",
        r#"require("@aleph/plugin-sdk").createServer({ name: "greeter", tools: { greet: ({ who }) => `hello ${who}` } }).start();"#,
    );
    let peers = interop_peers();
    let config = world.config();
    let output = Command::new(peers.join(".venv/bin/python"))
        .arg(peers.join("plugins_client.py"))
        .arg("--add")
        .arg(&greeter)
        .arg("--into")
        .arg(world.plugins())
        .arg("--")
        .arg(env!("CARGO_BIN_EXE_aleph-tools"))
        .args(["serve", "--stdio", "--config"])
        .arg(&config)
        .env("HOME", world.home())
        .output()
        .unwrap();
    let text = succeeded(&output);
    assert!(text.contains("passed: 8"), "{text}\n{}", stderr(&output));
    assert_eq!(text.matches("ok: ").count(), 8, "{text}");
}

#[test]
fn serve_browser_is_driven_by_the_official_python_client() {
    let world = World::new();
    let config = world.root.path().join("aleph-tools.toml");
    std::fs::write(
        &config,
        "[browser]\nallow_hosts = [\"connect:127.0.0.1\"]\nmax_tabs = 4\n",
    )
    .unwrap();
    let documents = world.root.path().join("documents");
    std::fs::create_dir_all(&documents).unwrap();
    let peers = interop_peers();
    let output = Command::new(peers.join(".venv/bin/python"))
        .arg(peers.join("browser_client.py"))
        .arg("--pdf-dir")
        .arg(&documents)
        .arg("--")
        .arg(env!("CARGO_BIN_EXE_aleph-tools"))
        .args(["serve", "--stdio", "--browser", "--config"])
        .arg(&config)
        .arg("--allowed-path")
        .arg(&documents)
        .env("HOME", world.home())
        .env_remove("ALEPH_TOOLS_CONFIG")
        .env_remove("XDG_CONFIG_HOME")
        .output()
        .unwrap();
    let text = succeeded(&output);
    assert!(text.contains("passed: 6"), "{text}\n{}", stderr(&output));
    assert!(documents.join("notes.pdf").is_file());
}

#[test]
fn serve_builtin_and_code_mode_are_answered_by_the_official_python_client() {
    let world = World::new();
    let workspace = world.root.path().join("work/space");
    std::fs::create_dir_all(&workspace).unwrap();
    let skills = world.root.path().join("skills");
    std::fs::create_dir_all(skills.join("greet")).unwrap();
    std::fs::write(
        skills.join("greet/SKILL.md"),
        "---\ndescription: Greet someone.\narguments:\n  - name: name\n---\nSay hello to {{name}}.\n",
    )
    .unwrap();
    let peers = interop_peers();
    let output = Command::new(peers.join(".venv/bin/python"))
        .arg(peers.join("builtin_client.py"))
        .arg("--skills")
        .arg(&skills)
        .arg("--code-mode")
        .arg(&workspace)
        .arg("--")
        .arg(env!("CARGO_BIN_EXE_aleph-tools"))
        .args([
            "serve",
            "--stdio",
            "--yes",
            "--builtin",
            "--code-mode",
            "--allowed-path",
        ])
        .arg(&workspace)
        .arg("--skills")
        .arg(&skills)
        .current_dir(&workspace)
        .env("HOME", world.home())
        .env_remove("ALEPH_TOOLS_CONFIG")
        .env_remove("XDG_CONFIG_HOME")
        .output()
        .unwrap();
    let text = succeeded(&output);
    assert!(text.contains("passed: 14"), "{text}\n{}", stderr(&output));
}

#[test]
fn builtin_tools_are_bounded_by_the_allowed_paths() {
    let world = World::new();
    let workspace = world.root.path().join("work/space");
    std::fs::create_dir_all(&workspace).unwrap();
    std::fs::write(workspace.join("a.txt"), "inside\n").unwrap();
    let read = world.run(&[
        "--builtin",
        "--allowed-path",
        "space",
        "tools",
        "call",
        "file_read",
        r#"{"path": "a.txt"}"#,
    ]);
    assert!(
        succeeded(&read).contains("\"inside\\n\""),
        "{}",
        stdout(&read)
    );
    let outside = world.run(&[
        "--builtin",
        "--allowed-path",
        "space",
        "tools",
        "call",
        "file_list",
        r#"{"path": ".."}"#,
    ]);
    assert!(
        failed(&outside).contains("outside the allowed directories"),
        "{}",
        stderr(&outside)
    );
    let missing = world.run(&["--builtin", "--allowed-path", "nowhere", "tools", "list"]);
    assert!(
        failed(&missing).contains("`nowhere` is not a directory"),
        "{}",
        stderr(&missing)
    );
    let needs_builtin = world.run(&["--allowed-path", "space", "tools", "list"]);
    assert!(
        failed(&needs_builtin).contains("give one of them too"),
        "{}",
        stderr(&needs_builtin)
    );
}

#[test]
fn plugins_check_names_each_broken_manifest() {
    let world = World::new();
    for (i, case) in broken_manifests().into_iter().enumerate() {
        let dir = world.root.path().join(format!("broken-{i}"));
        case.write(&dir);
        let output = world.run(&["plugins", "check", dir.to_str().unwrap()]);
        let message = failed(&output);
        assert!(message.contains(case.words), "{}: {message}", case.what);
        if !case.key.is_empty() {
            assert!(
                message.contains(&format!("`{}`", case.key)),
                "{}: {message}",
                case.what
            );
        }
        assert!(
            message.contains("aleph_plugin.toml"),
            "{}: {message}",
            case.what
        );
    }

    let good = world.root.path().join("text-tools");
    copy_dir(&example_plugins().join("text-tools"), &good);
    let text = succeeded(&world.run(&["plugins", "check", good.to_str().unwrap()]));
    assert!(
        text.starts_with(
            "ok: `text-tools` 1.0.0 (wasm): 3 tools: echo, slugify, word_count; 1 command: version\nsandbox: "
        ),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn tools_list_for_a_provider_prints_the_exact_tools_array() {
    let world = World::with_examples();
    let plugins = world.plugins();
    let server = AlephToolServer::new();
    let manager = PluginManager::new(&server, PluginsConfig::with_search_paths([&plugins]));
    let report = tokio::task::spawn_blocking(move || manager.load_all())
        .await
        .unwrap();
    assert!(report.failed.is_empty(), "{:?}", report.failed);
    for (flag, provider) in [
        ("openai", Provider::OpenAiChat),
        ("anthropic", Provider::Anthropic),
        ("gemini", Provider::Gemini),
        ("mcp", Provider::Mcp),
    ] {
        let printed = succeeded(&world.run(&[
            "tools",
            "list",
            "--provider",
            flag,
            "--plugins",
            plugins.to_str().unwrap(),
        ]));
        let printed: Value = serde_json::from_str(&printed).unwrap();
        assert_eq!(printed, *server.tools().for_provider(provider), "{flag}");
    }
    let table = succeeded(&world.run(&["tools", "list", "--plugins", plugins.to_str().unwrap()]));
    assert!(table.starts_with("NAME "), "{table}");
    assert!(
        table.contains("word_count  Plugin    Count the words, lines and characters of a text."),
        "{table}"
    );
    // The whole definitions, as the server lists them.
    let json = succeeded(&world.run(&[
        "tools",
        "list",
        "--json",
        "--plugins",
        plugins.to_str().unwrap(),
    ]));
    let json: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(
        json,
        serde_json::to_value(server.tools().definitions()).unwrap()
    );
    assert!(
        json.as_array()
            .unwrap()
            .iter()
            .any(|tool| tool["name"] == "word_count"
                && tool["parameters"]["properties"]["text"].is_object()),
        "{json}"
    );
}

fn archive(dir: &Path) -> PathBuf {
    let script = "import shutil, sys; print(shutil.make_archive(sys.argv[1], 'gztar', sys.argv[2], sys.argv[3]))";
    let output = Command::new("python3")
        .args(["-c", script])
        .arg(dir.with_extension("release"))
        .arg(dir.parent().unwrap())
        .arg(dir.file_name().unwrap())
        .output()
        .unwrap();
    PathBuf::from(succeeded(&output).trim())
}

#[test]
fn plugins_are_installed_run_disabled_enabled_and_uninstalled() {
    let world = World::new();
    std::fs::write(
        world.config(),
        "# my settings\n[plugins]\nsearch_paths = [\"plugins\"]\n\n[tools]\nrequire_confirmation = [\"slugify\"]\n",
    )
    .unwrap();
    let source = world.root.path().join("text-tools");
    copy_dir(&example_plugins().join("text-tools"), &source);
    let packed = archive(&source);

    let text = succeeded(&world.run(&["plugins", "install", packed.to_str().unwrap()]));
    assert!(
        text.starts_with("installed `text-tools` 1.0.0 (wasm): 3 tools"),
        "{text}"
    );
    assert!(
        world
            .plugins()
            .join("text-tools/aleph_plugin.toml")
            .is_file()
    );
    let again = failed(&world.run(&["plugins", "install", packed.to_str().unwrap()]));
    assert!(again.contains("uninstall"), "{again}");

    let list = succeeded(&world.run(&["plugins", "list"]));
    assert!(
        list.contains("text-tools  1.0.0    wasm  running  echo, slugify, word_count"),
        "{list}"
    );
    let json: Value =
        serde_json::from_str(&succeeded(&world.run(&["plugins", "list", "--json"]))).unwrap();
    let [plugin] = json.as_array().unwrap().as_slice() else {
        panic!("one plugin: {json}");
    };
    for (key, value) in [
        ("id", serde_json::json!("text-tools")),
        ("version", serde_json::json!("1.0.0")),
        ("kind", serde_json::json!("wasm")),
        ("status", serde_json::json!("running")),
        (
            "tools",
            serde_json::json!(["echo", "slugify", "word_count"]),
        ),
        ("commands", serde_json::json!(["version"])),
    ] {
        assert_eq!(plugin[key], value, "{key}: {plugin}");
    }
    assert!(
        plugin["dir"]
            .as_str()
            .is_some_and(|dir| dir.ends_with("plugins/text-tools")),
        "{plugin}"
    );
    let version = succeeded(&world.run(&["plugins", "command", "text-tools", "version"]));
    let version: Value = serde_json::from_str(&version).unwrap();
    assert_eq!(version["version"], "1.0.0", "{version}");
    let counted = succeeded(&world.run(&["tools", "call", "word_count", r#"{"text": "a b"}"#]));
    assert_eq!(serde_json::from_str::<Value>(&counted).unwrap()["words"], 2);
    let unapproved = failed(&world.run(&["tools", "call", "Slugify", r#"{"text": "A B"}"#]));
    assert!(
        unapproved.contains("`slugify` needs a person's approval; pass --yes"),
        "{unapproved}"
    );
    let slug = succeeded(&world.run(&["tools", "call", "slugify", r#"{"text": "A B"}"#, "--yes"]));
    assert_eq!(slug.trim(), "a-b");

    let text = succeeded(&world.run(&["plugins", "disable", "text-tools"]));
    assert!(text.contains("is disabled"), "{text}");
    let config = std::fs::read_to_string(world.config()).unwrap();
    assert!(config.starts_with("# my settings\n"), "{config}");
    assert!(config.contains("disabled = [\"text-tools\"]"), "{config}");
    let list = succeeded(&world.run(&["plugins", "list"]));
    assert!(
        list.contains("text-tools  1.0.0    wasm  stopped"),
        "{list}"
    );
    let refused = failed(&world.run(&["tools", "call", "word_count", r#"{"text": "a"}"#]));
    assert!(refused.contains("unknown tool"), "{refused}");
    let refused = failed(&world.run(&["plugins", "command", "text-tools", "version"]));
    assert!(
        refused.contains(
            "plugin `text-tools` is disabled in the config; `aleph-tools plugins enable text-tools`"
        ),
        "{refused}"
    );
    let text = succeeded(&world.run(&["plugins", "enable", "text-tools"]));
    assert!(
        text.contains("is enabled") && text.contains("it loads: `text-tools`"),
        "{text}"
    );
    assert!(succeeded(&world.run(&["plugins", "list"])).contains("running"));

    let text = succeeded(&world.run(&["plugins", "uninstall", "text-tools"]));
    assert!(text.starts_with("removed `"), "{text}");
    assert!(!world.plugins().join("text-tools").exists());
    let missing = failed(&world.run(&["plugins", "uninstall", "text-tools"]));
    assert!(missing.contains("no plugin `text-tools`"), "{missing}");
}

#[test]
fn services_and_commands_of_node_plugins() {
    let world = World::with_examples();
    let services = succeeded(&world.run(&[
        "plugins",
        "services",
        "--plugins",
        world.plugins().to_str().unwrap(),
    ]));
    assert!(services.starts_with("PLUGIN "), "{services}");
    assert!(services.contains("notes-node  backup"), "{services}");
    let json: Value = serde_json::from_str(&succeeded(&world.run(&[
        "plugins",
        "services",
        "--json",
        "--plugins",
        world.plugins().to_str().unwrap(),
    ])))
    .unwrap();
    let backup = json
        .as_array()
        .unwrap()
        .iter()
        .find(|service| service["plugin"] == "notes-node" && service["service"] == "backup")
        .unwrap_or_else(|| panic!("{json}"));
    assert!(
        backup["autoStart"].is_boolean() && backup["state"].is_string(),
        "{backup}"
    );
    let exported = succeeded(&world.run(&[
        "plugins",
        "command",
        "notes-node",
        "export",
        "{}",
        "--plugins",
        world.plugins().to_str().unwrap(),
    ]));
    serde_json::from_str::<Value>(&exported).unwrap();
    let unknown = failed(&world.run(&[
        "plugins",
        "command",
        "notes-node",
        "import",
        "--plugins",
        world.plugins().to_str().unwrap(),
    ]));
    assert!(
        unknown.contains("no such command; it has: export"),
        "{unknown}"
    );
}

#[test]
fn mistakes_exit_non_zero_with_one_readable_message() {
    let world = World::new();
    let missing = failed(&world.run(&["plugins", "list", "--config", "nowhere.toml"]));
    assert!(
        missing.contains("the config file `nowhere.toml` does not exist"),
        "{missing}"
    );

    std::fs::write(world.config(), "[tools]\nblocked = \"echo\"\n").unwrap();
    let bad = failed(&world.run(&["tools", "list"]));
    assert!(
        bad.contains("aleph-tools.toml") && bad.contains("line 2"),
        "{bad}"
    );
    std::fs::write(world.config(), "[[mcp_servers]]\nname = \"x\"\n").unwrap();
    let bad = failed(&world.run(&["tools", "list"]));
    assert!(bad.contains("exactly one of `command` and `url`"), "{bad}");
    std::fs::remove_file(world.config()).unwrap();

    let json = failed(&world.run(&["tools", "call", "x", "{nope"]));
    assert!(json.contains("the arguments are not JSON"), "{json}");
    let unknown = failed(&world.run(&["plugins", "command", "ghost", "run"]));
    assert!(
        unknown.contains("no plugin `ghost` in the search paths"),
        "{unknown}"
    );
    let nothing = failed(&world.run(&["plugins", "install", "ghost.zip"]));
    assert!(nothing.contains("cannot install `ghost.zip`"), "{nothing}");

    // A plugin that cannot load costs only itself.
    std::fs::create_dir_all(world.plugins().join("broken")).unwrap();
    std::fs::write(
        world.plugins().join("broken/aleph_plugin.toml"),
        "[plugin]\n",
    )
    .unwrap();
    let list = world.run(&["plugins", "list", "--plugins", "plugins"]);
    assert!(succeeded(&list).contains("broken"), "{}", stdout(&list));
    assert!(
        stderr(&list).contains("warning: the plugin in"),
        "{}",
        stderr(&list)
    );

    // Usage mistakes are clap's: exit code 2 and a hint.
    let usage = world.run(&["plugins", "frobnicate"]);
    assert_eq!(usage.status.code(), Some(2));
    assert!(
        stderr(&usage).contains("unrecognized subcommand"),
        "{}",
        stderr(&usage)
    );
}

#[test]
fn every_subcommand_has_help() {
    let world = World::new();
    for args in [
        &["--help"][..],
        &["serve", "--help"],
        &["plugins", "--help"],
        &["plugins", "list", "--help"],
        &["plugins", "check", "--help"],
        &["plugins", "install", "--help"],
        &["plugins", "uninstall", "--help"],
        &["plugins", "enable", "--help"],
        &["plugins", "disable", "--help"],
        &["plugins", "command", "--help"],
        &["plugins", "services", "--help"],
        &["plugins", "services", "start", "--help"],
        &["plugins", "reload", "--help"],
        &["tools", "--help"],
        &["tools", "list", "--help"],
        &["tools", "call", "--help"],
    ] {
        let text = succeeded(&world.run(args));
        assert!(text.contains("Usage: aleph-tools"), "{args:?}: {text}");
    }
    let version = succeeded(&world.run(&["--version"]));
    assert_eq!(
        version.trim(),
        format!("aleph-tools {}", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn serve_http_answers_mcp_plugin_routes_probes_and_metrics_and_drains_when_terminated() {
    use std::io::{BufRead, BufReader, Read, Write};
    let world = World::with_examples();
    let mut child = world
        .command()
        .args(["serve", "--http", "127.0.0.1:0", "--plugins"])
        .arg(world.plugins())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    let addr = loop {
        line.clear();
        assert!(stderr.read_line(&mut line).unwrap() > 0, "the server ended");
        if let Some(rest) = line.split_once("at http://") {
            break rest.1.split('/').next().unwrap().to_owned();
        }
    };
    assert!(line.contains("serving 7 tools"), "{line}");
    assert!(
        line.contains(&format!("metrics at http://{addr}/metrics")),
        "{line}"
    );
    let exchange = |method: &str, path: &str, headers: &str, body: &str| {
        let mut stream = std::net::TcpStream::connect(&addr).unwrap();
        write!(
            stream,
            "{method} {path} HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\n{headers}content-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).unwrap();
        response
    };
    let request = |method: &str, path: &str, body: &str| exchange(method, path, "", body);
    let created = request(
        "POST",
        "/plugins/notes-node/notes",
        r#"{"text": "from curl"}"#,
    );
    assert!(created.starts_with("HTTP/1.1 201"), "{created}");
    let listed = request("GET", "/plugins/notes-node/notes", "");
    assert!(listed.contains("from curl"), "{listed}");
    // /mcp is there too: a POST that is not JSON-RPC is refused by the MCP service.
    let mcp = request("POST", "/mcp", "{}");
    assert!(mcp.starts_with("HTTP/1.1 4"), "{mcp}");

    // A load balancer's probes.
    assert!(request("GET", "/healthz", "").starts_with("HTTP/1.1 200"));
    assert!(request("GET", "/readyz", "").ends_with("ready\n"));

    calls_over_mcp_show_in_metrics(&exchange);

    // SIGTERM drains: nothing runs, so the server stops at once and says so.
    let terminated = Command::new("kill")
        .arg(child.id().to_string())
        .status()
        .unwrap();
    assert!(terminated.success());
    let status = child.wait().unwrap();
    assert!(status.success(), "{status}");
    let mut rest = String::new();
    stderr.read_to_string(&mut rest).unwrap();
    assert!(rest.contains("aleph-tools: draining"), "{rest}");
    assert!(rest.contains("0 calls were running, 0 cut off"), "{rest}");
}

/// Two calls over MCP (a session opened by hand), then `/metrics`: they show per tool and
/// result, beside the session held. `exchange` sends a request with extra headers.
fn calls_over_mcp_show_in_metrics(exchange: &dyn Fn(&str, &str, &str, &str) -> String) {
    let opened = exchange(
        "POST",
        "/mcp",
        "",
        r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#,
    );
    let session = opened
        .lines()
        .find_map(|line| line.strip_prefix("mcp-session-id: "))
        .unwrap_or_else(|| panic!("a session: {opened}"))
        .trim()
        .to_owned();
    let in_session = format!("mcp-session-id: {session}\r\nmcp-protocol-version: 2025-11-25\r\n");
    exchange(
        "POST",
        "/mcp",
        &in_session,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    );
    for (id, text) in [(1, "one two three"), (2, "four five")] {
        let called = exchange(
            "POST",
            "/mcp",
            &in_session,
            &format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"word_count","arguments":{{"text":"{text}"}}}}}}"#
            ),
        );
        assert!(called.starts_with("HTTP/1.1 200"), "{called}");
    }
    let metrics = exchange("GET", "/metrics", "", "");
    assert!(metrics.starts_with("HTTP/1.1 200"), "{metrics}");
    let sample = |series: &str| {
        metrics
            .lines()
            .find_map(|line| line.strip_prefix(series)?.strip_prefix(' '))
            .map(str::to_owned)
    };
    assert_eq!(
        sample(r#"aleph_tools_tool_calls_total{tool="word_count",result="ok"}"#).as_deref(),
        Some("2"),
        "{metrics}"
    );
    assert_eq!(
        sample(r#"aleph_tools_tool_call_duration_seconds_count{tool="word_count"}"#).as_deref(),
        Some("2"),
        "{metrics}"
    );
    assert_eq!(
        sample("aleph_tools_mcp_sessions").as_deref(),
        Some("1"),
        "{metrics}"
    );
    assert!(
        metrics.contains("# TYPE aleph_tools_tool_call_duration_seconds histogram"),
        "{metrics}"
    );
}

#[test]
fn serve_http_with_tokens_refuses_anonymous_requests_and_is_wrapped_with_a_token() {
    use std::io::{BufRead, BufReader, Read, Write};
    let world = World::with_examples();
    std::fs::write(
        world.config(),
        "[[server.tokens]]\nsubject = \"ci\"\nenv = \"SERVE_TOKEN\"\nscopes = [\"tools:call\"]\n",
    )
    .unwrap();
    // Over stdio tokens mean nothing, and the command says so.
    let stdio = world.run(&["serve", "--stdio"]);
    assert!(
        stderr(&stdio).contains("apply to `serve --http`"),
        "{}",
        stderr(&stdio)
    );
    // Without the variable the command stops before serving, naming it.
    let missing = world.run(&["serve", "--http", "127.0.0.1:0"]);
    assert!(!missing.status.success());
    assert!(
        stderr(&missing).contains("`SERVE_TOKEN` is not set"),
        "{}",
        stderr(&missing)
    );

    let mut child = world
        .command()
        .args(["serve", "--http", "127.0.0.1:0", "--plugins"])
        .arg(world.plugins())
        .env("SERVE_TOKEN", "t0k3n")
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr_lines = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    let addr = loop {
        line.clear();
        assert!(
            stderr_lines.read_line(&mut line).unwrap() > 0,
            "the server ended"
        );
        if let Some(rest) = line.split_once("at http://") {
            break rest.1.split('/').next().unwrap().to_owned();
        }
    };
    assert!(line.contains("(bearer tokens required)"), "{line}");
    let request = |path: &str, token: Option<&str>| {
        let mut stream = std::net::TcpStream::connect(&addr).unwrap();
        let auth = token.map_or(String::new(), |t| format!("authorization: Bearer {t}\r\n"));
        write!(
            stream,
            "GET {path} HTTP/1.1\r\nhost: 127.0.0.1\r\n{auth}connection: close\r\n\r\n"
        )
        .unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).unwrap();
        response
    };
    assert!(request("/mcp", None).starts_with("HTTP/1.1 401"));
    assert!(request("/plugins/notes-node/notes", None).starts_with("HTTP/1.1 401"));
    assert!(request("/plugins/notes-node/notes", Some("t0k3n")).starts_with("HTTP/1.1 200"));

    // Another configuration wraps it, sending the token from its own variable.
    let client = World::new();
    std::fs::write(
        client.config(),
        format!(
            "[[mcp_servers]]\nname = \"remote\"\nurl = \"http://{addr}/mcp\"\nbearer_token_env = \"REMOTE_TOKEN\"\n"
        ),
    )
    .unwrap();
    let listed = client
        .command()
        .args(["tools", "list"])
        .env("REMOTE_TOKEN", "t0k3n")
        .output()
        .unwrap();
    assert!(
        succeeded(&listed).contains("remote_word_count"),
        "{}",
        stdout(&listed)
    );
    let anonymous = client
        .command()
        .args(["tools", "list"])
        .env("REMOTE_TOKEN", "wrong")
        .output()
        .unwrap();
    assert!(
        stderr(&anonymous).contains("the MCP server `remote` is left out"),
        "{}",
        stderr(&anonymous)
    );

    let terminated = Command::new("kill")
        .arg(child.id().to_string())
        .status()
        .unwrap();
    assert!(terminated.success());
    assert!(child.wait().unwrap().success());
}

#[test]
fn configured_mcp_servers_are_wrapped_beside_the_plugins() {
    let world = World::new();
    let inner = world.root.path().join("inner");
    copy_dir(
        &example_plugins().join("text-tools"),
        &inner.join("text-tools"),
    );
    // The wrapped server is this command again, serving other plugins over stdio with a
    // config of its own.
    let inner_config = world.root.path().join("inner.toml");
    std::fs::write(&inner_config, "").unwrap();
    // It runs in a sandbox that lets it read its config and plugins.
    let config = format!(
        "[plugins]\nsearch_paths = [\"plugins\"]\n\n[[mcp_servers]]\nname = \"inner\"\ncommand = {:?}\nargs = [\"serve\", \"--stdio\", \"--config\", {:?}, \"--plugins\", {:?}]\nsandbox = {{ read = [{:?}] }}\n\n[[mcp_servers]]\nname = \"ghost\"\ncommand = \"/no/such/program\"\n",
        env!("CARGO_BIN_EXE_aleph-tools"),
        inner_config.to_str().unwrap(),
        inner.to_str().unwrap(),
        world.root.path().to_str().unwrap()
    );
    std::fs::write(world.config(), config).unwrap();
    let output = world.run(&["tools", "list"]);
    let table = succeeded(&output);
    assert!(table.contains("inner_word_count  Mcp"), "{table}");
    assert!(
        stderr(&output).contains("warning: the MCP server `ghost` is left out"),
        "{}",
        stderr(&output)
    );
    let counted =
        succeeded(&world.run(&["tools", "call", "inner_word_count", r#"{"text": "a b c"}"#]));
    assert_eq!(serde_json::from_str::<Value>(&counted).unwrap()["words"], 3);
}

#[test]
fn a_config_that_wraps_itself_stops_at_a_depth() {
    let world = World::new();
    // `serve` started by an entry of this very config, which it reads again: a chain.
    // Wrapped servers run in the sandbox, which cannot start sandboxes of its own: the
    // chain turns it off for the entries it starts, and lets them read the config.
    std::fs::write(
        world.config(),
        format!(
            "[[mcp_servers]]\nname = \"again\"\ncommand = {:?}\nargs = [\"serve\", \"--stdio\", \"--config\", {:?}, \"--no-sandbox\"]\nsandbox = {{ read = [{:?}] }}\n",
            env!("CARGO_BIN_EXE_aleph-tools"),
            world.config().to_str().unwrap(),
            world.root.path().to_str().unwrap()
        ),
    )
    .unwrap();
    // Seven deep already (`serve` connects in the background, so a chain does not wait on
    // its client): the entry this run starts is the eighth, which refuses to start.
    let output = world
        .command()
        .env("ALEPH_TOOLS_DEPTH", "7")
        .args(["tools", "list"])
        .output()
        .unwrap();
    succeeded(&output);
    assert!(
        stderr(&output).contains("running 8 deep inside its own `[[mcp_servers]]`"),
        "{}",
        stderr(&output)
    );
}

/// Runs the interop client `client` (under `program`, from `tests/interop`) against
/// `aleph-tools serve --stdio --yes --builtin --allowed-path WORKSPACE` with `flags`, and
/// asserts it passed its `checks`.
fn serve_builtin_to(
    world: &World,
    workspace: &Path,
    (program, client, checks): (&str, &str, usize),
    flags: &[&str],
) {
    let peers = interop_peers();
    let output = Command::new(peers.join(program))
        .arg(peers.join(client))
        .arg(env!("CARGO_BIN_EXE_aleph-tools"))
        .args(["serve", "--stdio", "--yes", "--builtin"])
        .args(flags)
        .arg("--allowed-path")
        .arg(workspace)
        .current_dir(workspace)
        .env("HOME", world.home())
        .env_remove("ALEPH_TOOLS_CONFIG")
        .env_remove("XDG_CONFIG_HOME")
        .output()
        .unwrap();
    let text = succeeded(&output);
    assert!(
        text.contains(&format!("passed: {checks}")),
        "{client}: {text}\n{}",
        stderr(&output)
    );
}

#[test]
fn serve_with_deferred_tools_is_searched_by_the_official_python_and_typescript_clients() {
    let world = World::new();
    let workspace = world.root.path().join("work/space");
    std::fs::create_dir_all(&workspace).unwrap();
    std::fs::write(workspace.join("notes.txt"), "- tea\n").unwrap();
    for client in [
        (".venv/bin/python", "tool_search_client.py", 5),
        (".venv/bin/node24", "tool_search_client.mjs", 4),
    ] {
        serve_builtin_to(&world, &workspace, client, &["--defer", "file_*"]);
    }
}

#[test]
fn a_search_model_ranks_by_meaning_and_a_missing_one_is_a_clear_error() {
    let world = World::new();
    let workspace = world.root.path().join("work/space");
    std::fs::create_dir_all(&workspace).unwrap();
    let model = interop_peers().join("models/all-minilm-l6-v2");
    let found = world.run(&[
        "--builtin",
        "--allowed-path",
        "space",
        "--defer",
        "*",
        "--search-model",
        model.to_str().unwrap(),
        "tools",
        "call",
        "tool_search",
        r#"{"query": "run a terminal command", "limit": 1}"#,
    ]);
    let text = succeeded(&found);
    assert!(text.contains("\"bash\""), "{text}");

    let missing = world.run(&["--search-model", "no/such/model", "tools", "list"]);
    let error = failed(&missing);
    assert!(
        error.contains("cannot load the tool search's model from `no/such/model`"),
        "{error}"
    );
}

#[test]
fn serve_with_code_mode_is_answered_by_the_official_typescript_client() {
    let world = World::new();
    let workspace = world.root.path().join("work/space");
    std::fs::create_dir_all(workspace.join("notes")).unwrap();
    std::fs::write(workspace.join("notes/todo.md"), "- tea\n").unwrap();
    let client = (".venv/bin/node24", "code_mode_client.mjs", 3);
    serve_builtin_to(&world, &workspace, client, &["--code-mode"]);
}

/// Without a config file, `plugins disable` writes one in the platform's config directory
/// (`~/.config/aleph-tools/config.toml` here), and later runs read it from there.
#[test]
fn disabling_without_a_config_writes_the_users_file_in_the_config_directory() {
    let world = World::new();
    copy_dir(
        &example_plugins().join("text-tools"),
        &world.home().join(".aleph/plugins/text-tools"),
    );
    let said = succeeded(&world.run(&["plugins", "disable", "text-tools"]));
    let file = world.home().join(".config/aleph-tools/config.toml");
    assert!(said.contains(&file.display().to_string()), "{said}");
    let written = std::fs::read_to_string(&file).unwrap();
    assert!(written.contains("disabled = [\"text-tools\"]"), "{written}");
    let list = world.command().args(["plugins", "list"]).output().unwrap();
    assert!(
        stderr(&list).contains(&format!("config `{}`", file.display())),
        "{}",
        stderr(&list)
    );
    assert!(stdout(&list).contains("stopped"), "{}", stdout(&list));
}

/// Loading plugins shows a spinner on a terminal (here a pseudo-terminal made by util-linux's
/// `script`), and nothing of it when standard error is a pipe.
#[test]
fn a_spinner_shows_while_plugins_load_on_a_terminal_only() {
    let world = World::new();
    copy_dir(
        &example_plugins().join("text-tools"),
        &world.plugins().join("text-tools"),
    );
    let args = ["tools", "list", "--plugins", "plugins"];
    let piped = succeeded(&world.run(&args));
    assert!(piped.contains("word_count"), "{piped}");
    let said = stderr(&world.run(&args));
    assert!(!said.contains("loading plugins"), "{said}");
    assert!(
        !said.contains('\u{1b}'),
        "no escape codes in a pipe: {said:?}"
    );

    let line = std::iter::once(env!("CARGO_BIN_EXE_aleph-tools"))
        .chain(args)
        .collect::<Vec<_>>()
        .join(" ");
    let mut script = Command::new("script");
    script
        .args(["-q", "-e", "-c", &line, "/dev/null"])
        .current_dir(world.root.path().join("work"))
        .env("HOME", world.home())
        .env_remove("ALEPH_TOOLS_CONFIG")
        .env_remove("XDG_CONFIG_HOME");
    let on_terminal = succeeded(&script.output().unwrap());
    assert!(on_terminal.contains("loading plugins"), "{on_terminal:?}");
    assert!(on_terminal.contains("word_count"), "{on_terminal:?}");
}
