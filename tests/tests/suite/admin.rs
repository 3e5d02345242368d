//! The management API: the plugin manager's methods as JSON-RPC 2.0 at `POST /admin`, the
//! errors a malformed request gets, and the methods as tools. What an attacker tries (a
//! caller without the scope, downloads that leave the rules) is in `security::management`.

use std::path::Path;

use aleph_tools::mcp::{McpAuth, McpHttpServer, McpServer, StaticTokens};
use aleph_tools::plugin::{PluginAdmin, PluginManager, PluginsConfig};
use aleph_tools::{AlephToolServer, Identity, ToolContext, ToolErrorKind};
use aleph_tools_tests::node_plugin;
use aleph_tools_tests::plugin_files::{archive, static_plugin};
use reqwest::header::HeaderMap;
use serde_json::{Value, json};

pub(crate) const OPS: &str = "ops-secret-7f3a";
pub(crate) const AGENT: &str = "agent-secret-19c2";

pub(crate) fn manager(search: &Path) -> (AlephToolServer, PluginManager) {
    let server = AlephToolServer::new();
    let manager = PluginManager::new(&server, PluginsConfig::with_search_paths([search]));
    (server, manager)
}

/// The names in `dir`, sorted.
pub(crate) fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// Serves `admin` beside `/mcp`, behind tokens for `ops` (scope `admin`) and `agent` (none)
/// when `tokens`; the server and the API's URL.
pub(crate) async fn serve(
    server: &AlephToolServer,
    admin: &PluginAdmin,
    tokens: bool,
) -> (McpHttpServer, String) {
    let mut mcp = McpServer::new(server).with_router(admin.router());
    if tokens {
        let known = StaticTokens::new()
            .with_token(OPS, Identity::new("ops").with_scopes(["admin"]))
            .with_token(AGENT, Identity::new("agent").with_scopes(["tools:call"]));
        mcp = mcp.with_auth(McpAuth::new(known));
    }
    let http = mcp.serve_http("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/admin", http.local_addr());
    (http, url)
}

/// Posts `body` (JSON text) to `url` with `token`: the status, the headers and the body as
/// JSON (`null` when empty).
pub(crate) async fn post(url: &str, token: Option<&str>, body: &str) -> (u16, HeaderMap, Value) {
    let mut request = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .body(body.to_owned());
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let text = response.text().await.unwrap();
    let value = if text.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
    };
    (status, headers, value)
}

/// Calls `method` as `ops`; the JSON-RPC answer.
pub(crate) async fn rpc(url: &str, method: &str, params: Value) -> Value {
    let body = json!({ "jsonrpc": "2.0", "id": 7, "method": method, "params": params });
    let (status, _, answer) = post(url, Some(OPS), &body.to_string()).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["id"], 7, "{answer}");
    answer
}

pub(crate) fn error_of(answer: &Value) -> (i64, String) {
    let error = &answer["error"];
    assert!(error.is_object(), "not an error: {answer}");
    (
        error["code"].as_i64().unwrap(),
        error["message"].as_str().unwrap().to_owned(),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn malformed_requests_get_json_rpc_errors_that_say_what_to_fix() {
    let search = tempfile::tempdir().unwrap();
    let (server, manager) = manager(search.path());
    let (_http, url) = serve(&server, &PluginAdmin::new(&manager), true).await;

    let cases: [(&str, i64, &str); 10] = [
        ("{not json", -32700, "not JSON"),
        ("[]", -32600, "batch is empty"),
        ("42", -32600, "is an object"),
        (r#"{"id":1,"method":"plugins.list"}"#, -32600, "`jsonrpc`"),
        (r#"{"jsonrpc":"2.0","id":1}"#, -32600, "`method`"),
        (
            r#"{"jsonrpc":"2.0","id":{},"method":"plugins.list"}"#,
            -32600,
            "`id`",
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"plugins.explode"}"#,
            -32601,
            "plugins.executeCommand",
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"plugins.reload","params":["x"]}"#,
            -32602,
            "by name",
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"plugins.reload","params":{"name":"x"}}"#,
            -32602,
            "unknown field `name`",
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"plugins.reload","params":{"id":""}}"#,
            -32602,
            "`id` is empty",
        ),
    ];
    for (body, code, says) in cases {
        let (status, _, answer) = post(&url, Some(OPS), body).await;
        assert_eq!(status, 200, "{body}: {answer}");
        let (found, message) = error_of(&answer);
        assert_eq!(found, code, "{body}: {answer}");
        assert!(message.contains(says), "{body}: {message}");
    }
    // Wrong types, and what the method takes.
    let answer = rpc(
        &url,
        "services.start",
        json!({ "plugin": 3, "service": "x" }),
    )
    .await;
    let (code, message) = error_of(&answer);
    assert_eq!(code, -32602);
    assert!(
        message.contains(r#"takes {"plugin": string, "service": string}"#),
        "{message}"
    );
    // Too many requests in one batch.
    let batch: Vec<Value> = (0..33)
        .map(|id| json!({ "jsonrpc": "2.0", "id": id, "method": "plugins.list" }))
        .collect();
    let (status, _, answer) = post(&url, Some(OPS), &Value::Array(batch).to_string()).await;
    assert_eq!(status, 200);
    let (code, message) = error_of(&answer);
    assert_eq!(code, -32600);
    assert!(message.contains("at most 32"), "{message}");
    // A plugin that is not there.
    let answer = rpc(&url, "plugins.reload", json!({ "id": "ghost" })).await;
    assert_eq!(error_of(&answer).0, -32001);
    // A body over the limit.
    let big = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"plugins.list","params":{{"pad":"{}"}}}}"#,
        "x".repeat(2 << 20)
    );
    let (status, _, answer) = post(&url, Some(OPS), &big).await;
    assert_eq!(status, 413);
    assert!(error_of(&answer).1.contains("at most 1024 KiB"), "{answer}");
}

#[tokio::test(flavor = "multi_thread")]
async fn plugins_install_run_stop_and_go_through_the_api() {
    let sources = tempfile::tempdir().unwrap();
    let search = tempfile::tempdir().unwrap();
    let installed = search.path().join("plugins");
    let (server, manager) = manager(&installed);
    let (_http, url) = serve(&server, &PluginAdmin::new(&manager), true).await;
    let dir = static_plugin(sources.path(), "notes", "");

    let answer = rpc(&url, "plugins.install", json!({ "source": dir })).await;
    let plugin = &answer["result"];
    assert_eq!(plugin["id"], "notes", "{answer}");
    assert_eq!(plugin["version"], "1.2.3");
    assert_eq!(plugin["kind"], "static");
    assert_eq!(plugin["status"], "running");
    assert_eq!(entries(&installed), ["notes"]);

    // A notification runs and is not answered; a batch is answered in order, without the
    // notifications it holds.
    let disable = r#"{"jsonrpc":"2.0","method":"plugins.disable","params":{"id":"notes"}}"#;
    let (status, _, body) = post(&url, Some(OPS), disable).await;
    assert_eq!((status, body), (204, Value::Null));
    let batch = json!([
        { "jsonrpc": "2.0", "id": "a", "method": "plugins.list" },
        { "jsonrpc": "2.0", "method": "plugins.enable", "params": { "id": "notes" } },
        { "jsonrpc": "2.0", "id": "b", "method": "plugins.reload", "params": { "id": "nope" } },
        { "jsonrpc": "2.0", "id": "c", "method": "plugins.list" },
    ]);
    let (status, _, answers) = post(&url, Some(OPS), &batch.to_string()).await;
    assert_eq!(status, 200);
    let answers = answers.as_array().unwrap();
    assert_eq!(answers.len(), 3, "{answers:?}");
    assert_eq!(answers[0]["id"], "a");
    assert_eq!(answers[0]["result"]["plugins"][0]["status"], "stopped");
    assert_eq!(
        (answers[1]["id"].clone(), error_of(&answers[1]).0),
        (json!("b"), -32001)
    );
    assert_eq!(answers[2]["result"]["plugins"][0]["status"], "running");

    let answer = rpc(&url, "plugins.reload", json!({ "id": "notes" })).await;
    assert_eq!(answer["result"]["status"], "running");
    // Installing it again is refused, and says how to go on.
    let answer = rpc(&url, "plugins.install", json!({ "source": dir })).await;
    let (code, message) = error_of(&answer);
    assert_eq!(code, -32000);
    assert!(message.contains("uninstall it first"), "{message}");

    let answer = rpc(&url, "plugins.uninstall", json!({ "id": "notes" })).await;
    assert_eq!(answer["result"]["id"], "notes");
    assert!(entries(&installed).is_empty());
    assert_eq!(
        rpc(&url, "plugins.list", Value::Null).await["result"],
        json!({ "plugins": [] })
    );

    // A digest checks an archive on the server's machine too.
    let packed = archive(&dir, "gztar", true);
    let wrong = "0".repeat(64);
    let answer = rpc(
        &url,
        "plugins.install",
        json!({ "source": packed, "sha256": wrong }),
    )
    .await;
    let (_, message) = error_of(&answer);
    assert!(message.contains("nothing was installed"), "{message}");
    assert!(entries(&installed).is_empty());
    let answer = rpc(
        &url,
        "plugins.install",
        json!({ "source": dir, "sha256": wrong }),
    )
    .await;
    assert!(error_of(&answer).1.contains("is a directory"));
    let answer = rpc(
        &url,
        "plugins.install",
        json!({ "source": dir, "sha256": "beef" }),
    )
    .await;
    assert!(error_of(&answer).1.contains("64 hex digits"));
    let digest = sha256_of(&packed);
    let answer = rpc(
        &url,
        "plugins.install",
        json!({ "source": packed, "sha256": digest }),
    )
    .await;
    assert_eq!(answer["result"]["status"], "running", "{answer}");
}

/// The SHA-256 of the file at `path`, in hex, by `sha256sum`.
pub(crate) fn sha256_of(path: &Path) -> String {
    let output = std::process::Command::new("sha256sum")
        .arg(path)
        .output()
        .unwrap();
    assert!(output.status.success());
    String::from_utf8(output.stdout).unwrap()[..64].to_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn commands_and_services_run_through_the_api() {
    let root = tempfile::tempdir().unwrap();
    let manifest = r#"
[plugin]
id = "worker"
version = "1.0.0"
kind = "nodejs"
entry = "index.js"

[[commands]]
name = "echo"
handler = "echo"

[[services]]
name = "ticker"
description = "Ticks while it runs."
start_handler = "start"
stop_handler = "stop"
"#;
    let source = r#"
require("@aleph/plugin-sdk").createServer({
  name: "worker",
  commands: { echo: (input) => ({ got: input }) },
  services: { ticker: { start: () => {}, stop: () => {} } },
}).start();
"#;
    node_plugin(root.path(), "worker", manifest, source);
    let (server, manager) = manager(root.path());
    let report = tokio::task::spawn_blocking({
        let manager = manager.clone();
        move || manager.load_all()
    })
    .await
    .unwrap();
    assert_eq!(report.loaded, ["worker"], "{:?}", report.failed);
    let (_http, url) = serve(&server, &PluginAdmin::new(&manager), true).await;

    let answer = rpc(
        &url,
        "plugins.executeCommand",
        json!({ "id": "worker", "command": "echo", "input": { "n": 1 } }),
    )
    .await;
    assert_eq!(answer["result"], json!({ "got": { "n": 1 } }), "{answer}");
    let answer = rpc(
        &url,
        "plugins.executeCommand",
        json!({ "id": "worker", "command": "shout" }),
    )
    .await;
    assert!(error_of(&answer).1.contains("it has: echo"), "{answer}");

    let service = json!({ "plugin": "worker", "service": "ticker" });
    let answer = rpc(&url, "services.status", service.clone()).await;
    assert_eq!(answer["result"]["state"], "stopped", "{answer}");
    assert_eq!(answer["result"]["autoStart"], false);
    let answer = rpc(&url, "services.start", service.clone()).await;
    assert_eq!(answer["result"]["state"], "running", "{answer}");
    let answer = rpc(&url, "services.list", json!({})).await;
    assert_eq!(answer["result"]["services"][0]["service"], "ticker");
    assert_eq!(answer["result"]["services"][0]["state"], "running");
    let answer = rpc(&url, "services.stop", service).await;
    assert_eq!(answer["result"]["state"], "stopped");
    let answer = rpc(
        &url,
        "services.status",
        json!({ "plugin": "worker", "service": "ghost" }),
    )
    .await;
    assert!(error_of(&answer).1.contains("it has: ticker"), "{answer}");
    let answer = rpc(
        &url,
        "services.status",
        json!({ "plugin": "ghost", "service": "ticker" }),
    )
    .await;
    assert_eq!(error_of(&answer).0, -32001);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_methods_as_tools_check_the_callers_scope() {
    let sources = tempfile::tempdir().unwrap();
    let search = tempfile::tempdir().unwrap();
    let (server, manager) = manager(search.path());
    let admin = PluginAdmin::new(&manager);
    for tool in admin.tools() {
        server.add(tool).unwrap();
    }
    let mut names = server.tools().names();
    names.sort();
    assert_eq!(
        names,
        [
            "plugins_disable",
            "plugins_enable",
            "plugins_execute_command",
            "plugins_install",
            "plugins_list",
            "plugins_reload",
            "plugins_uninstall",
            "services_list",
            "services_start",
            "services_status",
            "services_stop",
        ]
    );
    let uninstall = server.tools().get("plugins_uninstall").unwrap();
    assert_eq!(uninstall.annotations.destructive, Some(true));
    assert_eq!(uninstall.parameters["required"], json!(["id"]));

    // No identity (a stdio client): runs.
    let dir = static_plugin(sources.path(), "notes", "");
    let answer = server
        .call("plugins_install", json!({ "source": dir }))
        .await;
    assert!(answer.success, "{answer:?}");
    assert_eq!(answer.output["status"], "running");
    // An identity without the scope: refused; with it: runs.
    let agent = ToolContext::new().with_identity(Identity::new("agent"));
    let answer = server.call("plugins_list", json!({})).context(agent).await;
    assert_eq!(
        answer.error_kind,
        Some(ToolErrorKind::PermissionDenied),
        "{answer:?}"
    );
    let ops = ToolContext::new().with_identity(Identity::new("ops").with_scopes(["admin"]));
    let answer = server.call("plugins_list", json!({})).context(ops).await;
    assert_eq!(answer.output["plugins"][0]["id"], "notes", "{answer:?}");
    // A model steered into installing from a URL finds no host open to it until the server
    // names hosts.
    let answer = server
        .call(
            "plugins_install",
            json!({ "source": "https://example.com/p.tar.gz" }),
        )
        .await;
    assert_eq!(
        answer.error_kind,
        Some(ToolErrorKind::PermissionDenied),
        "{answer:?}"
    );
    assert!(
        answer
            .error
            .as_deref()
            .is_some_and(|e| e.contains("with_download_hosts")),
        "{answer:?}"
    );
    // Params the schema lets through but the method refuses are argument errors too.
    let answer = server
        .call(
            "plugins_install",
            json!({ "source": dir, "sha256": "beef" }),
        )
        .await;
    assert_eq!(
        answer.error_kind,
        Some(ToolErrorKind::InvalidArgs),
        "{answer:?}"
    );
    // Arguments are checked against the schema before the method runs.
    let answer = server.call("plugins_reload", json!({ "id": 5 })).await;
    assert_eq!(
        answer.error_kind,
        Some(ToolErrorKind::InvalidArgs),
        "{answer:?}"
    );
}
