//! `aleph-tools plugins … --server`: a running `serve --http` managed through its
//! management API with a token holding the `admin` scope; installs from https URLs; and the
//! management methods as tools over stdio, called by an MCP client.

use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use aleph_tools::AlephToolServer;
use aleph_tools::mcp::{McpConnection, McpEndpoint};
use aleph_tools::sandbox::Sandbox;
use aleph_tools_tests::https::HttpsFiles;
use aleph_tools_tests::plugin_files::{archive, static_plugin};
use aleph_tools_tests::{copy_dir, example_plugins};
use serde_json::{Value, json};

use crate::output::succeeded;

const OPS: &str = "ops-7d1e";
const AGENT: &str = "agent-55b0";

/// A home, a working directory with `plugins/` holding the examples named, and a config.
struct World {
    root: tempfile::TempDir,
}

impl World {
    fn new(examples: &[&str], config: &str) -> Self {
        let world = Self {
            root: tempfile::tempdir().unwrap(),
        };
        std::fs::create_dir_all(world.root.path().join("home")).unwrap();
        std::fs::create_dir_all(world.plugins()).unwrap();
        for name in examples {
            copy_dir(&example_plugins().join(name), &world.plugins().join(name));
        }
        std::fs::write(world.work().join("aleph-tools.toml"), config).unwrap();
        world
    }

    fn work(&self) -> PathBuf {
        self.root.path().join("work")
    }

    fn plugins(&self) -> PathBuf {
        self.work().join("plugins")
    }

    fn command(&self) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_aleph-tools"));
        command
            .current_dir(self.work())
            .env("HOME", self.root.path().join("home"))
            .env("ALEPH_TOOLS_CONFIG", self.work().join("aleph-tools.toml"))
            .env("OPS_TOKEN", OPS)
            .env("AGENT_TOKEN", AGENT)
            .env_remove("ALEPH_TOOLS_TOKEN")
            .env_remove("ALEPH_TOOLS_SERVER")
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("RUST_LOG");
        command
    }

    /// Runs `plugins ARGS` with `token` in `ALEPH_TOOLS_TOKEN`.
    fn plugins_with(&self, token: Option<&str>, args: &[&str]) -> Output {
        let mut command = self.command();
        command.arg("plugins").args(args);
        if let Some(token) = token {
            command.env("ALEPH_TOOLS_TOKEN", token);
        }
        command.output().unwrap()
    }
}

/// The standard error of a run that failed with one message.
#[track_caller]
fn failed(output: &Output) -> String {
    let text = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(output.status.code(), Some(1), "{text}");
    assert_eq!(text.matches("error: ").count(), 1, "{text}");
    text
}

/// `serve --http` on a free port; the child and the line that says where it serves.
fn serve_http(world: &World) -> (Child, String) {
    let mut child = world
        .command()
        .args(["serve", "--http", "127.0.0.1:0"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    loop {
        line.clear();
        assert!(stderr.read_line(&mut line).unwrap() > 0, "the server ended");
        if line.contains("serving") {
            break;
        }
    }
    // The rest of standard error is drained, so the server never blocks writing to it.
    std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
    (child, line)
}

const TOKENS: &str = r#"
[plugins]
search_paths = ["plugins"]

[[server.tokens]]
subject = "ops"
env = "OPS_TOKEN"
scopes = ["admin"]

[[server.tokens]]
subject = "agent"
env = "AGENT_TOKEN"
scopes = ["tools:call"]
"#;

#[test]
fn a_running_server_is_managed_with_server_and_an_admin_token() {
    let world = World::new(&["text-tools", "notes-node"], TOKENS);
    let (mut child, line) = serve_http(&world);
    let addr = line
        .split_once("at http://")
        .unwrap()
        .1
        .split('/')
        .next()
        .unwrap()
        .to_owned();
    assert!(
        line.contains(&format!("the management API at http://{addr}/admin")),
        "{line}"
    );
    let server = format!("http://{addr}");
    let ops = |args: &[&str]| {
        let mut all = args.to_vec();
        all.extend(["--server", server.as_str()]);
        world.plugins_with(Some(OPS), &all)
    };

    // Without a token, or with one that lacks the scope: refused, saying what to do.
    let anonymous = failed(&world.plugins_with(None, &["list", "--server", &server]));
    assert!(anonymous.contains("set ALEPH_TOOLS_TOKEN"), "{anonymous}");
    let agent = failed(&world.plugins_with(Some(AGENT), &["list", "--server", &server]));
    assert!(agent.contains("lacks the scope `admin`"), "{agent}");

    let list = succeeded(&ops(&["list"]));
    assert!(
        list.contains("text-tools  1.0.0    wasm    running"),
        "{list}"
    );
    let disabled = succeeded(&ops(&["disable", "text-tools"]));
    assert!(
        disabled.contains("is disabled in the server") && disabled.contains("stopped"),
        "{disabled}"
    );
    // The config file is the server's own business: a remote disable leaves it alone.
    let config = std::fs::read_to_string(world.work().join("aleph-tools.toml")).unwrap();
    assert!(!config.contains("disabled"), "{config}");
    let json: Value = serde_json::from_str(&succeeded(&ops(&["list", "--json"]))).unwrap();
    let text_tools = json
        .as_array()
        .unwrap()
        .iter()
        .find(|plugin| plugin["id"] == "text-tools")
        .unwrap();
    assert_eq!(
        (&text_tools["status"], &text_tools["tools"]),
        (&json!("stopped"), &json!([]))
    );
    succeeded(&ops(&["enable", "text-tools"]));
    let reloaded = succeeded(&ops(&["reload", "text-tools"]));
    assert!(
        reloaded.starts_with("reloaded `text-tools` 1.0.0 (wasm): 3 tools"),
        "{reloaded}"
    );
    let exported = succeeded(&ops(&["command", "notes-node", "export"]));
    serde_json::from_str::<Value>(&exported).unwrap();

    let started = succeeded(&ops(&["services", "start", "notes-node", "backup"]));
    assert!(
        started.contains("notes-node  backup") && started.contains("running"),
        "{started}"
    );
    let status = succeeded(&ops(&["services", "status", "notes-node", "backup"]));
    assert!(status.contains("running"), "{status}");
    let stopped = succeeded(&ops(&["services", "stop", "notes-node", "backup"]));
    assert!(stopped.contains("stopped"), "{stopped}");

    // A path is read on the server's machine: a relative one is refused here.
    let relative = failed(&ops(&["install", "plugin.zip"]));
    assert!(relative.contains("absolute path there"), "{relative}");
    let sources = tempfile::tempdir().unwrap();
    let packed = archive(&static_plugin(sources.path(), "memo", ""), "zip", true);
    let installed = succeeded(&ops(&["install", packed.to_str().unwrap()]));
    assert!(
        installed.starts_with("installed `memo` 1.2.3 (static)"),
        "{installed}"
    );
    assert!(world.plugins().join("memo/aleph_plugin.toml").is_file());
    let removed = succeeded(&ops(&["uninstall", "memo"]));
    assert!(removed.starts_with("removed `"), "{removed}");
    assert!(!world.plugins().join("memo").exists());
    let missing = failed(&ops(&["reload", "memo"]));
    assert!(missing.contains("memo"), "{missing}");

    let _ = child.kill();
    let _ = child.wait();
    let gone = failed(&world.plugins_with(Some(OPS), &["list", "--server", &server]));
    assert!(gone.contains("cannot reach the server"), "{gone}");
}

#[test]
fn what_only_a_running_server_does_needs_server() {
    let world = World::new(&[], "[plugins]\nsearch_paths = [\"plugins\"]\n");
    for args in [
        &["reload", "x"][..],
        &["services", "start", "x", "y"],
        &["services", "stop", "x", "y"],
    ] {
        let refused = failed(&world.plugins_with(None, args));
        assert!(
            refused.contains("give its URL with --server"),
            "{args:?}: {refused}"
        );
    }
    let check =
        failed(&world.plugins_with(None, &["check", ".", "--server", "http://127.0.0.1:9"]));
    assert!(check.contains("does not take --server"), "{check}");
    let bad = failed(&world.plugins_with(None, &["list", "--server", "127.0.0.1:9"]));
    assert!(bad.contains("not an http or https URL"), "{bad}");
    // Plain http to another machine would carry the token in clear: refused before any
    // connection.
    let clear =
        failed(&world.plugins_with(Some(OPS), &["list", "--server", "http://192.0.2.7:8080"]));
    assert!(clear.contains("in clear"), "{clear}");
}

#[test]
fn plugins_install_downloads_from_an_https_url_held_to_the_config() {
    let served = tempfile::tempdir().unwrap();
    let sources = tempfile::tempdir().unwrap();
    let packed = archive(&static_plugin(sources.path(), "memo", ""), "gztar", true);
    std::fs::copy(&packed, served.path().join("memo.tar.gz")).unwrap();
    let files = HttpsFiles::start(served.path());
    let ca = served.path().join("ca.pem");
    std::fs::write(&ca, files.ca_pem()).unwrap();
    let config = format!(
        "[plugins]\nsearch_paths = [\"plugins\"]\n\n[admin]\ndownload_hosts = [\"connect:127.0.0.1\"]\nca_file = \"{}\"\n",
        ca.display()
    );
    let world = World::new(&[], &config);
    let url = files.url("/files/memo.tar.gz");

    let wrong = failed(&world.plugins_with(None, &["install", &url, "--sha256", &"ab".repeat(32)]));
    assert!(wrong.contains("nothing was installed"), "{wrong}");
    assert!(!world.plugins().join("memo").exists());
    let digest = sha256_of(&packed);
    let installed = succeeded(&world.plugins_with(None, &["install", &url, "--sha256", &digest]));
    assert!(
        installed.starts_with("installed `memo` 1.2.3 (static)"),
        "{installed}"
    );
    assert!(world.plugins().join("memo/PROMPT.md").is_file());

    // Without the rule that names loopback, the default rule keeps to public hosts.
    std::fs::write(
        world.work().join("aleph-tools.toml"),
        format!(
            "[plugins]\nsearch_paths = [\"plugins\"]\n\n[admin]\nca_file = \"{}\"\n",
            ca.display()
        ),
    )
    .unwrap();
    let refused = failed(&world.plugins_with(None, &["install", &url]));
    assert!(refused.contains("connect:127.0.0.1"), "{refused}");
}

fn sha256_of(path: &Path) -> String {
    let output = Command::new("sha256sum").arg(path).output().unwrap();
    assert!(output.status.success());
    String::from_utf8(output.stdout).unwrap()[..64].to_owned()
}

/// `serve --stdio` in `world`, unconfined, for an MCP client to start.
fn stdio(world: &World) -> McpEndpoint {
    McpEndpoint::command(env!("CARGO_BIN_EXE_aleph-tools"))
        .args(["serve", "--stdio"])
        .current_dir(world.work())
        .env("HOME", world.root.path().join("home").to_str().unwrap())
        .env(
            "ALEPH_TOOLS_CONFIG",
            world.work().join("aleph-tools.toml").to_str().unwrap(),
        )
        .sandbox(Sandbox::none())
}

#[tokio::test(flavor = "multi_thread")]
async fn admin_tools_over_stdio_are_called_by_an_mcp_client() {
    let world = World::new(
        &[],
        "[plugins]\nsearch_paths = [\"plugins\"]\n\n[admin]\ntools = true\n",
    );
    let sources = tempfile::tempdir().unwrap();
    let dir = static_plugin(sources.path(), "memo", "");
    let endpoint = stdio(&world);
    let client = AlephToolServer::new();
    let connection = McpConnection::builder(endpoint)
        .connect(&client)
        .await
        .unwrap();
    assert!(
        client.contains("plugins_install"),
        "{:?}",
        client.tools().names()
    );
    let installed = client
        .call("plugins_install", json!({ "source": dir }))
        .await;
    assert!(installed.success, "{installed:?}");
    assert_eq!(installed.output["id"], "memo", "{installed:?}");
    let listed = client.call("plugins_list", json!({})).await;
    assert_eq!(
        listed.output["plugins"][0]["status"], "running",
        "{listed:?}"
    );
    drop(connection);

    // Without `[admin] tools` they are not served.
    std::fs::write(
        world.work().join("aleph-tools.toml"),
        "[plugins]\nsearch_paths = [\"plugins\"]\n",
    )
    .unwrap();
    let endpoint = stdio(&world);
    let plain = AlephToolServer::new();
    let _connection = McpConnection::builder(endpoint)
        .connect(&plain)
        .await
        .unwrap();
    assert!(
        !plain.contains("plugins_install"),
        "{:?}",
        plain.tools().names()
    );
}
