//! WebAssembly plugins end to end: the example plugins discovered, checked, served through
//! the server's whole pipeline, and unloaded; permissions enforced by the sandbox.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::mpsc;

use aleph_tools::plugin::{PluginKind, PluginManager, PluginStatus, PluginsConfig};
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

/// A search path holding copies of the example plugins named, so tests never share files.
fn plugins_dir(names: &[&str]) -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    for name in names {
        copy_dir(&example_plugins().join(name), &root.path().join(name));
    }
    root
}

fn manager(server: &AlephToolServer, root: &Path) -> PluginManager {
    PluginManager::new(server, PluginsConfig::with_search_paths([root]))
}

/// A server serving copies of the example plugins named, every one loaded.
fn serve(names: &[&str]) -> (tempfile::TempDir, AlephToolServer, PluginManager) {
    let root = plugins_dir(names);
    let server = AlephToolServer::new();
    let manager = manager(&server, root.path());
    let report = manager.load_all();
    assert!(report.failed.is_empty(), "{:?}", report.failed);
    (root, server, manager)
}

/// Schemas: inline in the manifest (with the instruction file), from `describe`, open.
fn check_plugin_schemas(server: &AlephToolServer) {
    let word_count = server.tools().get("word_count").unwrap();
    assert_eq!(word_count.category, ToolCategory::Plugin);
    assert!(word_count.description.contains("Unicode scalar values"));
    assert_eq!(word_count.parameters["required"], json!(["text"]));
    assert!(word_count.output_schema.is_some());
    assert_eq!(word_count.title.as_deref(), Some("Word count"));
    assert_eq!(word_count.icons.len(), 1);
    assert_eq!(
        word_count.icons[0].mime_type.as_deref(),
        Some("image/svg+xml")
    );
    assert_eq!(word_count.icons[0].sizes, ["any"]);
    assert_eq!(
        word_count.meta.as_ref().unwrap()["example.com/group"],
        "text"
    );
    assert_eq!(word_count.annotations.read_only, Some(true));
    assert!(word_count.tags.contains(&"plugin:text-tools".to_owned()));
    let slugify = server.tools().get("slugify").unwrap();
    assert_eq!(
        slugify.parameters["properties"]["separator"]["maxLength"],
        3
    );
    let echo = server.tools().get("echo").unwrap();
    assert_eq!(echo.parameters["additionalProperties"], true);
    let fetch = server.tools().get("fetch").unwrap();
    assert_eq!(fetch.parameters["required"], json!(["url"]));
    assert_eq!(fetch.annotations.open_world, Some(true));
}

#[tokio::test(flavor = "multi_thread")]
async fn example_plugins_are_discovered_checked_served_and_unloaded() {
    let root = plugins_dir(&["text-tools", "http-fetch"]);
    let server = AlephToolServer::builder()
        .with_tool(AddTool)
        .build()
        .unwrap();
    let manager = manager(&server, root.path());

    let found: Vec<PathBuf> = manager.discover();
    assert_eq!(found.len(), 2, "{found:?}");
    let report = manager.load_all();
    assert!(report.failed.is_empty(), "{:?}", report.failed);
    assert_eq!(report.loaded, ["http-fetch", "text-tools"]);
    assert_eq!(
        server.tools().names(),
        ["add", "echo", "fetch", "slugify", "word_count"]
    );

    let info = manager.plugin("text-tools").info().unwrap();
    assert_eq!(info.status, PluginStatus::Running);
    assert_eq!(info.kind, Some(PluginKind::Wasm));
    assert_eq!(info.version.unwrap().to_string(), "1.0.0");
    assert_eq!(info.tools, ["echo", "slugify", "word_count"]);
    assert_eq!(info.commands, ["version"]);

    check_plugin_schemas(&server);

    // Calls go through the pipeline: results, name repair, validation, plugin errors.
    let counted = server
        .call("word_count", json!({ "text": "one two\nthree ü" }))
        .await;
    assert!(counted.success, "{:?}", counted.error);
    assert_eq!(
        counted.output,
        json!({ "words": 4, "lines": 2, "characters": 15 })
    );
    let repaired = server
        .call("Slugify", json!({ "text": "Hello, World!" }))
        .await;
    assert_eq!(repaired.output, json!("hello-world"));
    let invalid = server
        .call("slugify", json!({ "text": "x", "separator": "-----" }))
        .await;
    assert_eq!(invalid.error_kind, Some(ToolErrorKind::InvalidArgs));
    assert!(invalid.error.unwrap().contains("/separator"));
    let refused = server.call("slugify", json!({ "text": "!!!" })).await;
    assert!(!refused.success);
    assert!(
        refused
            .error
            .as_deref()
            .unwrap()
            .contains("no letters or digits"),
        "{refused:?}"
    );
    // The instance that returned an error is still good.
    let again = server.call("slugify", json!({ "text": "a b" })).await;
    assert_eq!(again.output, json!("a-b"));
    let echoed = server.call("echo", json!({ "any": [1, "two"] })).await;
    assert_eq!(echoed.output, json!({ "any": [1, "two"] }));

    // A filter applies to plugin tools like any other.
    server.set_filter(ToolFilter::new().block("echo")).unwrap();
    assert!(!server.call("echo", json!({})).await.success);
    server.set_filter(ToolFilter::new()).unwrap();

    // Direct commands run without the model.
    let version = manager
        .plugin("text-tools")
        .execute_command("version", &json!({}))
        .await
        .unwrap();
    assert_eq!(version["version"], "1.0.0");
    let unknown = manager
        .plugin("text-tools")
        .execute_command("versoin", &json!({}))
        .await
        .unwrap_err();
    assert!(unknown.to_string().contains("it has: version"), "{unknown}");

    // Disable, enable, unload.
    let changes = server.watch_tools();
    manager.plugin("text-tools").disable().unwrap();
    assert_eq!(
        manager.plugin("text-tools").info().unwrap().status,
        PluginStatus::Stopped
    );
    assert!(!server.contains("word_count"));
    manager.plugin("text-tools").enable().unwrap();
    assert!(server.contains("word_count"));
    manager.plugin("text-tools").unload().unwrap();
    assert!(manager.plugin("text-tools").info().is_none());
    assert_eq!(server.tools().names(), ["add", "fetch"]);
    assert!(changes.has_changed().unwrap());
    assert_eq!(
        server.call("add", json!({ "a": 1, "b": 2 })).await.output,
        3
    );
    assert!(matches!(
        manager.plugin("text-tools").unload(),
        Err(aleph_tools::plugin::PluginError::NotFound(_))
    ));
}

#[tokio::test(flavor = "multi_thread")]
async fn parallel_calls_share_the_pool() {
    let (_root, server, _manager) = serve(&["text-tools"]);
    let calls = (0..32).map(|i| {
        let server = server.clone();
        async move { server.call("echo", json!({ "i": i })).await }
    });
    let results = futures_join_all(calls).await;
    for (i, result) in results.iter().enumerate() {
        assert_eq!(result.output, json!({ "i": i }));
    }
}

async fn futures_join_all<F>(futures: impl IntoIterator<Item = F>) -> Vec<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let handles: Vec<_> = futures.into_iter().map(tokio::spawn).collect();
    let mut out = Vec::new();
    for handle in handles {
        out.push(handle.await.unwrap());
    }
    out
}

/// Serves one HTTP request on loopback and hands back the request's text.
fn one_shot_server() -> (String, mpsc::Receiver<String>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!(
        "http://127.0.0.1:{}/status",
        listener.local_addr().unwrap().port()
    );
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let Ok((mut stream, _)) = listener.accept() else {
            return;
        };
        let mut request = vec![0; 8192];
        let n = stream.read(&mut request).unwrap_or(0);
        let _ = tx.send(String::from_utf8_lossy(&request[..n]).into_owned());
        let _ = stream
            .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok");
    });
    (url, rx)
}

#[tokio::test(flavor = "multi_thread")]
async fn network_is_granted_per_host() {
    let (root, server, manager) = serve(&["http-fetch"]);

    // Granted: 127.0.0.1 is in the manifest.
    let (url, requests) = one_shot_server();
    let fetched = server.call("fetch", json!({ "url": url })).await;
    assert!(fetched.success, "{:?}", fetched.error);
    assert_eq!(fetched.output["status"], 200);
    assert_eq!(fetched.output["body"], "ok");
    assert!(requests.recv().unwrap().starts_with("GET /status"));

    // Not granted: another host name, refused before any connection.
    let denied = server
        .call("fetch", json!({ "url": "http://localhost:9/" }))
        .await;
    assert!(!denied.success);
    assert!(
        denied
            .error
            .as_deref()
            .unwrap()
            .contains("the plugin was refused: the host `localhost` is not among the allowed hosts (`127.0.0.1`)"),
        "{denied:?}"
    );

    // Without the permission the same module reaches nothing.
    let manifest = root.path().join("http-fetch/aleph_plugin.json");
    let text = std::fs::read_to_string(&manifest).unwrap();
    std::fs::write(&manifest, text.replace("\"connect:http://127.0.0.1\"", "")).unwrap();
    manager.plugin("http-fetch").reload().unwrap();
    let (url, _requests) = one_shot_server();
    let refused = server.call("fetch", json!({ "url": url })).await;
    assert!(
        refused
            .error
            .as_deref()
            .unwrap()
            .contains("is not among the allowed hosts (none)"),
        "{refused:?}"
    );
}

/// Environment variables reach a plugin only when its manifest lists them. The variable is
/// set for a child run of this test, since tests cannot change their own environment safely.
#[test]
fn granted_environment_variables_reach_the_plugin() {
    const MARK: &str = "ALEPH_TOOLS_ENV_CHILD";
    if std::env::var_os(MARK).is_none() {
        let status = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "granted_environment_variables_reach_the_plugin"])
            .env(MARK, "1")
            .env("FETCH_TOKEN", "s3cret")
            .status()
            .unwrap();
        assert!(status.success());
        return;
    }
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let (root, server, manager) = serve(&["http-fetch"]);
        let (url, requests) = one_shot_server();
        let fetched = server.call("fetch", json!({ "url": url })).await;
        assert_eq!(fetched.output["sent_token"], true, "{fetched:?}");
        assert!(requests.recv().unwrap().contains("Bearer s3cret"));

        let manifest = root.path().join("http-fetch/aleph_plugin.json");
        let text = std::fs::read_to_string(&manifest).unwrap();
        std::fs::write(&manifest, text.replace("\"FETCH_TOKEN\"", "")).unwrap();
        manager.plugin("http-fetch").reload().unwrap();
        let (url, requests) = one_shot_server();
        let fetched = server.call("fetch", json!({ "url": url })).await;
        assert_eq!(fetched.output["sent_token"], false);
        assert!(!requests.recv().unwrap().contains("s3cret"));
    });
}

#[tokio::test(flavor = "multi_thread")]
async fn a_plugin_tool_cannot_take_a_served_name() {
    let root = plugins_dir(&["text-tools"]);
    let server = AlephToolServer::new();
    server.add(EchoClashTool).unwrap();
    let manager = manager(&server, root.path());
    let report = manager.load_all();
    let (_, error) = &report.failed[0];
    let message = error.to_string();
    assert!(message.contains("`echo` is already served"), "{message}");
    assert!(message.contains("tools[2].name"), "{message}");
    assert!(matches!(
        manager.plugin("text-tools").info().unwrap().status,
        PluginStatus::Error(_)
    ));
    // Nothing of the plugin was served.
    assert_eq!(server.tools().names(), ["echo"]);
}

/// A static tool that holds the name `echo`.
#[tool(name = "echo", register = false)]
fn echo_clash() {}

#[tokio::test(flavor = "multi_thread")]
async fn an_in_flight_call_finishes_on_the_version_it_started_on() {
    let (_root, server, manager) = serve(&["text-tools"]);
    let big = "word ".repeat(400_000);
    let slow = {
        let server = server.clone();
        tokio::spawn(async move { server.call("word_count", json!({ "text": big })).await })
    };
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    manager.plugin("text-tools").unload().unwrap();
    let result = slow.await.unwrap();
    assert!(result.success, "{result:?}");
    assert_eq!(result.output["words"], 400_000);
    assert!(
        !server
            .call("word_count", json!({ "text": "x" }))
            .await
            .success
    );
}

#[test]
fn a_manifest_marks_a_tool_as_an_mcp_task() {
    let root = plugins_dir(&["text-tools"]);
    let manifest = root.path().join("text-tools/aleph_plugin.toml");
    let text = std::fs::read_to_string(&manifest).unwrap();
    let marked = text.replacen(
        "name = \"slugify\"\n",
        "name = \"slugify\"\ntask = true\n",
        1,
    );
    assert_ne!(marked, text, "the manifest lists slugify");
    std::fs::write(&manifest, marked).unwrap();
    let server = AlephToolServer::new();
    let report = manager(&server, root.path()).load_all();
    assert!(report.failed.is_empty(), "{:?}", report.failed);
    assert!(server.tools().get("slugify").unwrap().task);
    assert!(!server.tools().get("word_count").unwrap().task);
}
