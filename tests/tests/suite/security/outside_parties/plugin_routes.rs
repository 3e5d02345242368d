//! Plugin HTTP routes: a route never sees the client's credentials for this server (the
//! bearer token that let the request in, cookies, the MCP session), and a handler's bad answer
//! or failure is a 502 that does not echo what the plugin produced.

use aleph_tools::mcp::{McpAuth, McpServer, StaticTokens};
use aleph_tools::plugin::{PluginManager, PluginsConfig};
use aleph_tools::{AlephToolServer, Identity};
use aleph_tools_tests::node_plugin;
use reqwest::StatusCode;
use serde_json::{Value, json};

const MANIFEST: &str = r#"[plugin]
id = "snoop"
version = "1.0.0"
kind = "nodejs"
entry = "index.js"

[[http_routes]]
method = "GET"
path = "/headers"
handler = "headers"

[[http_routes]]
method = "GET"
path = "/bad"
handler = "bad"

[[http_routes]]
method = "GET"
path = "/bad-status"
handler = "badStatus"

[[http_routes]]
method = "GET"
path = "/throws"
handler = "throws"
"#;

/// A plugin that would replay what it gets: it answers with the request's headers, and its
/// bad answers and errors carry what it saw.
const SNOOP: &str = r#"
const { createServer } = require("@aleph/plugin-sdk");
createServer({
  name: "snoop",
  routes: {
    headers: (request) => ({ status: 200, body: request.headers }),
    bad: (request) => ({ status: 200, headers: { "leak me": JSON.stringify(request.headers) }, body: "?" }),
    badStatus: (request) => ({ status: 99, body: "leaked " + JSON.stringify(request.headers) }),
    throws: () => { throw new Error("leaked stack detail"); },
  },
}).start();
"#;

#[tokio::test(flavor = "multi_thread")]
async fn a_route_never_sees_the_clients_credentials_nor_echoes_a_bad_answer() {
    let root = tempfile::tempdir().unwrap();
    node_plugin(root.path(), "snoop", MANIFEST, SNOOP);
    let server = AlephToolServer::new();
    let manager = PluginManager::new(&server, PluginsConfig::with_search_paths([root.path()]));
    let loading = manager.clone();
    let report = tokio::task::spawn_blocking(move || loading.load_all())
        .await
        .unwrap();
    assert!(report.failed.is_empty(), "{:?}", report.failed);
    let http = McpServer::new(&server)
        .with_auth(McpAuth::new(
            StaticTokens::new().with_token("server-t0k3n", Identity::new("alice")),
        ))
        .with_router(manager.router())
        .serve_http("127.0.0.1:0")
        .await
        .unwrap();
    let client = reqwest::Client::new();
    let get = |path: &str| {
        client
            .get(format!("http://{}/plugins/snoop{path}", http.local_addr()))
            .bearer_auth("server-t0k3n")
            .header("cookie", "session=c00kie")
            .header("proxy-authorization", "Basic cHJveHk6c2VjcmV0")
            .header("mcp-session-id", "sess-1d")
            .header("x-request-id", "r-1")
    };

    let response = get("/headers").send().await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let seen: Value = response.json().await.unwrap();
    let seen = seen.as_object().unwrap();
    for credential in [
        "authorization",
        "cookie",
        "proxy-authorization",
        "mcp-session-id",
    ] {
        assert!(!seen.contains_key(credential), "{credential}: {seen:?}");
    }
    let text = Value::Object(seen.clone()).to_string();
    for secret in ["server-t0k3n", "c00kie", "cHJveHk6c2VjcmV0", "sess-1d"] {
        assert!(!text.contains(secret), "{secret} in {text}");
    }
    assert_eq!(seen["x-request-id"], json!("r-1"));

    // A bad answer, a value that is not an answer, a handler that throws: 502 saying what
    // kind of failure, with nothing the plugin produced in it.
    for (path, kind) in [
        ("/bad", "a header name that is not one"),
        ("/bad-status", "without a `status` from 100 to 599"),
        (
            "/throws",
            "failed (it threw, crashed or did not answer in time)",
        ),
    ] {
        let response = get(path).send().await.unwrap();
        assert_eq!(response.status(), StatusCode::BAD_GATEWAY, "{path}");
        let headers = format!("{:?}", response.headers());
        let body = response.text().await.unwrap();
        assert!(body.contains(kind), "{path}: {body}");
        assert!(
            body.starts_with(&format!("plugin `snoop`, route `GET {path}`")),
            "{path}: {body}"
        );
        for leaked in ["leak", "x-request-id", "r-1", "stack detail"] {
            assert!(!body.contains(leaked), "{path}: {leaked} in {body}");
            assert!(!headers.contains(leaked), "{path}: {leaked} in {headers}");
        }
    }
}
