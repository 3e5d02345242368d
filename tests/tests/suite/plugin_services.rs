//! Background services from a plugin's `[[services]]`: started with the plugin when
//! `auto_start`, started and stopped by hand, failing or hanging alone, stopped with the
//! plugin.

use std::path::Path;

use aleph_tools::AlephToolServer;
use aleph_tools::plugin::{PluginError, PluginManager, PluginsConfig, ServiceState};
use aleph_tools_tests::{eventually, node_plugin};

const MANIFEST: &str = r#"
[plugin]
id = "worker"
version = "1.0.0"
kind = "nodejs"
entry = "index.js"

[permissions]
filesystem = ["write:./out"]

[[services]]
name = "ticker"
description = "Ticks while it runs."
start_handler = "startTicker"
stop_handler = "stopTicker"
auto_start = true

[[services]]
name = "hangs"
start_handler = "start"
stop_handler = "stop"
auto_start = true

[[services]]
name = "breaks"
start_handler = "start"
stop_handler = "stop"

[[services]]
name = "manual"
start_handler = "start"
stop_handler = "stop"
"#;

const SOURCE: &str = r#"
const fs = require("node:fs");
const path = require("node:path");
const log = (line) => fs.appendFileSync(path.join(__dirname, "out", "events.txt"), line + "\n");
require("@aleph/plugin-sdk").createServer({
  name: "worker",
  services: {
    ticker: { start: () => log("ticker started"), stop: () => log("ticker stopped") },
    hangs: { start: () => new Promise(() => {}), stop: () => {} },
    breaks: { start: () => { throw new Error("the queue is unreachable"); }, stop: () => {} },
    manual: { start: () => log("manual started"), stop: () => log("manual stopped") },
  },
}).start();
"#;

fn events(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("out/events.txt")).unwrap_or_default()
}

fn state(manager: &PluginManager, name: &str) -> ServiceState {
    manager
        .services()
        .into_iter()
        .find(|s| s.name == name)
        .unwrap()
        .state
}

#[tokio::test(flavor = "multi_thread")]
async fn services_start_stop_fail_alone_and_stop_with_their_plugin() {
    let root = tempfile::tempdir().unwrap();
    let dir = node_plugin(root.path(), "worker", MANIFEST, SOURCE);
    std::fs::create_dir_all(dir.join("out")).unwrap();
    let server = AlephToolServer::new();
    let mut config = PluginsConfig::with_search_paths([root.path()]);
    config.runtimes.nodejs.timeout_ms = 500;
    let manager = PluginManager::new(&server, config);
    assert!(manager.load_all().failed.is_empty());

    // auto_start: the ticker runs although `hangs` never finishes starting, then fails.
    eventually("the ticker runs", || {
        state(&manager, "ticker") == ServiceState::Running
    })
    .await;
    assert!(events(&dir).contains("ticker started"));
    assert_eq!(state(&manager, "hangs"), ServiceState::Starting);
    eventually("the hanging start fails", || {
        matches!(state(&manager, "hangs"), ServiceState::Failed(m) if m.contains("within 500ms"))
    })
    .await;
    assert_eq!(state(&manager, "manual"), ServiceState::Stopped);
    let info = manager
        .services()
        .into_iter()
        .find(|s| s.name == "ticker")
        .unwrap();
    assert_eq!(info.plugin, "worker");
    assert_eq!(info.description, "Ticks while it runs.");
    assert!(info.auto_start);

    // By hand.
    let started = manager
        .plugin("worker")
        .start_service("manual")
        .await
        .unwrap();
    assert_eq!(started.state, ServiceState::Running);
    let again = manager
        .plugin("worker")
        .start_service("manual")
        .await
        .unwrap();
    assert_eq!(
        again.state,
        ServiceState::Running,
        "starting twice changes nothing"
    );
    let stopped = manager
        .plugin("worker")
        .stop_service("manual")
        .await
        .unwrap();
    assert_eq!(stopped.state, ServiceState::Stopped);
    assert!(events(&dir).contains("manual started\nmanual stopped\n"));

    let broken = manager
        .plugin("worker")
        .start_service("breaks")
        .await
        .unwrap_err();
    assert!(matches!(broken, PluginError::Service { .. }));
    assert!(
        broken.to_string().contains("the queue is unreachable"),
        "{broken}"
    );
    assert!(matches!(state(&manager, "breaks"), ServiceState::Failed(_)));
    let unknown = manager
        .plugin("worker")
        .start_service("tickr")
        .await
        .unwrap_err();
    assert!(
        unknown
            .to_string()
            .contains("it has: ticker, hangs, breaks, manual"),
        "{unknown}"
    );
    assert!(matches!(
        manager.plugin("nobody").start_service("ticker").await,
        Err(PluginError::NotFound(_))
    ));

    // Unloading stops what runs.
    manager.plugin("worker").unload().unwrap();
    assert!(manager.services().is_empty());
    eventually("the ticker is stopped", || {
        events(&dir).contains("ticker stopped")
    })
    .await;
}

#[test]
fn a_static_plugin_cannot_have_services() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("p");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("aleph_plugin.toml"),
        "[plugin]\nid = \"p\"\nversion = \"1.0.0\"\nkind = \"static\"\n\n[[services]]\nname = \"s\"\nstart_handler = \"a\"\nstop_handler = \"b\"\n",
    )
    .unwrap();
    let error = aleph_tools::plugin::PluginManifest::read_dir(&dir)
        .unwrap_err()
        .to_string();
    assert!(error.contains("cannot have services"), "{error}");
}

/// A WebAssembly plugin whose handlers answer `null`, or fail with a message.
const SERVICE_MODULE: &str = r#"
(module
  (import "extism:host/env" "alloc" (func $alloc (param i64) (result i64)))
  (import "extism:host/env" "store_u8" (func $store_u8 (param i64 i32)))
  (import "extism:host/env" "output_set" (func $output_set (param i64 i64)))
  (import "extism:host/env" "error_set" (func $error_set (param i64)))
  (memory 1)
  (data (i32.const 0) "null")
  (data (i32.const 16) "cannot bind the port")
  (func $emit (param $ptr i32) (param $len i32) (result i64)
    (local $offs i64) (local $i i32)
    (local.set $offs (call $alloc (i64.extend_i32_u (local.get $len))))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $i) (local.get $len)))
        (call $store_u8
          (i64.add (local.get $offs) (i64.extend_i32_u (local.get $i)))
          (i32.load8_u (i32.add (local.get $ptr) (local.get $i))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $next)))
    (local.get $offs))
  (func (export "ok") (result i32)
    (call $output_set (call $emit (i32.const 0) (i32.const 4)) (i64.const 4))
    (i32.const 0))
  (func (export "fail") (result i32)
    (call $error_set (call $emit (i32.const 16) (i32.const 20)))
    (i32.const 1)))
"#;

#[tokio::test(flavor = "multi_thread")]
async fn a_webassembly_plugins_services_run_through_its_exports() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("svc");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("svc.wat"), SERVICE_MODULE).unwrap();
    std::fs::write(
        dir.join("aleph_plugin.toml"),
        "[plugin]\nid = \"svc\"\nversion = \"1.0.0\"\nkind = \"wasm\"\nentry = \"svc.wat\"\n\n[[services]]\nname = \"good\"\nstart_handler = \"ok\"\nstop_handler = \"ok\"\nauto_start = true\n\n[[services]]\nname = \"bad\"\nstart_handler = \"fail\"\nstop_handler = \"ok\"\n",
    )
    .unwrap();
    let server = AlephToolServer::new();
    let manager = PluginManager::new(&server, PluginsConfig::with_search_paths([root.path()]));
    assert!(manager.load_all().failed.is_empty());
    eventually("the good service runs", || {
        state(&manager, "good") == ServiceState::Running
    })
    .await;
    let stopped = manager.plugin("svc").stop_service("good").await.unwrap();
    assert_eq!(stopped.state, ServiceState::Stopped);
    let error = manager
        .plugin("svc")
        .start_service("bad")
        .await
        .unwrap_err();
    assert!(
        error.to_string().contains("cannot bind the port"),
        "{error}"
    );
    // A handler the module does not export is a load error, as for tools.
    std::fs::write(
        dir.join("aleph_plugin.toml"),
        "[plugin]\nid = \"svc\"\nversion = \"1.0.0\"\nkind = \"wasm\"\nentry = \"svc.wat\"\n\n[[services]]\nname = \"good\"\nstart_handler = \"begin\"\nstop_handler = \"ok\"\n",
    )
    .unwrap();
    let error = manager.plugin("svc").reload().unwrap_err().to_string();
    assert!(
        error.contains("`services[0].start_handler` names `begin`"),
        "{error}"
    );
}
