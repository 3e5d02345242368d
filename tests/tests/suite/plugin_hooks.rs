//! A plugin's `[[hooks]]` run as the server's hooks, with real plugins: interceptors that
//! block and change calls, resolvers in priority order, observers told of outcomes (one that
//! throws costs nothing), and hooks withdrawn with their plugin.

use std::path::Path;
use std::time::Duration;

use aleph_tools::plugin::{PluginManager, PluginsConfig};
use aleph_tools::{
    AlephToolServer, RuntimeTool, ToolContext, ToolDefinition, ToolError, ToolErrorKind, ToolOutput,
};
use aleph_tools_tests::{eventually, node_plugin};
use serde_json::{Value, json};

const MANIFEST: &str = r#"
[plugin]
id = "guard"
version = "1.0.0"
kind = "nodejs"
entry = "index.js"

[permissions]
filesystem = ["write:./out"]

[[hooks]]
event = "before_tool_call"
kind = "interceptor"
priority = "system"
handler = "block"

[[hooks]]
event = "before_tool_call"
kind = "interceptor"
priority = "low"
handler = "stampLow"

[[hooks]]
event = "before_tool_call"
kind = "interceptor"
priority = "high"
handler = "stampHigh"

[[hooks]]
event = "before_tool_call"
kind = "resolver"
priority = "normal"
handler = "answerNormal"

[[hooks]]
event = "before_tool_call"
kind = "resolver"
priority = "high"
handler = "answerHigh"

[[hooks]]
event = "after_tool_call"
kind = "observer"
handler = "record"

[[hooks]]
event = "on_error"
kind = "observer"
handler = "recordError"

[[hooks]]
event = "after_tool_call"
kind = "observer"
handler = "throws"
"#;

const SOURCE: &str = r#"
const fs = require("node:fs");
const path = require("node:path");
const out = (name, value) => fs.appendFileSync(path.join(__dirname, "out", name), JSON.stringify(value) + "\n");
const stamp = (who) => (ctx) => {
  if (ctx.tool !== "echo_args") return null;
  const seen = ctx.arguments.seen ?? [];
  return { arguments: { ...ctx.arguments, seen: [...seen, who] } };
};
require("@aleph/plugin-sdk").createServer({
  name: "guard",
  hooks: {
    block: (ctx) => (ctx.tool.startsWith("dangerous_") ? { block: "dangerous tools are off" } : null),
    stampLow: stamp("low"),
    stampHigh: stamp("high"),
    answerNormal: (ctx) => (ctx.tool === "cached" ? "from normal" : null),
    answerHigh: (ctx) => (ctx.tool === "cached" && ctx.arguments.key === "hot" ? "from high" : null),
    record: (ctx) => out("after.jsonl", ctx),
    recordError: (ctx) => out("errors.jsonl", ctx),
    throws: () => { throw new Error("observer trouble"); },
  },
}).start();
"#;

/// `echo_args` answers its arguments; `dangerous_delete` and `cached` answer what they are;
/// `fails` fails.
fn server() -> AlephToolServer {
    let server = AlephToolServer::new();
    let open = json!({ "type": "object", "additionalProperties": true });
    let tool = |name: &str, answer: fn(Value) -> Result<ToolOutput, ToolError>| {
        let definition = ToolDefinition::new(name, "A test tool.", open.clone());
        RuntimeTool::new(
            definition,
            move |args: Value, _ctx: ToolContext| async move { answer(args) },
        )
    };
    server
        .add(tool("echo_args", |args| Ok(ToolOutput::json(args))))
        .unwrap();
    server
        .add(tool("dangerous_delete", |_| {
            Ok(ToolOutput::json(json!("deleted")))
        }))
        .unwrap();
    server
        .add(tool("cached", |_| {
            Ok(ToolOutput::json(json!("from the tool")))
        }))
        .unwrap();
    server
        .add(tool("fails", |_| {
            Err(ToolError::Execution("it broke".into()))
        }))
        .unwrap();
    server
}

fn lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_node_plugins_hooks_block_change_answer_and_observe_calls() {
    let root = tempfile::tempdir().unwrap();
    let dir = node_plugin(root.path(), "guard", MANIFEST, SOURCE);
    std::fs::create_dir_all(dir.join("out")).unwrap();
    let server = server();
    let manager = PluginManager::new(&server, PluginsConfig::with_search_paths([root.path()]));
    let report = manager.load_all();
    assert!(report.failed.is_empty(), "{:?}", report.failed);

    // The interceptor blocks by name, as the seed's example does.
    let blocked = server.call("dangerous_delete", json!({})).await;
    assert_eq!(blocked.error_kind, Some(ToolErrorKind::PermissionDenied));
    let message = blocked.error.unwrap();
    assert!(
        message.contains("plugin `guard` blocked it: dangerous tools are off"),
        "{message}"
    );

    // Interceptors change the arguments in priority order: system, high, normal, low.
    let echoed = server.call("echo_args", json!({ "x": 1 })).await;
    assert_eq!(
        echoed.output,
        json!({ "x": 1, "seen": ["high", "low"] }),
        "{:?}",
        echoed.error
    );

    // Resolvers: the first answer wins, by priority; none answering lets the tool run.
    assert_eq!(
        server.call("cached", json!({ "key": "hot" })).await.output,
        json!("from high")
    );
    assert_eq!(
        server.call("cached", json!({ "key": "cold" })).await.output,
        json!("from normal")
    );

    // Observers hear outcomes (the one that throws costs nothing); `on_error` only failures.
    let failed = server.call("fails", json!({ "why": "test" })).await;
    assert_eq!(failed.error.as_deref(), Some("it broke"));
    let after = dir.join("out/after.jsonl");
    eventually("the observer heard every call", || lines(&after).len() == 5).await;
    let recorded = lines(&after);
    let mut tools: Vec<&str> = recorded
        .iter()
        .map(|c| c["tool"].as_str().unwrap())
        .collect();
    tools.sort_unstable();
    assert_eq!(
        tools,
        ["cached", "cached", "dangerous_delete", "echo_args", "fails"]
    );
    let echo = recorded.iter().find(|c| c["tool"] == "echo_args").unwrap();
    assert_eq!(echo["event"], "after_tool_call");
    assert_eq!(echo["success"], true);
    assert_eq!(echo["result"], json!({ "x": 1, "seen": ["high", "low"] }));
    assert_eq!(echo["caller"], "human");
    assert!(echo["duration_ms"].is_u64() && echo["call_id"].is_u64());
    let errors = dir.join("out/errors.jsonl");
    eventually("on_error heard the failures", || lines(&errors).len() == 2).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(lines(&errors).len(), 2, "on_error hears failures only");
    let failure = lines(&errors)
        .into_iter()
        .find(|c| c["tool"] == "fails")
        .unwrap();
    assert_eq!(failure["event"], "on_error");
    assert_eq!(failure["error"], "it broke");
    assert_eq!(failure["arguments"], json!({ "why": "test" }));

    // Unloading the plugin takes its hooks away.
    manager.plugin("guard").unload().unwrap();
    assert_eq!(
        server.call("dangerous_delete", json!({})).await.output,
        json!("deleted")
    );
    assert_eq!(
        server.call("echo_args", json!({ "x": 1 })).await.output,
        json!({ "x": 1 })
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failing_or_wrong_interceptor_refuses_only_its_call_and_bad_combinations_do_not_load() {
    let root = tempfile::tempdir().unwrap();
    let manifest = |id: &str, hooks: &str| {
        format!(
            "[plugin]\nid = \"{id}\"\nversion = \"1.0.0\"\nkind = \"nodejs\"\nentry = \"index.js\"\n\n{hooks}"
        )
    };
    let interceptor =
        "[[hooks]]\nevent = \"before_tool_call\"\nkind = \"interceptor\"\nhandler = \"check\"\n";
    node_plugin(
        root.path(),
        "flaky",
        &manifest("flaky", interceptor),
        r#"require("@aleph/plugin-sdk").createServer({ name: "flaky", hooks: {
             check: (ctx) => {
               if (ctx.arguments.mode === "throw") throw new Error("the policy service is down");
               if (ctx.arguments.mode === "odd") return { allow: true };
               if (ctx.arguments.mode === "hang") return new Promise(() => {});
               return null;
             },
           } }).start();"#,
    );
    node_plugin(
        root.path(),
        "late",
        &manifest(
            "late",
            "[[hooks]]\nevent = \"after_tool_call\"\nkind = \"interceptor\"\nhandler = \"x\"\n",
        ),
        r#"require("@aleph/plugin-sdk").createServer({ name: "late", hooks: { x: () => null } }).start();"#,
    );
    node_plugin(
        root.path(),
        "messages",
        &manifest(
            "messages",
            "[[hooks]]\nevent = \"on_response\"\nkind = \"resolver\"\nhandler = \"x\"\n",
        ),
        r#"require("@aleph/plugin-sdk").createServer({ name: "messages", hooks: { x: () => null } }).start();"#,
    );
    node_plugin(
        root.path(),
        "missing",
        &manifest("missing", interceptor),
        r#"require("@aleph/plugin-sdk").createServer({ name: "missing", hooks: {} }).start();"#,
    );
    let server = server();
    let mut config = PluginsConfig::with_search_paths([root.path()]);
    config.runtimes.nodejs.timeout_ms = 300;
    let manager = PluginManager::new(&server, config);
    let report = manager.load_all();
    assert_eq!(report.loaded, ["flaky"]);
    let errors: Vec<String> = report.failed.iter().map(|(_, e)| e.to_string()).collect();
    assert!(
        errors[0]
            .contains("`hooks[0]`: a `interceptor` hook cannot take part in `after_tool_call`"),
        "{}",
        errors[0]
    );
    assert!(
        errors[1].contains("`hooks[0]`: a `resolver` cannot take part in `on_response`"),
        "{}",
        errors[1]
    );
    assert!(
        errors[2].contains("no handler for hook `before_tool_call` (`check` in `hooks`)"),
        "{}",
        errors[2]
    );
    assert!(server.tools().get("echo_args").is_some());

    // A thrown error blocks the call with its message.
    let thrown = server.call("echo_args", json!({ "mode": "throw" })).await;
    let message = thrown.error.unwrap();
    assert!(
        message.contains("plugin `flaky` blocked it: the policy service is down"),
        "{message}"
    );
    assert_eq!(thrown.error_kind, Some(ToolErrorKind::PermissionDenied));
    let odd = server.call("echo_args", json!({ "mode": "odd" })).await;
    assert!(odd.error.unwrap().contains("an object with `allow`"));
    // One that breaks refuses the call too, saying it failed.
    let hung = server.call("echo_args", json!({ "mode": "hang" })).await;
    let message = hung.error.unwrap();
    assert!(
        message.contains("the `check` hook of plugin `flaky` failed, so the call was not run"),
        "{message}"
    );
    assert!(message.contains("within 300ms"), "{message}");
    let fine = server.call("echo_args", json!({ "mode": "fine" })).await;
    assert_eq!(fine.output, json!({ "mode": "fine" }));
}

/// An interceptor that changes the context it is given and returns it, and throws to
/// block, written to either set of names.
#[tokio::test(flavor = "multi_thread")]
async fn an_interceptor_returns_its_context_changed_or_throws_to_block() {
    let root = tempfile::tempdir().unwrap();
    node_plugin(
        root.path(),
        "stamp",
        "[plugin]\nid = \"stamp\"\nversion = \"1.0.0\"\nkind = \"nodejs\"\nentry = \"index.js\"\n\n[[hooks]]\nevent = \"before_tool_call\"\nkind = \"interceptor\"\nhandler = \"onBeforeTool\"\n",
        r#"require("@aleph/plugin-sdk").createServer({ name: "stamp", hooks: {
             onBeforeTool: async (context) => {
               if (context.tool === "dangerous_delete") {
                 throw new Error("Tool blocked by security policy");
               }
               if (context.arguments.keep) return context;
               if (context.arguments.other) return { ...context, tool: "dangerous_delete" };
               if (context.arguments.quiet) return undefined;
               context.arguments.timestamp = 1700000000;
               return context;
             },
           } }).start();"#,
    );
    // A guard written to the short names (`toolName`, `args`).
    node_plugin(
        root.path(),
        "seed",
        "[plugin]\nid = \"seed\"\nversion = \"1.0.0\"\nkind = \"nodejs\"\nentry = \"index.js\"\n\n[[hooks]]\nevent = \"before_tool_call\"\nkind = \"interceptor\"\nhandler = \"onBeforeTool\"\n",
        r#"require("@aleph/plugin-sdk").createServer({ name: "seed", hooks: {
             onBeforeTool: async (context) => {
               if (context.toolName === 'dangerous_tool') {
                 throw new Error('Tool blocked by security policy');
               }
               context.args.seen = 1700000001;
               return context;
             },
           } }).start();"#,
    );
    let server = server();
    let manager = PluginManager::new(&server, PluginsConfig::with_search_paths([root.path()]));
    let mut loaded = manager.load_all().loaded;
    loaded.sort();
    assert_eq!(loaded, ["seed", "stamp"]);
    server
        .add(RuntimeTool::new(
            ToolDefinition::new(
                "dangerous_tool",
                "A test tool.",
                json!({ "type": "object", "additionalProperties": true }),
            ),
            |_: Value, _: ToolContext| async { Ok::<_, ToolError>(ToolOutput::json(json!("ran"))) },
        ))
        .unwrap();

    // Both interceptors change the arguments, each under its own name.
    let stamped = server.call("echo_args", json!({ "x": 1 })).await;
    assert_eq!(
        stamped.output,
        json!({ "x": 1, "timestamp": 1_700_000_000, "seen": 1_700_000_001 })
    );
    let kept = server.call("echo_args", json!({ "keep": true })).await;
    assert_eq!(kept.output, json!({ "keep": true, "seen": 1_700_000_001 }));
    let quiet = server.call("echo_args", json!({ "quiet": true })).await;
    assert_eq!(
        quiet.output,
        json!({ "quiet": true, "seen": 1_700_000_001 })
    );
    let seed = server.call("dangerous_tool", json!({})).await;
    assert!(
        seed.error
            .as_deref()
            .unwrap_or_default()
            .contains("plugin `seed` blocked it: Tool blocked by security policy"),
        "{seed:?}"
    );

    let blocked = server.call("dangerous_delete", json!({})).await;
    assert_eq!(blocked.error_kind, Some(ToolErrorKind::PermissionDenied));
    assert!(
        blocked
            .error
            .as_deref()
            .unwrap()
            .contains("plugin `stamp` blocked it: Tool blocked by security policy"),
        "{:?}",
        blocked.error
    );

    // A context for another tool is refused: an interceptor does not choose the tool.
    let swapped = server.call("echo_args", json!({ "other": true })).await;
    let message = swapped.error.unwrap();
    assert!(
        message.contains("cannot change which tool runs"),
        "{message}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_webassembly_plugins_hooks_block_and_redact() {
    let root = tempfile::tempdir().unwrap();
    aleph_tools_tests::copy_dir(
        &aleph_tools_tests::example_plugins().join("call-guard"),
        &root.path().join("call-guard"),
    );
    let server = server();
    let manager = PluginManager::new(&server, PluginsConfig::with_search_paths([root.path()]));
    let report = manager.load_all();
    assert!(report.failed.is_empty(), "{:?}", report.failed);
    assert!(
        manager
            .plugin("call-guard")
            .info()
            .unwrap()
            .tools
            .is_empty()
    );

    let blocked = server.call("dangerous_delete", json!({})).await;
    assert_eq!(blocked.error_kind, Some(ToolErrorKind::PermissionDenied));
    assert!(
        blocked
            .error
            .unwrap()
            .contains("tools named dangerous_* are turned off")
    );
    let redacted = server
        .call(
            "echo_args",
            json!({ "user": "ada", "login": { "password": "hunter2" } }),
        )
        .await;
    assert_eq!(
        redacted.output,
        json!({ "user": "ada", "login": { "password": "***" } })
    );
    let untouched = server.call("echo_args", json!({ "user": "ada" })).await;
    assert_eq!(untouched.output, json!({ "user": "ada" }));

    // A hook the module does not export is a load error naming it.
    let manifest = root.path().join("call-guard/aleph_plugin.toml");
    let text = std::fs::read_to_string(&manifest).unwrap();
    std::fs::write(
        &manifest,
        text.replace("handler = \"redact\"", "handler = \"redcat\""),
    )
    .unwrap();
    let error = manager
        .plugin("call-guard")
        .reload()
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("`hooks[1].handler` names `redcat`"),
        "{error}"
    );
    // The version that loaded keeps its hooks.
    let still = server.call("echo_args", json!({ "password": "x" })).await;
    assert_eq!(still.output, json!({ "password": "***" }));
}
