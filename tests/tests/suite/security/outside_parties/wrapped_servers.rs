//! Wrapped MCP servers: a server that never lists, never answers, answers too much or too
//! deep, storms `list_changed` or lists too many tools costs its own connection or call,
//! with the reason, and everything else keeps serving. Each server is a real process: a
//! small MCP server in Node.js written by the test, logging every message it gets.

use std::path::{Path, PathBuf};
use std::time::Duration;

use aleph_tools::mcp::{McpConnection, McpEndpoint, McpError, McpServer};
use aleph_tools::{AlephToolServer, ToolErrorKind};
use aleph_tools_tests::{Echo, eventually};
use serde_json::json;

/// An MCP server over stdio: `node server.js MODE LOG`. `MODE` decides how it misbehaves:
/// `mute` never answers `initialize`, `hang` never answers `tools/list`, `many` lists
/// 10,001 tools, `deep_schema` lists a schema 200 levels deep, `huge_list` lists a 2 MiB
/// description; otherwise its tools behave as named (`hang` never answers, `huge` answers
/// 3 MiB, `deep` answers 200 levels deep, `storm` sends 5,000 `list_changed` then grows a
/// tool `late`). Every message it gets is logged, one method (or `answer`) a line.
const SERVER: &str = r#"
const fs = require("fs");
const readline = require("readline");
let [mode, logPath] = process.argv.slice(2);
const send = (message) => process.stdout.write(JSON.stringify(message) + "\n");
const object = { type: "object" };
const tools = ["ok", "hang", "huge", "deep", "storm"].map((name) => ({ name, inputSchema: object }));
const nested = (depth) => {
  let value = object;
  for (let i = 0; i < depth; i++) value = { type: "object", properties: { a: value } };
  return value;
};
const answer = (id, text, extra = {}) =>
  send({ jsonrpc: "2.0", id, result: { content: [{ type: "text", text }], ...extra } });
readline.createInterface({ input: process.stdin }).on("line", (line) => {
  const message = JSON.parse(line);
  const { id, method } = message;
  fs.appendFileSync(logPath, (method || "answer") + "\n");
  if (method === "initialize") {
    if (mode === "mute") return;
    send({ jsonrpc: "2.0", id, result: {
      protocolVersion: message.params.protocolVersion,
      capabilities: { tools: { listChanged: true } },
      serverInfo: { name: "node-test", version: "1.0.0" },
    } });
  } else if (method === "tools/list") {
    if (mode === "hang") return;
    let listed = tools;
    if (mode === "many") listed = Array.from({ length: 10001 }, (_, i) => ({ name: `t${i}`, inputSchema: object }));
    if (mode === "deep_schema") listed = [...tools, { name: "deep_schema", inputSchema: nested(200) }];
    if (mode === "huge_list") listed = [...tools, { name: "big", description: "x".repeat(2 << 20), inputSchema: object }];
    if (mode === "grown") listed = [...tools, { name: "late", inputSchema: object }];
    send({ jsonrpc: "2.0", id, result: { tools: listed } });
  } else if (method === "tools/call") {
    const name = message.params.name;
    if (name === "hang") return;
    if (name === "huge") return answer(id, "x".repeat(3 << 20));
    if (name === "deep") {
      let value = [];
      for (let i = 0; i < 200; i++) value = [value];
      return answer(id, "deep", { structuredContent: { value } });
    }
    if (name === "storm") {
      for (let i = 0; i < 5000; i++) send({ jsonrpc: "2.0", method: "notifications/tools/list_changed" });
      mode = "grown";
      send({ jsonrpc: "2.0", method: "notifications/tools/list_changed" });
      return answer(id, "stormed");
    }
    answer(id, "fine");
  } else if (id !== undefined && method) {
    send({ jsonrpc: "2.0", id, result: {} });
  }
});
"#;

/// A directory holding the server's script and its logs.
struct Scripts {
    dir: tempfile::TempDir,
}

impl Scripts {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("server.js"), SERVER).unwrap();
        Self { dir }
    }

    fn log(&self, mode: &str) -> PathBuf {
        self.dir.path().join(format!("{mode}.log"))
    }

    /// The server in `mode`, run in its sandbox from the scripts' directory, where it
    /// writes its log.
    fn endpoint(&self, mode: &str) -> McpEndpoint {
        McpEndpoint::command("node")
            .args([
                path(&self.dir.path().join("server.js")),
                mode.to_owned(),
                path(&self.log(mode)),
            ])
            .current_dir(self.dir.path())
    }

    /// How many messages of `method` the server in `mode` got.
    fn count(&self, mode: &str, method: &str) -> usize {
        std::fs::read_to_string(self.log(mode))
            .unwrap_or_default()
            .lines()
            .filter(|line| *line == method)
            .count()
    }
}

fn path(path: &Path) -> String {
    path.display().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_never_lists_is_left_out_and_the_rest_are_served() {
    let scripts = Scripts::new();
    let server = AlephToolServer::new();
    server.add(Echo::named("builtin_echo")).unwrap();

    let hanging = McpConnection::builder(scripts.endpoint("hang"))
        .prefix("hang")
        .connect_timeout(Duration::from_secs(2))
        .connect(&server)
        .await
        .expect_err("its tools/list never answers");
    assert!(matches!(hanging, McpError::ListTools { .. }), "{hanging:?}");
    assert!(
        hanging
            .to_string()
            .contains("did not list its tools within"),
        "{hanging}"
    );
    let mute = McpConnection::builder(scripts.endpoint("mute"))
        .prefix("mute")
        .connect_timeout(Duration::from_secs(2))
        .connect(&server)
        .await
        .expect_err("it never answers initialize");
    assert!(matches!(mute, McpError::Connect { .. }), "{mute:?}");
    assert!(
        mute.to_string()
            .contains("did not finish the MCP handshake within 2s"),
        "{mute}"
    );
    let _good = McpConnection::builder(scripts.endpoint("good"))
        .prefix("good")
        .connect(&server)
        .await
        .unwrap();
    assert!(
        server
            .tools()
            .names()
            .iter()
            .all(|name| !name.starts_with("hang_"))
    );

    // The server that serves them all answers `initialize` and lists the rest, for a client
    // of the MCP SDK.
    let http = McpServer::new(&server)
        .serve_http("127.0.0.1:0")
        .await
        .unwrap();
    let client_side = AlephToolServer::new();
    let client = McpConnection::builder(McpEndpoint::url(http.url()))
        .prefix("served")
        .connect(&client_side)
        .await
        .unwrap();
    let tools = client.tools();
    assert!(
        tools.contains(&"served_builtin_echo".to_owned()),
        "{tools:?}"
    );
    assert!(tools.contains(&"served_good_ok".to_owned()), "{tools:?}");
    assert!(
        tools.iter().all(|name| !name.contains("hang_")),
        "{tools:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_that_never_answers_ends_at_the_limit_and_the_server_is_told() {
    let scripts = Scripts::new();
    let server = AlephToolServer::new();
    let _conn = McpConnection::builder(scripts.endpoint("calls"))
        .prefix("py")
        .call_timeout(Duration::from_secs(1))
        .connect(&server)
        .await
        .unwrap();
    let hung = server.call("py_hang", json!({})).await;
    assert_eq!(hung.error_kind, Some(ToolErrorKind::Timeout), "{hung:?}");
    eventually("the server heard the call was given up", || {
        scripts.count("calls", "notifications/cancelled") == 1
    })
    .await;
    let fine = server.call("py_ok", json!({})).await;
    assert!(fine.success, "{fine:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_over_the_size_or_depth_limit_fail_with_the_reason() {
    let scripts = Scripts::new();
    let server = AlephToolServer::new();
    let _conn = McpConnection::builder(scripts.endpoint("calls"))
        .prefix("py")
        .max_message_bytes(1 << 20)
        .connect(&server)
        .await
        .unwrap();
    let huge = server.call("py_huge", json!({})).await;
    assert!(!huge.success, "{huge:?}");
    let text = huge.model_text();
    assert!(
        text.contains("longer than 1048576 bytes") && text.contains("max_message_bytes"),
        "{text}"
    );
    let deep = server.call("py_deep", json!({})).await;
    assert!(!deep.success, "{deep:?}");
    assert!(
        deep.model_text()
            .contains("nested more than 128 levels deep"),
        "{}",
        deep.model_text()
    );
    // The connection stays up.
    let fine = server.call("py_ok", json!({})).await;
    assert!(fine.success, "{fine:?}");

    // A listing over the limits: the server is not served, and the error says why.
    for (mode, reason) in [
        ("deep_schema", "nested more than 128 levels deep"),
        ("huge_list", "longer than 1048576 bytes"),
        ("many", "more than 10000 tools"),
    ] {
        let error = McpConnection::builder(scripts.endpoint(mode))
            .prefix(mode)
            .max_message_bytes(1 << 20)
            .connect(&server)
            .await
            .expect_err(mode);
        assert!(matches!(error, McpError::ListTools { .. }), "{error:?}");
        assert!(error.to_string().contains(reason), "{mode}: {error}");
    }
    assert!(
        server
            .tools()
            .names()
            .iter()
            .all(|name| name.starts_with("py_")),
        "{:?}",
        server.tools().names()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_storm_of_list_changed_costs_a_bounded_number_of_listings() {
    let scripts = Scripts::new();
    let server = AlephToolServer::new();
    let _conn = McpConnection::builder(scripts.endpoint("storm"))
        .prefix("py")
        .refresh_interval(Duration::from_secs(5))
        .connect(&server)
        .await
        .unwrap();
    assert_eq!(scripts.count("storm", "tools/list"), 1);
    let stormed = server.call("py_storm", json!({})).await;
    assert!(stormed.success, "{stormed:?}");
    // The tool the server grew after the storm is served: the last change was listed.
    tokio::time::timeout(Duration::from_mins(1), async {
        while !server.contains("py_late") {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("the tool grown after the storm is served");
    // 5,001 notices: one listing per interval while they come (they come in well under
    // one), and one after.
    let listings = scripts.count("storm", "tools/list");
    assert!((2..=4).contains(&listings), "{listings} listings");
}
