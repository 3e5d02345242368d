//! Hostile plugins, written as WAT: every one fails its own call, with a message that says
//! what happened, while the host and the plugin beside it keep serving.

use std::fmt::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};

use aleph_tools::plugin::{PluginManager, PluginStatus, PluginsConfig, WasmConfig};
use aleph_tools::{AlephToolServer, ToolErrorKind};
use aleph_tools_tests::{copy_dir, example_plugins};
use serde_json::json;

/// A module whose exports misbehave, one way each. `$emit` copies bytes of the module's own
/// memory into Extism's and returns where they went.
const HOSTILE: &str = r#"
(module
  (import "extism:host/env" "alloc" (func $alloc (param i64) (result i64)))
  (import "extism:host/env" "store_u8" (func $store_u8 (param i64 i32)))
  (import "extism:host/env" "output_set" (func $output_set (param i64 i64)))
  (import "extism:host/env" "error_set" (func $error_set (param i64)))
  (memory 1)
  (data (i32.const 0) "{\"ok\":true}")
  (data (i32.const 16) "boom: the input was bad")
  (data (i32.const 48) "\ff\fe\fd")
  (data (i32.const 64) "not json at all")
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
    (call $output_set (call $emit (i32.const 0) (i32.const 11)) (i64.const 11))
    (i32.const 0))
  (func (export "work") (result i32)
    (local $i i32)
    (loop $count
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $count (i32.lt_u (local.get $i) (i32.const 20000000))))
    (call $output_set (call $emit (i32.const 0) (i32.const 11)) (i64.const 11))
    (i32.const 0))
  (func (export "spin") (result i32)
    (loop $forever (br $forever))
    (i32.const 0))
  (func (export "bomb") (result i32)
    (loop $grow
      (br_if $grow (i32.ne (memory.grow (i32.const 16)) (i32.const -1))))
    (unreachable))
  (func (export "trap") (result i32)
    (unreachable))
  (func (export "fail") (result i32)
    (call $error_set (call $emit (i32.const 16) (i32.const 23)))
    (i32.const 1))
  (func (export "huge") (result i32)
    (call $output_set (call $alloc (i64.const 20971520)) (i64.const 20971520))
    (i32.const 0))
  (func (export "bad_utf8") (result i32)
    (call $output_set (call $emit (i32.const 48) (i32.const 3)) (i64.const 3))
    (i32.const 0))
  (func (export "bad_json") (result i32)
    (call $output_set (call $emit (i32.const 64) (i32.const 15)) (i64.const 15))
    (i32.const 0))
  (func (export "not_callable") (param i32) (result i32)
    (local.get 0)))
"#;

const TOOLS: [&str; 9] = [
    "ok", "work", "spin", "bomb", "trap", "fail", "huge", "bad_utf8", "bad_json",
];

fn manifest(id: &str, entry: &str, tools: &[&str]) -> String {
    let mut text = format!(
        "[plugin]\nid = \"{id}\"\nversion = \"0.1.0\"\nkind = \"wasm\"\nentry = \"{entry}\"\n"
    );
    for tool in tools {
        let _ = write!(
            text,
            "\n[[tools]]\nname = \"{tool}\"\ndescription = \"Misbehaves: {tool}\"\n"
        );
    }
    text
}

fn write_plugin(root: &Path, id: &str, entry: &str, module: &[u8], manifest_text: &str) {
    let dir = root.join(id);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(entry), module).unwrap();
    std::fs::write(dir.join("aleph_plugin.toml"), manifest_text).unwrap();
}

/// `text-tools` and the hostile plugin side by side, with tight limits.
fn setup(wasm: WasmConfig) -> (tempfile::TempDir, AlephToolServer, PluginManager) {
    setup_on(&AlephToolServer::new(), wasm)
}

fn setup_on(
    server: &AlephToolServer,
    wasm: WasmConfig,
) -> (tempfile::TempDir, AlephToolServer, PluginManager) {
    let root = tempfile::tempdir().unwrap();
    copy_dir(
        &example_plugins().join("text-tools"),
        &root.path().join("text-tools"),
    );
    write_plugin(
        root.path(),
        "hostile",
        "hostile.wat",
        HOSTILE.as_bytes(),
        &manifest("hostile", "hostile.wat", &TOOLS),
    );
    let mut config = PluginsConfig::with_search_paths([root.path()]);
    config.runtimes.wasm = wasm;
    let server = server.clone();
    let manager = PluginManager::new(&server, config);
    let report = manager.load_all();
    assert!(report.failed.is_empty(), "{:?}", report.failed);
    (root, server, manager)
}

fn limits() -> WasmConfig {
    let mut wasm = WasmConfig::default();
    wasm.timeout_ms = 1_000;
    wasm.memory_limit = "32MB".parse().unwrap();
    wasm
}

/// With a small address-space reservation (for a host under `ulimit -v`), a memory still
/// grows to the limit, past the reservation, and no further; every other call is as before.
#[tokio::test(flavor = "multi_thread")]
async fn a_small_memory_reservation_still_grows_to_the_limit() {
    let mut wasm = limits();
    wasm.memory_reservation = Some("4MB".parse().unwrap());
    let (_root, server, _manager) = setup(wasm);
    let bomb = server.call("bomb", json!({})).await;
    let error = bomb.error.unwrap();
    assert!(
        error.contains("ran out of memory (the limit is 32MB)"),
        "{error}"
    );
    // 20 MB allocated, five times the reservation: the memory moved as it grew.
    let huge = server.call("huge", json!({})).await;
    let error = huge.error.unwrap();
    assert!(
        error.contains("returned 20971520 bytes, more than the 16MB allowed"),
        "{error}"
    );
    let work = server.call("work", json!({})).await;
    assert_eq!(work.output, json!({ "ok": true }), "{work:?}");
    neighbour_still_serves(&server).await;
}

async fn neighbour_still_serves(server: &AlephToolServer) {
    let echoed = server.call("echo", json!({ "still": "here" })).await;
    assert_eq!(echoed.output, json!({ "still": "here" }), "{echoed:?}");
    let ok = server.call("ok", json!({})).await;
    assert_eq!(ok.output, json!({ "ok": true }), "{ok:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn every_misbehaviour_fails_its_own_call_only() {
    let (_root, server, _manager) = setup(limits());
    let cases: [(&str, ToolErrorKind, &str); 7] = [
        ("spin", ToolErrorKind::Timeout, "did not finish within 1s"),
        (
            "bomb",
            ToolErrorKind::Execution,
            "ran out of memory (the limit is 32MB)",
        ),
        ("trap", ToolErrorKind::Execution, "crashed"),
        ("fail", ToolErrorKind::Execution, "boom: the input was bad"),
        (
            "huge",
            ToolErrorKind::Execution,
            "returned 20971520 bytes, more than the 16MB allowed",
        ),
        ("bad_utf8", ToolErrorKind::Execution, "not UTF-8"),
        ("bad_json", ToolErrorKind::Execution, "not JSON"),
    ];
    for (tool, kind, message) in cases {
        let result = server.call(tool, json!({})).await;
        assert!(!result.success, "{tool}");
        assert_eq!(result.error_kind, Some(kind), "{tool}: {result:?}");
        let error = result.error.unwrap();
        assert!(error.contains(message), "{tool}: {error}");
        neighbour_still_serves(&server).await;
    }
    // Twice more each: a failed instance is rebuilt, never reused broken.
    for tool in TOOLS.iter().filter(|t| **t != "spin") {
        for _ in 0..2 {
            let result = server.call(tool, json!({})).await;
            assert_eq!(
                result.success,
                matches!(*tool, "ok" | "work"),
                "{tool}: {result:?}"
            );
        }
    }
    neighbour_still_serves(&server).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_timeout_never_fails_a_call_running_beside_it() {
    let (_root, server, _manager) = setup(limits());
    let spin = {
        let server = server.clone();
        tokio::spawn(async move { server.call("spin", json!({})).await })
    };
    // Keep the pool's other instance busy with calls that spend their time inside the
    // module, until well after the spin call was interrupted; none of them may see that
    // interruption.
    let start = Instant::now();
    let mut calls = 0;
    while start.elapsed() < Duration::from_millis(1_600) {
        let ok = server.call("work", json!({})).await;
        assert!(
            ok.success,
            "call {calls} after {:?}: {ok:?}",
            start.elapsed()
        );
        calls += 1;
    }
    let interrupted = spin.await.unwrap();
    assert_eq!(interrupted.error_kind, Some(ToolErrorKind::Timeout));
    assert!(calls > 1, "{calls}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_server_timeout_and_cancellation_stop_a_running_plugin() {
    let mut wasm = limits();
    wasm.timeout_ms = 60_000;
    wasm.pool_size = 1;
    // The server's own timeout drops the call; the plugin is interrupted, so the one
    // instance of the pool is free again long before the plugin's 60 s.
    let server = AlephToolServer::builder()
        .with_default_timeout(Duration::from_millis(300))
        .build()
        .unwrap();
    let (_root, server, _manager) = setup_on(&server, wasm);
    let timed_out = server.call("spin", json!({})).await;
    assert_eq!(timed_out.error_kind, Some(ToolErrorKind::Timeout));
    let start = Instant::now();
    assert!(server.call("ok", json!({})).await.success);
    assert!(start.elapsed() < Duration::from_secs(30));
}

#[tokio::test(flavor = "multi_thread")]
async fn an_endless_start_function_is_stopped_by_fuel() {
    let mut wasm = limits();
    wasm.fuel = 50_000_000;
    let (root, server, manager) = setup(wasm);
    let module = "(module (func $forever (loop $l (br $l))) (start $forever) (func (export \"run\") (result i32) (i32.const 0)))";
    write_plugin(
        root.path(),
        "stuck",
        "stuck.wat",
        module.as_bytes(),
        &manifest("stuck", "stuck.wat", &["run"]),
    );
    let error = manager.load(&root.path().join("stuck")).unwrap_err();
    assert!(error.to_string().contains("cannot start"), "{error}");
    assert!(error.to_string().contains("fuel"), "{error}");
    assert!(matches!(
        manager.plugin("stuck").info().unwrap().status,
        PluginStatus::Error(_)
    ));
    assert!(!server.contains("run"));
    neighbour_still_serves(&server).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn modules_that_cannot_load_are_refused_with_the_reason() {
    let (root, server, manager) = setup(limits());
    let cases: [(&str, &[u8], &str); 3] = [
        ("text", b"this is not WebAssembly", "not WebAssembly"),
        (
            "binary",
            b"\x00asm\x01\x00\x00\x00\xff\xff\xff",
            "not a usable WebAssembly module",
        ),
        ("empty", b"", "not WebAssembly"),
    ];
    for (id, module, message) in cases {
        write_plugin(
            root.path(),
            id,
            "plugin.wasm",
            module,
            &manifest(id, "plugin.wasm", &["x"]),
        );
        let error = manager.load(&root.path().join(id)).unwrap_err().to_string();
        assert!(error.contains(message), "{id}: {error}");
    }
    // An export the manifest names but the module lacks, or cannot call.
    for (id, handler) in [("missing", "nope"), ("uncallable", "not_callable")] {
        let text = format!("{}handler = \"{handler}\"\n", manifest(id, "m.wat", &["x"]));
        write_plugin(root.path(), id, "m.wat", HOSTILE.as_bytes(), &text);
        let error = manager.load(&root.path().join(id)).unwrap_err().to_string();
        assert!(
            error.contains(&format!(
                "names `{handler}`, which the module does not export"
            )),
            "{error}"
        );
        assert!(
            error.contains(
                "(it exports: bad_json, bad_utf8, bomb, fail, huge, ok, spin, trap, work)"
            ),
            "{error}"
        );
    }
    neighbour_still_serves(&server).await;
    assert_eq!(manager.list().len(), 7);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unused_network_grant_changes_nothing() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("text-tools");
    copy_dir(&example_plugins().join("text-tools"), &dir);
    let manifest = dir.join("aleph_plugin.toml");
    let text = std::fs::read_to_string(&manifest).unwrap();
    std::fs::write(
        &manifest,
        text.replacen(
            "[[tools]]",
            "[permissions]\nnetwork = [\"connect:https://api.example.com\"]\n\n[[tools]]",
            1,
        ),
    )
    .unwrap();
    let server = AlephToolServer::new().clone();
    let manager = PluginManager::new(&server, PluginsConfig::with_search_paths([root.path()]));
    manager.load(&dir).unwrap();
    let result = server
        .call("slugify", json!({ "text": "Granted, unused" }))
        .await;
    assert_eq!(result.output, json!("granted-unused"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_module_that_imports_wasi_links_without_any_grant() {
    let (root, server, manager) = setup(limits());
    let module = r#"(module
  (import "wasi_snapshot_preview1" "random_get" (func $random (param i32 i32) (result i32)))
  (import "extism:host/env" "output_set" (func $output_set (param i64 i64)))
  (import "extism:host/env" "alloc" (func $alloc (param i64) (result i64)))
  (import "extism:host/env" "store_u8" (func $store_u8 (param i64 i32)))
  (memory (export "memory") 1)
  (func (export "roll") (result i32)
    (local $offs i64)
    (drop (call $random (i32.const 0) (i32.const 1)))
    (local.set $offs (call $alloc (i64.const 1)))
    (call $store_u8 (local.get $offs) (i32.const 55))
    (call $output_set (local.get $offs) (i64.const 1))
    (i32.const 0)))"#;
    write_plugin(
        root.path(),
        "dice",
        "dice.wat",
        module.as_bytes(),
        &manifest("dice", "dice.wat", &["roll"]),
    );
    manager.load(&root.path().join("dice")).unwrap();
    let rolled = server.call("roll", json!({})).await;
    assert_eq!(rolled.output, json!(7), "{rolled:?}");
}
