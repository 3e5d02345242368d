//! Hostile Node.js plugins: each misbehaves one way, and each costs only its own calls while
//! the host and a well-behaved plugin beside it keep serving.

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use aleph_tools::plugin::{PluginManager, PluginStatus, PluginsConfig};
use aleph_tools::{AlephToolServer, ToolErrorKind};
use aleph_tools_tests::{eventually, node_plugin, processes_mentioning, processes_running};
use serde_json::json;

/// A plugin written without the SDK, speaking the protocol by hand so it can break it. Each
/// tool misbehaves in its own way; `ok` answers properly.
const RAW: &str = r#"
const readline = require("node:readline");
const out = (m) => process.stdout.write(typeof m === "string" ? m : JSON.stringify(m) + "\n");
const answer = (id, result) => out({ jsonrpc: "2.0", id, result });
if (process.env.HOSTILE_MODE === "ignore-shutdown") process.stdin.on("end", () => {});
setInterval(() => {}, 1 << 30);
readline.createInterface({ input: process.stdin }).on("line", (line) => {
  const m = JSON.parse(line);
  if (m.method === "initialize") return answer(m.id, { protocolVersion: 1, missing: [] });
  if (m.method === "shutdown") return;
  if (m.method !== "tools/call") return;
  const id = m.id;
  switch (m.params.tool) {
    case "ok": return answer(id, { ok: m.params.arguments });
    case "crash": process.exit(7);
    case "garbage":
      out("this is not json\n");
      out("{\"jsonrpc\":\"2.0\",\"id\":\n");
      out({ jsonrpc: "2.0", id: 999999, result: "unknown id" });
      out({ jsonrpc: "2.0", id, result: "first" });
      out({ jsonrpc: "2.0", id, result: "duplicate" });
      return;
    case "half":
      out(`{"jsonrpc":"2.0","id":${id},"resu`);
      setTimeout(() => process.exit(0), 50);
      return;
    case "flood": {
      const chunk = "x".repeat(1 << 20);
      for (let i = 0; i < 100; i++) out(chunk);
      out("\n");
      return answer(id, "after the flood");
    }
    case "oversized": return answer(id, "y".repeat(2 << 20));
    case "stderr": {
      const line = "e".repeat(1023) + "\n";
      for (let i = 0; i < 10 * 1024; i++) process.stderr.write(line);
      return answer(id, "after 10 MB of stderr");
    }
    case "spawn": {
      const child = require("node:child_process").spawn("sleep", ["86421"], { stdio: "ignore" });
      return answer(id, { pid: process.pid, child: child.pid });
    }
  }
});
"#;

fn raw_manifest(id: &str, extra: &str) -> String {
    let mut tools = String::new();
    for name in [
        "ok",
        "crash",
        "garbage",
        "half",
        "flood",
        "oversized",
        "stderr",
        "spawn",
    ] {
        let _ = writeln!(
            tools,
            "[[tools]]\nname = \"{name}\"\ndescription = \"{name}\""
        );
    }
    format!(
        "[plugin]\nid = \"{id}\"\nversion = \"1.0.0\"\nkind = \"nodejs\"\nentry = \"index.js\"\n\n[permissions]\n{extra}\n\n{tools}"
    )
}

const NEIGHBOUR: &str = r#"
require("@aleph/plugin-sdk").createServer({
  name: "neighbour",
  tools: { ping: () => "pong" },
}).start();
"#;

/// A host with a hostile plugin and a well-behaved neighbour, both loaded.
fn host(config: impl FnOnce(&mut PluginsConfig), extra: &str) -> Host {
    let root = tempfile::tempdir().unwrap();
    node_plugin(root.path(), "hostile", &raw_manifest("hostile", extra), RAW);
    node_plugin(
        root.path(),
        "neighbour",
        "[plugin]\nid = \"neighbour\"\nversion = \"1.0.0\"\nkind = \"nodejs\"\nentry = \"index.js\"\n\n[[tools]]\nname = \"ping\"\ndescription = \"Answer pong.\"\n",
        NEIGHBOUR,
    );
    let mut settings = PluginsConfig::with_search_paths([root.path()]);
    settings.runtimes.nodejs.max_message = aleph_tools::plugin::ByteSize::mib(1);
    settings.runtimes.nodejs.restart.backoff_ms = 50;
    config(&mut settings);
    let server = AlephToolServer::new();
    let manager = PluginManager::new(&server, settings);
    let report = manager.load_all();
    assert!(report.failed.is_empty(), "{:?}", report.failed);
    Host {
        _root: root,
        server,
        manager,
    }
}

struct Host {
    _root: tempfile::TempDir,
    server: AlephToolServer,
    manager: PluginManager,
}

impl Host {
    async fn neighbour_answers(&self) {
        let ping = self.server.call("ping", json!({})).await;
        assert_eq!(ping.output, json!("pong"), "{:?}", ping.error);
    }

    async fn ok_answers(&self) {
        let ok = self.server.call("ok", json!({ "n": 1 })).await;
        assert_eq!(ok.output, json!({ "ok": { "n": 1 } }), "{:?}", ok.error);
    }

    fn status(&self) -> PluginStatus {
        self.manager.plugin("hostile").info().unwrap().status
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_crash_mid_call_fails_that_call_and_the_plugin_restarts() {
    let host = host(|_| {}, "");
    host.ok_answers().await;
    let crashed = host.server.call("crash", json!({})).await;
    assert_eq!(crashed.error_kind, Some(ToolErrorKind::Execution));
    let message = crashed.error.unwrap();
    assert!(message.contains("plugin `hostile`"), "{message}");
    assert!(message.contains("exited with code 7"), "{message}");
    host.neighbour_answers().await;
    // The next call waits for the restarted process.
    host.ok_answers().await;
    assert_eq!(host.status(), PluginStatus::Running);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_plugin_that_keeps_crashing_is_given_up_on_until_reloaded() {
    let host = host(|c| c.runtimes.nodejs.restart.max_restarts = 2, "");
    for _ in 0..3 {
        host.ok_answers().await;
        assert!(!host.server.call("crash", json!({})).await.success);
    }
    eventually("the supervisor gives up", || {
        matches!(host.status(), PluginStatus::Error(m) if m.contains("gave up after 2 restart(s)"))
    })
    .await;
    let refused = host.server.call("ok", json!({})).await;
    let message = refused.error.unwrap();
    assert!(message.contains("not running"), "{message}");
    assert!(message.contains("reload it"), "{message}");
    host.neighbour_answers().await;
    let manager = host.manager.clone();
    tokio::task::spawn_blocking(move || manager.plugin("hostile").reload())
        .await
        .unwrap()
        .unwrap();
    host.ok_answers().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn garbage_unknown_ids_and_duplicates_are_skipped() {
    let host = host(|_| {}, "");
    let answered = host.server.call("garbage", json!({})).await;
    assert_eq!(answered.output, json!("first"), "{:?}", answered.error);
    host.ok_answers().await;
    assert_eq!(host.status(), PluginStatus::Running);
    host.neighbour_answers().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn half_a_message_then_exit_is_a_crash() {
    let host = host(|_| {}, "");
    let half = host.server.call("half", json!({})).await;
    let message = half.error.unwrap();
    assert!(message.contains("stopped during the call"), "{message}");
    host.ok_answers().await;
    host.neighbour_answers().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn floods_and_oversized_answers_cost_only_their_call() {
    let host = host(|_| {}, "");
    // 100 MB on one line, past the 1 MB limit: skipped as it streams by, then the answer.
    let flooded = host.server.call("flood", json!({})).await;
    assert_eq!(
        flooded.output,
        json!("after the flood"),
        "{:?}",
        flooded.error
    );
    let oversized = host.server.call("oversized", json!({})).await;
    let message = oversized.error.unwrap();
    assert!(message.contains("more than the 1048576 bytes"), "{message}");
    assert!(message.contains("max_message"), "{message}");
    let stderr = host.server.call("stderr", json!({})).await;
    assert_eq!(stderr.output, json!("after 10 MB of stderr"));
    // A request over the limit never leaves the host.
    let big = host
        .server
        .call("ok", json!({ "text": "z".repeat(2 << 20) }))
        .await;
    assert!(
        big.error.as_deref().unwrap().contains("the request is"),
        "{big:?}"
    );
    host.ok_answers().await;
    assert_eq!(host.status(), PluginStatus::Running);
    host.neighbour_answers().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_plugin_ignoring_shutdown_is_killed_with_its_children_after_the_grace_period() {
    let root = tempfile::tempdir().unwrap();
    let dir = node_plugin(
        root.path(),
        "hostile",
        &raw_manifest("hostile", "child_process = true"),
        RAW,
    );
    // The process ignores both `shutdown` and the end of its input.
    let source = format!("process.env.HOSTILE_MODE = \"ignore-shutdown\";\n{RAW}");
    std::fs::write(dir.join("index.js"), source).unwrap();
    let mut settings = PluginsConfig::with_search_paths([root.path()]);
    settings.runtimes.nodejs.shutdown_grace_ms = 300;
    settings.policy.child_process = true;
    let server = AlephToolServer::new();
    let manager = PluginManager::new(&server, settings);
    assert!(manager.load_all().failed.is_empty());
    let spawned = server.call("spawn", json!({})).await;
    assert!(spawned.success, "{:?}", spawned.error);
    // Seen from outside its sandbox: the plugin's processes name its directory.
    let mention = dir.display().to_string();
    eventually("the child runs", || {
        processes_running(&["sleep", "86421"]) == 1
    })
    .await;
    assert!(processes_mentioning(&mention) > 0);

    let started = Instant::now();
    manager.plugin("hostile").unload().unwrap();
    eventually("the plugin and its child are gone", || {
        processes_mentioning(&mention) == 0 && processes_running(&["sleep", "86421"]) == 0
    })
    .await;
    assert!(
        started.elapsed() >= Duration::from_millis(300),
        "killed only after the grace period"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_plugin_that_exits_or_stays_silent_at_start_does_not_load() {
    let root = tempfile::tempdir().unwrap();
    let manifest = |id: &str| {
        format!(
            "[plugin]\nid = \"{id}\"\nversion = \"1.0.0\"\nkind = \"nodejs\"\nentry = \"index.js\"\n"
        )
    };
    node_plugin(
        root.path(),
        "exits",
        &manifest("exits"),
        "console.error('no licence key'); process.exit(3);",
    );
    node_plugin(
        root.path(),
        "silent",
        &manifest("silent"),
        "setInterval(() => {}, 1000);",
    );
    node_plugin(
        root.path(),
        "future",
        &manifest("future"),
        r#"require("node:readline").createInterface({ input: process.stdin }).on("line", (l) => {
             const m = JSON.parse(l);
             process.stdout.write(JSON.stringify({ jsonrpc: "2.0", id: m.id, result: { protocolVersion: 2 } }) + "\n");
           });"#,
    );
    let mut settings = PluginsConfig::with_search_paths([root.path()]);
    settings.runtimes.nodejs.start_timeout_ms = 500;
    let server = AlephToolServer::new();
    let manager = PluginManager::new(&server, settings);
    let report = manager.load_all();
    let errors: Vec<String> = report.failed.iter().map(|(_, e)| e.to_string()).collect();
    assert_eq!(errors.len(), 3, "{errors:?}");
    assert!(errors[0].contains("exited with code 3"), "{}", errors[0]);
    assert!(errors[0].contains("no licence key"), "{}", errors[0]);
    assert!(
        errors[1].contains("speaks plugin protocol 2"),
        "{}",
        errors[1]
    );
    assert!(errors[2].contains("within 500ms"), "{}", errors[2]);
    assert!(errors[2].contains("start_timeout_ms"), "{}", errors[2]);
    for info in manager.list() {
        assert!(matches!(info.status, PluginStatus::Error(_)), "{info:?}");
    }
}

/// The example plugins' own manifest rules for `nodejs`.
#[test]
fn nodejs_manifest_rules_are_checked() {
    let root = tempfile::tempdir().unwrap();
    let check = |text: &str| {
        let dir = root.path().join("p");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("aleph_plugin.toml"), text).unwrap();
        aleph_tools::plugin::PluginManifest::read_dir(&dir).map(|_| ())
    };
    let base = "[plugin]\nid = \"p\"\nversion = \"1.0.0\"\n";
    let no_entry = check(&format!("{base}kind = \"nodejs\"\n")).unwrap_err();
    assert!(no_entry.to_string().contains("needs `entry`"), "{no_entry}");
    let missing = check(&format!(
        "{base}kind = \"nodejs\"\nentry = \"dist/index.js\"\n"
    ))
    .unwrap_err()
    .to_string();
    assert!(
        missing.contains("dist/index.js") && missing.contains("does not exist"),
        "{missing}"
    );
    let wasm_spawn = check(&format!(
        "{base}kind = \"static\"\n[permissions]\nchild_process = true\n"
    ))
    .unwrap_err()
    .to_string();
    assert!(
        wasm_spawn.contains("only a `nodejs` plugin can start processes"),
        "{wasm_spawn}"
    );
    std::fs::write(root.path().join("p/index.js"), "").unwrap();
    check(&format!(
        "{base}kind = \"nodejs\"\nentry = \"index.js\"\n[permissions]\nchild_process = true\nenv = [\"API_KEY\"]\n"
    ))
    .unwrap();
}
