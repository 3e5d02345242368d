//! Node.js plugins end to end, with real `node` processes and the SDK built from `sdk/node`:
//! discovered, checked, started, served through the server's whole pipeline, sandboxed,
//! reloaded and unloaded.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use aleph_tools::plugin::{
    NodeConfig, NodejsRuntime, PluginError, PluginKind, PluginManager, PluginStatus, PluginsConfig,
};
use aleph_tools::prelude::*;
use aleph_tools::{AlephToolServer, ProgressEvent, ToolErrorKind};
use aleph_tools_tests::{command_lines, eventually, node_plugin};
use serde_json::json;

const CALC_MANIFEST: &str = r#"
[plugin]
id = "calc"
version = "1.0.0"
kind = "nodejs"
entry = "index.js"

[permissions]
filesystem = ["read:./data", "write:./out"]
env = ["HOME"]

[[tools]]
name = "add"
description = "Add two integers."
handler = "handleAdd"
input_schema = { type = "object", properties = { a = { type = "integer" }, b = { type = "integer" } }, required = ["a", "b"] }

[[tools]]
name = "divide"
description = "Divide a by b."

[[tools]]
name = "read_file"
description = "Read a file."

[[tools]]
name = "probe"
description = "What the process may reach."

[[tools]]
name = "wait"
description = "Wait until cancelled; reports progress first."
timeout_ms = 300

[[commands]]
name = "version"
handler = "version"

[[commands]]
name = "hang"
handler = "hang"
"#;

const CALC_SOURCE: &str = r#"
const fs = require("node:fs");
const path = require("node:path");
const { createServer, ToolError } = require("@aleph/plugin-sdk");
// Which process answers: PIDs inside the plugin's sandbox mean nothing outside it.
const INSTANCE = require("node:crypto").randomUUID();

createServer({
  name: "calc",
  tools: {
    handleAdd: async ({ a, b }) => ({ sum: a + b }),
    divide: {
      inputSchema: {
        type: "object",
        properties: { a: { type: "number" }, b: { type: "number" } },
        required: ["a", "b"],
      },
      handler: ({ a, b }) => {
        if (b === 0) throw new ToolError("cannot divide by zero; pass a non-zero `b`");
        return a / b;
      },
    },
    read_file: ({ path: file }) => fs.readFileSync(file, "utf8"),
    probe: () => {
      const attempt = (f) => { try { f(); return "allowed"; } catch (e) { return e.code || e.message; } };
      return {
        env: Object.keys(process.env).sort(),
        etc: attempt(() => fs.readFileSync("/etc/hostname")),
        write_out: attempt(() => fs.writeFileSync(path.join(__dirname, "out", "w.txt"), "x")),
        write_data: attempt(() => fs.writeFileSync(path.join(__dirname, "data", "w.txt"), "x")),
        spawn: attempt(() => require("node:child_process").execFileSync("true")),
      };
    },
    wait: (_args, ctx) => new Promise((resolve) => {
      ctx.progress(1, 2, "waiting");
      ctx.signal.addEventListener("abort", () => {
        fs.writeFileSync(path.join(__dirname, "out", "cancelled"), ctx.signal.reason.message);
        resolve("cancelled");
      });
    }),
  },
  commands: {
    version: () => ({ version: "1.0.0", instance: INSTANCE }),
    hang: () => new Promise(() => {}),
  },
}).start();
"#;

fn calc(root: &Path) -> std::path::PathBuf {
    let dir = node_plugin(root, "calc", CALC_MANIFEST, CALC_SOURCE);
    std::fs::create_dir_all(dir.join("data")).unwrap();
    std::fs::create_dir_all(dir.join("out")).unwrap();
    std::fs::write(dir.join("data/note.txt"), "granted").unwrap();
    dir
}

fn manager(server: &AlephToolServer, root: &Path) -> PluginManager {
    PluginManager::new(server, PluginsConfig::with_search_paths([root]))
}

#[tokio::test(flavor = "multi_thread")]
async fn a_node_plugin_is_started_served_through_the_pipeline_and_unloaded() {
    let root = tempfile::tempdir().unwrap();
    calc(root.path());
    let server = AlephToolServer::new();
    let manager = manager(&server, root.path());
    let report = manager.load_all();
    assert!(report.failed.is_empty(), "{:?}", report.failed);

    let info = manager.plugin("calc").info().unwrap();
    assert_eq!(info.status, PluginStatus::Running);
    assert_eq!(info.kind, Some(PluginKind::Nodejs));
    assert_eq!(info.tools, ["add", "divide", "probe", "read_file", "wait"]);
    let sandbox = info.sandbox.unwrap();
    assert!(sandbox.starts_with("sandboxed"), "{sandbox}");
    assert!(sandbox.contains("no network"), "{sandbox}");
    assert!(sandbox.contains("; Node.js "), "{sandbox}");

    // Schemas: from the manifest, from the SDK's `inputSchema`, or open.
    let add = server.tools().get("add").unwrap();
    assert_eq!(add.category, ToolCategory::Plugin);
    assert_eq!(add.parameters["required"], json!(["a", "b"]));
    assert!(add.tags.contains(&"plugin:calc".to_owned()));
    assert_eq!(
        server.tools().get("divide").unwrap().parameters["required"],
        json!(["a", "b"])
    );
    assert_eq!(
        server.tools().get("wait").unwrap().timeout,
        Some(Duration::from_millis(300))
    );
    assert_eq!(
        server.tools().get("probe").unwrap().timeout,
        Some(Duration::from_secs(30)),
        "the runtime's timeout when the manifest sets none"
    );

    // Calls: results, name repair, validation before the plugin, thrown errors, filters.
    let sum = server.call("add", json!({ "a": 2, "b": 3 })).await;
    assert_eq!(sum.output, json!({ "sum": 5 }), "{:?}", sum.error);
    let repaired = server.call("Divide", json!({ "a": 1, "b": 4 })).await;
    assert_eq!(repaired.output, json!(0.25));
    let invalid = server.call("add", json!({ "a": "two", "b": 3 })).await;
    assert_eq!(invalid.error_kind, Some(ToolErrorKind::InvalidArgs));
    assert!(invalid.error.unwrap().contains("/a"));
    let thrown = server.call("divide", json!({ "a": 1, "b": 0 })).await;
    assert_eq!(thrown.error_kind, Some(ToolErrorKind::Execution));
    assert_eq!(
        thrown.error.as_deref(),
        Some("cannot divide by zero; pass a non-zero `b`")
    );
    server.set_filter(ToolFilter::new().block("add")).unwrap();
    assert_eq!(
        server
            .call("add", json!({ "a": 1, "b": 1 }))
            .await
            .error_kind,
        Some(ToolErrorKind::PermissionDenied)
    );
    server.set_filter(ToolFilter::new()).unwrap();

    // Many calls at once, answered out of order, each to its caller.
    let calls = (0..50).map(|i| {
        let server = server.clone();
        tokio::spawn(async move { server.call("add", json!({ "a": i, "b": 1000 })).await })
    });
    for (i, call) in calls.enumerate() {
        assert_eq!(call.await.unwrap().output, json!({ "sum": i + 1000 }));
    }

    // Direct commands.
    let version = manager
        .plugin("calc")
        .execute_command("version", &json!({}))
        .await
        .unwrap();
    assert_eq!(version["version"], "1.0.0");
    let dir = root.path().join("calc").display().to_string();
    assert_eq!(node_processes(&dir), 1);

    // Unloading stops the process and withdraws the tools.
    manager.plugin("calc").unload().unwrap();
    assert!(server.tools().names().is_empty());
    eventually("the process is gone", || node_processes(&dir) == 0).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_sandbox_holds_files_processes_and_environment_to_the_manifest() {
    let root = tempfile::tempdir().unwrap();
    let dir = calc(root.path());
    let server = AlephToolServer::new();
    let manager = manager(&server, root.path());
    assert!(manager.load_all().failed.is_empty());

    let probe = server.call("probe", json!({})).await.output;
    let mut expected_env = vec!["PATH"];
    if std::env::var_os("HOME").is_some() {
        expected_env.insert(0, "HOME");
    }
    assert_eq!(probe["env"], json!(expected_env), "{probe}");
    assert_eq!(probe["etc"], "ERR_ACCESS_DENIED", "{probe}");
    assert_eq!(probe["write_out"], "allowed", "{probe}");
    assert_eq!(probe["write_data"], "ERR_ACCESS_DENIED", "{probe}");
    assert_eq!(probe["spawn"], "ERR_ACCESS_DENIED", "{probe}");
    let granted = server
        .call("read_file", json!({ "path": dir.join("data/note.txt") }))
        .await;
    assert_eq!(granted.output, json!("granted"), "{:?}", granted.error);
    let refused = server
        .call("read_file", json!({ "path": "/etc/passwd" }))
        .await;
    assert_eq!(refused.error_kind, Some(ToolErrorKind::Execution));
    assert!(
        refused.error.as_deref().unwrap().contains("restricted")
            || refused
                .error
                .as_deref()
                .unwrap()
                .contains("ERR_ACCESS_DENIED"),
        "{refused:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn timeouts_and_cancellation_reach_the_handler_and_progress_comes_back() {
    let root = tempfile::tempdir().unwrap();
    let dir = calc(root.path());
    let server = AlephToolServer::new();
    let manager = manager(&server, root.path());
    assert!(manager.load_all().failed.is_empty());

    // The manifest's 300 ms timeout: the call fails and the handler's signal aborts.
    let seen = Arc::new(Mutex::new(Vec::new()));
    let events = Arc::clone(&seen);
    let ctx = ToolContext::new().with_progress(move |_, event| {
        if let ProgressEvent::Progress { progress, .. } = event {
            events.lock().unwrap().push(progress);
        }
    });
    let timed_out = server.call("wait", json!({})).context(ctx).await;
    assert_eq!(timed_out.error_kind, Some(ToolErrorKind::Timeout));
    assert_eq!(*seen.lock().unwrap(), [1.0]);
    let marker = dir.join("out/cancelled");
    eventually("the handler saw the cancellation", || marker.is_file()).await;
    assert_eq!(
        std::fs::read_to_string(&marker).unwrap(),
        "the host cancelled the call"
    );
    std::fs::remove_file(&marker).unwrap();

    // A caller's cancellation does the same.
    let token = CancellationToken::new();
    let call = {
        let server = server.clone();
        let ctx = ToolContext::new().with_cancellation(token.clone());
        tokio::spawn(async move { server.call("wait", json!({})).context(ctx).await })
    };
    tokio::time::sleep(Duration::from_millis(50)).await;
    token.cancel();
    assert_eq!(
        call.await.unwrap().error_kind,
        Some(ToolErrorKind::Cancelled)
    );
    eventually("the handler saw the cancellation", || marker.is_file()).await;

    // The plugin keeps serving.
    let sum = server.call("add", json!({ "a": 1, "b": 1 })).await;
    assert_eq!(sum.output, json!({ "sum": 2 }));
}

/// How many `node` processes run the plugin in `dir` (its sandbox's launchers, which name
/// the directory too, left out).
fn node_processes(dir: &str) -> usize {
    command_lines()
        .iter()
        .filter(|line| line.contains(dir) && !line.starts_with("aleph-sandbox"))
        .count()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_reload_replaces_the_process_and_calls_in_flight_finish_on_the_old_one() {
    let root = tempfile::tempdir().unwrap();
    let manifest = CALC_MANIFEST.replacen(
        "[[commands]]",
        "[[tools]]\nname = \"slow\"\ndescription = \"Answer after a while.\"\n\n[[commands]]",
        1,
    );
    let source = |answer: &str| {
        CALC_SOURCE.replace(
            "handleAdd:",
            &format!(
                "slow: () => new Promise((r) => setTimeout(() => r(\"{answer}\"), 400)),\n    handleAdd:"
            ),
        )
    };
    let dir = node_plugin(root.path(), "calc", &manifest, &source("old"));
    let server = AlephToolServer::new();
    let manager = manager(&server, root.path());
    assert!(manager.load_all().failed.is_empty());
    let old_pid = manager
        .plugin("calc")
        .execute_command("version", &json!({}))
        .await
        .unwrap()["instance"]
        .clone();

    let in_flight = {
        let server = server.clone();
        tokio::spawn(async move { server.call("slow", json!({})).await })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    std::fs::write(dir.join("index.js"), source("new")).unwrap();
    let reloaded = tokio::task::spawn_blocking({
        let manager = manager.clone();
        move || manager.plugin("calc").reload()
    })
    .await
    .unwrap()
    .unwrap();
    assert_eq!(reloaded.status, PluginStatus::Running);
    let new_pid = manager
        .plugin("calc")
        .execute_command("version", &json!({}))
        .await
        .unwrap()["instance"]
        .clone();
    assert_ne!(old_pid, new_pid);

    assert_eq!(in_flight.await.unwrap().output, json!("old"));
    assert_eq!(server.call("slow", json!({})).await.output, json!("new"));
    let dir = dir.display().to_string();
    eventually("the old process is gone", || node_processes(&dir) == 1).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_missing_or_refused_node_is_a_clear_load_error() {
    let root = tempfile::tempdir().unwrap();
    calc(root.path());
    let server = AlephToolServer::new();

    let mut config = PluginsConfig::with_search_paths([root.path()]);
    config.runtimes.nodejs.node = "/nonexistent/bin/node".into();
    let manager = PluginManager::new(&server, config.clone());
    let report = manager.load_all();
    let (_, error) = &report.failed[0];
    assert!(matches!(error, PluginError::Load { .. }), "{error}");
    let message = error.to_string();
    assert!(message.contains("/nonexistent/bin/node"), "{message}");
    assert!(message.contains("node = "), "{message}");
    assert!(matches!(
        manager.plugin("calc").info().unwrap().status,
        PluginStatus::Error(_)
    ));

    config.runtimes.nodejs.node = "node".into();
    config.runtimes.nodejs.node_version = Some("<1".parse().unwrap());
    let manager = PluginManager::new(&server, config.clone());
    let message = manager.load_all().failed[0].1.to_string();
    assert!(message.contains("node_version"), "{message}");

    config.runtimes.nodejs.node_version = None;
    config.runtimes.nodejs.enabled = false;
    let manager = PluginManager::new(&server, config);
    let message = manager.load_all().failed[0].1.to_string();
    assert!(message.contains("enabled = false"), "{message}");
    assert!(server.tools().names().is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_handler_the_plugin_lacks_or_a_start_that_fails_is_refused_with_its_output() {
    let root = tempfile::tempdir().unwrap();
    node_plugin(
        root.path(),
        "lacking",
        &CALC_MANIFEST.replace("id = \"calc\"", "id = \"lacking\""),
        "require('@aleph/plugin-sdk').createServer({ name: 'lacking', tools: { handleAdd: () => 1 } }).start();",
    );
    node_plugin(
        root.path(),
        "throws",
        &CALC_MANIFEST.replace("id = \"calc\"", "id = \"throws\""),
        "throw new Error('the config file is missing');",
    );
    let server = AlephToolServer::new();
    let manager = manager(&server, root.path());
    let report = manager.load_all();
    assert_eq!(report.failed.len(), 2);
    let lacking = report.failed[0].1.to_string();
    assert!(
        lacking.contains("no handler for tool `divide`"),
        "{lacking}"
    );
    assert!(lacking.contains("command `version`"), "{lacking}");
    let throws = report.failed[1].1.to_string();
    assert!(throws.contains("exited with code 1"), "{throws}");
    assert!(throws.contains("the config file is missing"), "{throws}");
    assert!(server.tools().names().is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn the_watcher_reloads_on_code_changes_but_not_on_the_plugins_own_data() {
    let root = tempfile::tempdir().unwrap();
    let dir = calc(root.path());
    let server = AlephToolServer::new();
    let manager = manager(&server, root.path());
    assert!(manager.load_all().failed.is_empty());
    let _watcher = manager.watch_with(Duration::from_millis(50)).unwrap();
    let pid = |manager: &PluginManager| {
        let manager = manager.clone();
        async move {
            manager
                .plugin("calc")
                .execute_command("version", &json!({}))
                .await
                .unwrap()["instance"]
                .clone()
        }
    };
    let first = pid(&manager).await;

    // `probe` writes into `out/`, a `write:` grant: the plugin's data, not its code.
    assert_eq!(
        server.call("probe", json!({})).await.output["write_out"],
        "allowed"
    );
    assert!(dir.join("out/w.txt").is_file());
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(
        pid(&manager).await,
        first,
        "a data write reloaded the plugin"
    );

    std::fs::write(
        dir.join("index.js"),
        CALC_SOURCE.replace("({ sum: a + b })", "({ sum: a + b, reloaded: true })"),
    )
    .unwrap();
    for _ in 0..200 {
        let sum = server.call("add", json!({ "a": 1, "b": 1 })).await;
        if sum.output["reloaded"] == true {
            assert_ne!(pid(&manager).await, first);
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("the changed entry was not reloaded");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_command_that_never_answers_times_out() {
    let root = tempfile::tempdir().unwrap();
    calc(root.path());
    let server = AlephToolServer::new();
    let mut config = PluginsConfig::with_search_paths([root.path()]);
    config.runtimes.nodejs.timeout_ms = 300;
    let manager = PluginManager::new(&server, config);
    assert!(manager.load_all().failed.is_empty());
    let error = manager
        .plugin("calc")
        .execute_command("hang", &json!({}))
        .await
        .unwrap_err()
        .to_string();
    assert!(error.contains("within 300ms"), "{error}");
    let version = manager
        .plugin("calc")
        .execute_command("version", &json!({}))
        .await;
    assert_eq!(version.unwrap()["version"], "1.0.0");
}

#[test]
fn the_runtime_reports_the_node_it_runs_on() {
    let runtime = NodejsRuntime::new(NodeConfig::default());
    let version = runtime.node_version().unwrap();
    let printed = std::process::Command::new("node")
        .arg("--version")
        .output()
        .unwrap();
    assert_eq!(
        format!("v{version}"),
        String::from_utf8_lossy(&printed.stdout).trim()
    );
}

const FETCHER_MANIFEST: &str = r#"
[plugin]
id = "fetcher"
version = "1.0.0"
kind = "nodejs"
entry = "index.js"

[permissions]
network = ["connect:127.0.0.1"]

[[tools]]
name = "get"
description = "Fetch a URL with `fetch` and say what came back."

[[tools]]
name = "http_get"
description = "Fetch a URL with `http.get` and say what came back."
"#;

const FETCHER_SOURCE: &str = r#"
const http = require("node:http");
const { createServer } = require("@aleph/plugin-sdk");
createServer({
  name: "fetcher",
  tools: {
    get: async ({ url }) => {
      try {
        const answer = await fetch(url, { signal: AbortSignal.timeout(20000) });
        return `${answer.status} ${(await answer.text()).trim()}`;
      } catch (error) {
        return `failed ${error.cause?.message || error.message}`;
      }
    },
    http_get: ({ url }) => new Promise((resolve) => {
      http.get(url, (answer) => {
        let body = "";
        answer.on("data", (chunk) => { body += chunk; });
        answer.on("end", () => resolve(`${answer.statusCode} ${body.trim()}`));
      }).on("error", (error) => resolve(`failed ${error.message}`));
    }),
  },
}).start();
"#;

/// A plugin granted `connect:127.0.0.1` and run on `node` reaches a server on the host's
/// loopback through the sandbox's proxy, by `fetch` and by `http.get`, and nothing else:
/// Node.js 22.21 and 24 onward by themselves, older versions through the SDK.
async fn reaches_granted_hosts_through_the_proxy(node: &Path) {
    let root = tempfile::tempdir().unwrap();
    node_plugin(root.path(), "fetcher", FETCHER_MANIFEST, FETCHER_SOURCE);
    let server = AlephToolServer::new();
    let mut config = PluginsConfig::with_search_paths([root.path()]);
    config.runtimes.nodejs.node = node.to_path_buf();
    let manager = PluginManager::new(&server, config);
    let report = manager.load_all();
    assert!(report.failed.is_empty(), "{:?}", report.failed);
    let sandbox = manager.plugin("fetcher").info().unwrap().sandbox.unwrap();
    assert!(
        sandbox.contains("the network through a proxy to 127.0.0.1"),
        "{sandbox}"
    );
    let granted = crate::security::sandbox::LoopbackServer::start();
    let call = |tool: &'static str, url: String| {
        let server = &server;
        async move {
            let result = server.call(tool, json!({ "url": url })).await;
            assert!(result.success, "{:?}", result.error);
            result.output.as_str().unwrap().to_owned()
        }
    };
    for tool in ["get", "http_get"] {
        let reached = call(tool, format!("http://127.0.0.1:{}/", granted.port)).await;
        assert_eq!(
            reached,
            format!("200 {}", granted.secret),
            "{tool} on {sandbox}"
        );
        // A refused tunnel fails the request (its reason goes to the plugin's standard error,
        // or comes with the error); a refused plain request is answered 403 with the reason.
        let refused = call(tool, format!("http://localhost:{}/", granted.port)).await;
        assert!(
            refused.starts_with("failed")
                || refused.starts_with("403") && refused.contains("`localhost` is not among"),
            "{tool}: {refused}"
        );
    }
    assert_eq!(
        granted.connections(),
        2,
        "only the granted requests reach the server"
    );
    manager.plugin("fetcher").unload().unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_plugin_granted_hosts_reaches_them_through_the_proxy_on_a_current_node() {
    let node = aleph_tools_tests::interop_peers().join(".venv/bin/node24");
    reaches_granted_hosts_through_the_proxy(&node).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_plugin_granted_hosts_reaches_them_through_the_proxy_on_the_machines_node() {
    reaches_granted_hosts_through_the_proxy(Path::new("node")).await;
}
