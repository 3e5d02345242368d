//! Plugins' HTTP routes, served for real on loopback beside `/mcp` and called with an HTTP
//! client: JSON bodies, parameters, queries, headers and statuses both ways, for Node.js and
//! WebAssembly plugins, and every way a request or a handler can go wrong.

use std::path::Path;

use aleph_tools::AlephToolServer;
use aleph_tools::mcp::{McpHttpServer, McpServer};
use aleph_tools::plugin::{ByteSize, PluginManager, PluginsConfig};
use aleph_tools_tests::{copy_dir, example_plugins, node_plugin};
use reqwest::StatusCode;
use serde_json::{Value, json};

struct Site {
    manager: PluginManager,
    http: McpHttpServer,
    client: reqwest::Client,
    _root: tempfile::TempDir,
}

impl Site {
    /// The example plugins `names` (copied, so their data starts empty) and `extra`
    /// plugins written by the test, served at `/plugins/…` beside `/mcp`.
    async fn start(
        names: &[&str],
        extra: impl FnOnce(&Path),
        configure: impl FnOnce(&mut PluginsConfig),
    ) -> Self {
        let root = tempfile::tempdir().unwrap();
        let examples = example_plugins();
        for name in names {
            copy_dir(&examples.join(name), &root.path().join(name));
        }
        std::fs::create_dir_all(root.path().join("notes-node/data")).unwrap();
        let _ = std::fs::remove_file(root.path().join("notes-node/data/notes.json"));
        extra(root.path());
        let mut config = PluginsConfig::with_search_paths([root.path()]);
        configure(&mut config);
        let server = AlephToolServer::new();
        let manager = PluginManager::new(&server, config);
        let loading = manager.clone();
        let report = tokio::task::spawn_blocking(move || loading.load_all())
            .await
            .unwrap();
        assert!(report.failed.is_empty(), "{:?}", report.failed);
        let http = McpServer::new(&server)
            .with_router(manager.router())
            .serve_http("127.0.0.1:0")
            .await
            .unwrap();
        Self {
            manager,
            http,
            client: reqwest::Client::new(),
            _root: root,
        }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.http.local_addr())
    }

    async fn send(
        &self,
        request: reqwest::RequestBuilder,
    ) -> (StatusCode, reqwest::header::HeaderMap, String) {
        let response = request.send().await.unwrap();
        let status = response.status();
        let headers = response.headers().clone();
        (status, headers, response.text().await.unwrap())
    }

    async fn get(&self, path: &str) -> (StatusCode, reqwest::header::HeaderMap, String) {
        self.send(self.client.get(self.url(path))).await
    }
}

fn json_of(body: &str) -> Value {
    serde_json::from_str(body).unwrap_or_else(|e| panic!("not JSON ({e}): {body}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn a_node_plugin_answers_json_bodies_parameters_and_statuses() {
    let site = Site::start(&["notes-node"], |_| {}, |_| {}).await;
    let (status, headers, body) = site
        .send(
            site.client
                .post(site.url("/plugins/notes-node/notes"))
                .json(&json!({ "text": "buy milk" })),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(headers["location"], "/plugins/notes-node/notes/0");
    assert_eq!(headers["content-type"], "application/json");
    assert_eq!(json_of(&body), json!({ "index": 0 }));

    let (status, _, body) = site.get("/plugins/notes-node/notes").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(json_of(&body)[0]["text"], "buy milk");
    let (status, _, body) = site.get("/plugins/notes-node/notes/0").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(json_of(&body)["text"], "buy milk");
    // Parameters are percent-decoded once: `%30` is `0`, `%2530` is the text `%30`.
    let (status, _, body) = site.get("/plugins/notes-node/notes/%30").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, _, body) = site.get("/plugins/notes-node/notes/%2530").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(json_of(&body)["error"], "no note %30");
    let (status, _, body) = site.get("/plugins/notes-node/notes/7").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(json_of(&body)["error"], "no note 7");

    // The plugin's own validation answers 400; the body was not JSON to it.
    let (status, _, body) = site
        .send(
            site.client
                .post(site.url("/plugins/notes-node/notes"))
                .header("content-type", "text/plain")
                .body("buy milk"),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");

    // The same notes through the tool: one plugin, two doors.
    let listed = site
        .manager
        .plugin("notes-node")
        .execute_command("export", &json!({}))
        .await
        .unwrap();
    assert_eq!(listed, json!("- buy milk"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_webassembly_plugin_answers_text_and_json_with_its_headers() {
    let site = Site::start(&["text-tools"], |_| {}, |_| {}).await;
    let (status, headers, body) = site
        .send(
            site.client
                .post(site.url("/plugins/text-tools/count"))
                .body("one two\nthree"),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(headers["cache-control"], "no-store");
    assert_eq!(
        json_of(&body),
        json!({ "words": 3, "lines": 2, "characters": 13 })
    );
    let (status, headers, body) = site
        .send(
            site.client
                .post(site.url("/plugins/text-tools/count?only=words&x=%20y"))
                .body("a b c d"),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers["content-type"], "text/plain; charset=utf-8");
    assert_eq!(body, "4");
}

#[tokio::test(flavor = "multi_thread")]
async fn requests_that_match_nothing_or_are_too_large_are_refused_with_why() {
    let site = Site::start(
        &["notes-node", "text-tools"],
        |_| {},
        |config| {
            config.routes.max_body = ByteSize(1024);
        },
    )
    .await;
    let (status, _, body) = site.get("/plugins/ghost/notes").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(body, "no plugin `ghost` is running");
    let (status, _, body) = site.get("/plugins/notes-node/nowhere").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(body, "plugin `notes-node` has no route for `/nowhere`");
    let (status, headers, body) = site
        .send(site.client.delete(site.url("/plugins/notes-node/notes")))
        .await;
    assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED, "{body}");
    assert_eq!(headers["allow"], "GET, POST");
    let (status, _, body) = site
        .send(
            site.client
                .post(site.url("/plugins/text-tools/count"))
                .body("x".repeat(2000)),
        )
        .await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    assert!(body.contains("larger than the 1KB"), "{body}");

    // Beside /mcp, the routes get the same Host check: a DNS-rebound page is refused.
    let (status, _, _) = site
        .send(
            site.client
                .get(site.url("/plugins/notes-node/notes"))
                .header("host", "evil.example"),
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);

    // Routes follow the plugin: disabled, they are gone; enabled, back.
    site.manager.plugin("notes-node").disable().unwrap();
    assert_eq!(
        site.get("/plugins/notes-node/notes").await.0,
        StatusCode::NOT_FOUND
    );
    let manager = site.manager.clone();
    tokio::task::spawn_blocking(move || manager.plugin("notes-node").enable().unwrap())
        .await
        .unwrap();
    assert_eq!(
        site.get("/plugins/notes-node/notes").await.0,
        StatusCode::OK
    );
}

const FAULTY: &str = r#"
const { createServer } = require("@aleph/plugin-sdk");
createServer({
  name: "faulty",
  routes: {
    boom: () => { throw new Error("the database is down"); },
    badHeader: () => ({ status: 200, headers: { "bad header": "x" }, body: "?" }),
    slow: () => new Promise(() => {}),
  },
}).start();
"#;

#[tokio::test(flavor = "multi_thread")]
async fn a_handler_that_fails_costs_only_its_request() {
    let manifest = "[plugin]\nid = \"faulty\"\nversion = \"1.0.0\"\nkind = \"nodejs\"\nentry = \"index.js\"\n\n[[http_routes]]\nmethod = \"GET\"\npath = \"/boom\"\nhandler = \"boom\"\n\n[[http_routes]]\nmethod = \"GET\"\npath = \"/bad-header\"\nhandler = \"badHeader\"\n\n[[http_routes]]\nmethod = \"GET\"\npath = \"/slow\"\nhandler = \"slow\"\n";
    let site = Site::start(
        &["text-tools"],
        |root| {
            node_plugin(root, "faulty", manifest, FAULTY);
        },
        |config| config.runtimes.nodejs.timeout_ms = 500,
    )
    .await;
    // The 502 says what kind of failure; the handler's own words go to the log.
    let (status, _, body) = site.get("/plugins/faulty/boom").await;
    assert_eq!(status, StatusCode::BAD_GATEWAY);
    assert_eq!(
        body,
        "plugin `faulty`, route `GET /boom` failed (it threw, crashed or did not answer in time); the server's log says why"
    );
    let (status, _, body) = site.get("/plugins/faulty/bad-header").await;
    assert_eq!(status, StatusCode::BAD_GATEWAY);
    assert!(
        body.contains("answered a header name that is not one") && !body.contains("bad header"),
        "{body}"
    );
    // The runtime's limit ends a handler that never answers.
    let (status, _, body) = site.get("/plugins/faulty/slow").await;
    assert_eq!(status, StatusCode::BAD_GATEWAY);
    assert!(
        body.starts_with("plugin `faulty`, route `GET /slow` failed"),
        "{body}"
    );
    // And the neighbours keep answering.
    let (status, _, _) = site
        .send(
            site.client
                .post(site.url("/plugins/text-tools/count"))
                .body("a"),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
}

#[test]
fn a_route_without_its_handler_does_not_load() {
    let root = tempfile::tempdir().unwrap();
    let manifest = "[plugin]\nid = \"lacking\"\nversion = \"1.0.0\"\nkind = \"nodejs\"\nentry = \"index.js\"\n\n[[http_routes]]\nmethod = \"GET\"\npath = \"/x\"\nhandler = \"gone\"\n";
    let dir = node_plugin(
        root.path(),
        "lacking",
        manifest,
        r#"require("@aleph/plugin-sdk").createServer({ name: "lacking", routes: {} }).start();"#,
    );
    let wasm = root.path().join("text-tools");
    copy_dir(&example_plugins().join("text-tools"), &wasm);
    let toml = std::fs::read_to_string(wasm.join("aleph_plugin.toml")).unwrap();
    std::fs::write(
        wasm.join("aleph_plugin.toml"),
        toml.replace("handler = \"count_route\"", "handler = \"no_such_export\""),
    )
    .unwrap();
    let manager = PluginManager::new(
        &AlephToolServer::new(),
        PluginsConfig::with_search_paths([root.path()]),
    );
    let node = manager.load(&dir).unwrap_err().to_string();
    assert!(
        node.contains("route `GET /x` (`gone` in `routes`)"),
        "{node}"
    );
    let wasm = manager.load(&wasm).unwrap_err().to_string();
    assert!(
        wasm.contains("`http_routes[0].handler` names `no_such_export`"),
        "{wasm}"
    );
}
