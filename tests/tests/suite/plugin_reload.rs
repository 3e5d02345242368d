//! Hot reload: a plugin modified, broken, fixed, added and deleted on disk while calls run.
//! Other tools lose no call; a broken update keeps the previous version serving.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use aleph_tools::plugin::{PluginManager, PluginStatus, PluginsConfig};
use aleph_tools::prelude::*;
use aleph_tools::{AlephToolServer, ToolErrorKind};
use aleph_tools_tests::{copy_dir, example_plugins};
use serde_json::json;

/// Add two integers.
#[tool(register = false)]
fn add(
    /// First
    a: i64,
    /// Second
    b: i64,
) -> i64 {
    a + b
}

async fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "gave up waiting until {what}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[derive(Default)]
struct Tally {
    add_calls: AtomicUsize,
    add_failures: AtomicUsize,
    echo_calls: AtomicUsize,
    echo_unexpected: AtomicUsize,
}

/// Calls `add` and `echo` without pause until `stop`; `echo` may only be missing once
/// `echo_may_vanish` is set.
fn keep_calling(
    server: AlephToolServer,
    stop: Arc<AtomicBool>,
    echo_may_vanish: Arc<AtomicBool>,
    tally: Arc<Tally>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut i = 0_i64;
        while !stop.load(Ordering::SeqCst) {
            i += 1;
            let sum = server.call("add", json!({ "a": i, "b": 1 })).await;
            tally.add_calls.fetch_add(1, Ordering::SeqCst);
            if sum.output != json!(i + 1) {
                tally.add_failures.fetch_add(1, Ordering::SeqCst);
            }
            let may_vanish = echo_may_vanish.load(Ordering::SeqCst);
            let echoed = server.call("echo", json!({ "i": i })).await;
            tally.echo_calls.fetch_add(1, Ordering::SeqCst);
            let vanished = echoed.error_kind == Some(ToolErrorKind::NotFound);
            if echoed.output != json!({ "i": i }) && !(may_vanish && vanished) {
                eprintln!("unexpected echo result: {echoed:?}");
                tally.echo_unexpected.fetch_add(1, Ordering::SeqCst);
            }
        }
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn plugins_reload_from_disk_while_calls_run() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("text-tools");
    copy_dir(&example_plugins().join("text-tools"), &dir);
    let server = AlephToolServer::builder()
        .with_tool(AddTool)
        .build()
        .unwrap();
    let manager = PluginManager::new(&server, PluginsConfig::with_search_paths([root.path()]));
    assert_eq!(manager.load_all().loaded, ["text-tools"]);
    let _watcher = manager.watch_with(Duration::from_millis(100)).unwrap();
    let changes = server.watch_tools();
    let changes_before = *changes.borrow();

    let stop = Arc::new(AtomicBool::new(false));
    let echo_may_vanish = Arc::new(AtomicBool::new(false));
    let tally = Arc::new(Tally::default());
    let caller = keep_calling(
        server.clone(),
        Arc::clone(&stop),
        Arc::clone(&echo_may_vanish),
        Arc::clone(&tally),
    );
    let status = |manager: &PluginManager| manager.plugin("text-tools").info().map(|p| p.status);

    // Modify: a new description reaches the tool list.
    let manifest = dir.join("aleph_plugin.toml");
    let original = std::fs::read_to_string(&manifest).unwrap();
    std::fs::write(
        &manifest,
        original.replace("Return the arguments unchanged.", "Echo, version two."),
    )
    .unwrap();
    wait_until("the new description is served", || {
        server
            .tools()
            .get("echo")
            .is_some_and(|d| d.description == "Echo, version two.")
    })
    .await;

    // Break the manifest: the previous version keeps serving; the status says why.
    std::fs::write(&manifest, "[plugin\nid = ").unwrap();
    wait_until("the broken manifest is reported", || {
        matches!(status(&manager), Some(PluginStatus::Error(_)))
    })
    .await;
    let Some(PluginStatus::Error(message)) = status(&manager) else {
        unreachable!()
    };
    assert!(message.contains("still serving version 1.0.0"), "{message}");
    assert!(server.contains("echo"));

    // Fix it.
    std::fs::write(&manifest, &original).unwrap();
    wait_until("the fixed plugin runs", || {
        status(&manager) == Some(PluginStatus::Running)
            && server
                .tools()
                .get("echo")
                .is_some_and(|d| d.description == "Return the arguments unchanged.")
    })
    .await;

    // Break the module: again the previous version serves.
    let module = dir.join("text_tools.wasm");
    let good_module = std::fs::read(&module).unwrap();
    std::fs::write(&module, b"\0asm garbage").unwrap();
    wait_until("the broken module is reported", || {
        matches!(status(&manager), Some(PluginStatus::Error(m)) if m.contains("not a usable WebAssembly module"))
    })
    .await;
    assert_eq!(
        server.call("echo", json!({ "x": 1 })).await.output,
        json!({ "x": 1 })
    );
    std::fs::write(&module, &good_module).unwrap();
    wait_until("the fixed module runs", || {
        status(&manager) == Some(PluginStatus::Running)
    })
    .await;

    // A new plugin directory loads by itself.
    copy_dir(
        &example_plugins().join("http-fetch"),
        &root.path().join("http-fetch"),
    );
    wait_until("the new plugin is served", || server.contains("fetch")).await;

    // Delete: the plugin and its tools go.
    echo_may_vanish.store(true, Ordering::SeqCst);
    std::fs::remove_dir_all(&dir).unwrap();
    wait_until("the deleted plugin is gone", || {
        !server.contains("echo") && manager.plugin("text-tools").info().is_none()
    })
    .await;
    assert_eq!(server.tools().names(), ["add", "fetch"]);

    stop.store(true, Ordering::SeqCst);
    caller.await.unwrap();
    assert!(tally.add_calls.load(Ordering::SeqCst) > 10);
    assert_eq!(
        tally.add_failures.load(Ordering::SeqCst),
        0,
        "calls to `add` were lost"
    );
    assert!(tally.echo_calls.load(Ordering::SeqCst) > 10);
    assert_eq!(
        tally.echo_unexpected.load(Ordering::SeqCst),
        0,
        "calls to the plugin failed while it reloaded"
    );
    // Each reload, load and unload was one change to the tool list.
    assert!(*changes.borrow() - changes_before >= 5);
}

#[test]
fn with_hot_reload_off_nothing_is_watched() {
    let root = tempfile::tempdir().unwrap();
    let server = AlephToolServer::new();
    let mut config = PluginsConfig::with_search_paths([root.path()]);
    assert_eq!(
        PluginManager::new(&server, config.clone())
            .watch()
            .unwrap()
            .roots()
            .len(),
        1
    );
    config.hot_reload = false;
    let watcher = PluginManager::new(&server, config).watch().unwrap();
    assert!(watcher.roots().is_empty());
}
