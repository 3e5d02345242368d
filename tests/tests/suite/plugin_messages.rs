//! `on_message` and `on_response` hooks, fired by the host application through the plugin
//! manager, with real Node.js plugins: interceptors that change and block, resolvers that
//! answer in the model's place, observers, priorities across plugins, and failures.

use std::path::Path;

use aleph_tools::AlephToolServer;
use aleph_tools::plugin::{MessageOutcome, PluginManager, PluginsConfig};
use aleph_tools_tests::{eventually, node_plugin};
use serde_json::{Value, json};

const MODERATOR: &str = r#"
[plugin]
id = "moderator"
version = "1.0.0"
kind = "nodejs"
entry = "index.js"

[permissions]
filesystem = ["write:./out"]

[[hooks]]
event = "on_message"
kind = "interceptor"
priority = "system"
handler = "moderate"

[[hooks]]
event = "on_message"
kind = "resolver"
handler = "ping"

[[hooks]]
event = "on_message"
kind = "observer"
handler = "record"

[[hooks]]
event = "on_response"
kind = "interceptor"
handler = "sign"
"#;

const MODERATOR_JS: &str = r#"
const fs = require("node:fs");
const path = require("node:path");
require("@aleph/plugin-sdk").createServer({
  name: "moderator",
  hooks: {
    moderate: ({ message }) => {
      if (message.text.includes("spam")) return { block: "no spam here" };
      if (message.text.includes("password")) {
        return { message: { ...message, text: message.text.replace(/password \S+/, "password [redacted]") } };
      }
      return null;
    },
    ping: ({ message }) => (message.text === "/ping" ? { text: "pong" } : null),
    record: (context) => {
      fs.appendFileSync(path.join(__dirname, "out", "seen.jsonl"), JSON.stringify(context) + "\n");
    },
    sign: ({ event, message }) => ({ message: { ...message, text: `${message.text} (${event})` } }),
  },
}).start();
"#;

/// A plugin `id` whose one `on_message` hook, at `priority`, appends `id` to the text, or
/// does `body` instead when given.
fn stamper(root: &Path, id: &str, priority: &str, kind: &str, body: &str) {
    let manifest = format!(
        "[plugin]\nid = \"{id}\"\nversion = \"1.0.0\"\nkind = \"nodejs\"\nentry = \"index.js\"\n\n[[hooks]]\nevent = \"on_message\"\nkind = \"{kind}\"\npriority = \"{priority}\"\nhandler = \"hook\"\n"
    );
    let body = if body.is_empty() {
        format!("({{ message }}) => ({{ message: {{ text: message.text + \" {id}\" }} }})")
    } else {
        body.to_owned()
    };
    let source = format!(
        "require(\"@aleph/plugin-sdk\").createServer({{ name: \"{id}\", hooks: {{ hook: {body} }} }}).start();"
    );
    node_plugin(root, id, &manifest, &source);
}

fn load(root: &Path) -> PluginManager {
    let manager = PluginManager::new(
        &AlephToolServer::new(),
        PluginsConfig::with_search_paths([root]),
    );
    let report = manager.load_all();
    assert!(report.failed.is_empty(), "{:?}", report.failed);
    manager
}

#[tokio::test(flavor = "multi_thread")]
async fn messages_are_changed_blocked_answered_and_observed() {
    let root = tempfile::tempdir().unwrap();
    let dir = node_plugin(root.path(), "moderator", MODERATOR, MODERATOR_JS);
    std::fs::create_dir_all(dir.join("out")).unwrap();
    let manager = tokio::task::spawn_blocking({
        let root = root.path().to_path_buf();
        move || load(&root)
    })
    .await
    .unwrap();

    let plain = json!({ "role": "user", "text": "hello" });
    assert_eq!(
        manager.on_message(plain.clone()).await,
        MessageOutcome::Continue(plain)
    );
    assert_eq!(
        manager
            .on_message(json!({ "text": "my password hunter2 ok" }))
            .await,
        MessageOutcome::Continue(json!({ "text": "my password [redacted] ok" }))
    );
    assert_eq!(
        manager.on_message(json!({ "text": "buy spam" })).await,
        MessageOutcome::Blocked {
            plugin: "moderator".into(),
            reason: "no spam here".into()
        }
    );
    assert_eq!(
        manager.on_message(json!({ "text": "/ping" })).await,
        MessageOutcome::Answered {
            plugin: "moderator".into(),
            answer: json!({ "text": "pong" })
        }
    );
    assert_eq!(
        manager.on_response(json!({ "text": "done" })).await,
        MessageOutcome::Continue(json!({ "text": "done (on_response)" }))
    );

    // The observer saw each message that went on, as the interceptors left it.
    let seen = dir.join("out/seen.jsonl");
    eventually("the observer records three messages", || {
        std::fs::read_to_string(&seen).is_ok_and(|text| text.lines().count() == 3)
    })
    .await;
    let seen: Vec<Value> = std::fs::read_to_string(&seen)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert!(seen.iter().all(|c| c["event"] == "on_message"));
    assert!(
        seen.iter()
            .any(|c| c["message"]["text"] == "my password [redacted] ok")
    );
    assert!(!seen.iter().any(|c| c["message"]["text"] == "buy spam"));

    // Unloaded, the plugin's hooks are gone.
    manager.plugin("moderator").unload().unwrap();
    let spam = json!({ "text": "buy spam" });
    assert_eq!(
        manager.on_message(spam.clone()).await,
        MessageOutcome::Continue(spam)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn hooks_run_by_priority_then_load_order_and_a_failure_blocks() {
    let root = tempfile::tempdir().unwrap();
    stamper(root.path(), "a-low", "low", "interceptor", "");
    stamper(root.path(), "b-system", "system", "interceptor", "");
    stamper(root.path(), "c-normal", "normal", "interceptor", "");
    stamper(root.path(), "d-high", "high", "interceptor", "");
    stamper(root.path(), "e-normal", "normal", "resolver", "() => null");
    stamper(
        root.path(),
        "f-low",
        "low",
        "resolver",
        "() => ({ by: \"f-low\" })",
    );
    stamper(
        root.path(),
        "g-high",
        "high",
        "resolver",
        "({ message }) => (message.text.endsWith(\"a-low\") ? { by: \"g-high\" } : null)",
    );
    let manager = tokio::task::spawn_blocking({
        let root = root.path().to_path_buf();
        move || load(&root)
    })
    .await
    .unwrap();
    // Interceptors: system, high, normal, low; then resolvers by priority: g-high answers.
    assert_eq!(
        manager.on_message(json!({ "text": "m" })).await,
        MessageOutcome::Answered {
            plugin: "g-high".into(),
            answer: json!({ "by": "g-high" })
        }
    );
    manager.plugin("g-high").unload().unwrap();
    assert_eq!(
        manager.on_message(json!({ "text": "m" })).await,
        MessageOutcome::Answered {
            plugin: "f-low".into(),
            answer: json!({ "by": "f-low" })
        }
    );
    manager.plugin("f-low").unload().unwrap();
    assert_eq!(
        manager.on_message(json!({ "text": "m" })).await,
        MessageOutcome::Continue(json!({ "text": "m b-system d-high c-normal a-low" }))
    );

    // A guard that throws, or answers nonsense, blocks the message, naming itself.
    stamper(
        root.path(),
        "h-broken",
        "system",
        "interceptor",
        "() => { throw new Error(\"rules unreadable\"); }",
    );
    let manager2 = manager.clone();
    let dir = root.path().join("h-broken");
    tokio::task::spawn_blocking(move || manager2.load(&dir).unwrap())
        .await
        .unwrap();
    match manager.on_message(json!({ "text": "m" })).await {
        MessageOutcome::Blocked { plugin, reason } => {
            assert_eq!(plugin, "h-broken");
            assert!(reason.contains("rules unreadable"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    manager.plugin("h-broken").unload().unwrap();
    stamper(root.path(), "i-odd", "system", "interceptor", "() => 42");
    let manager2 = manager.clone();
    let dir = root.path().join("i-odd");
    tokio::task::spawn_blocking(move || manager2.load(&dir).unwrap())
        .await
        .unwrap();
    match manager.on_message(json!({ "text": "m" })).await {
        MessageOutcome::Blocked { reason, .. } => {
            assert!(reason.contains("answered `42`"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_resolver_cannot_take_part_in_on_response() {
    let root = tempfile::tempdir().unwrap();
    let manifest = "[plugin]\nid = \"r\"\nversion = \"1.0.0\"\nkind = \"nodejs\"\nentry = \"index.js\"\n\n[[hooks]]\nevent = \"on_response\"\nkind = \"resolver\"\nhandler = \"h\"\n";
    let dir = node_plugin(
        root.path(),
        "r",
        manifest,
        "require(\"@aleph/plugin-sdk\").createServer({ name: \"r\", hooks: { h: () => null } }).start();",
    );
    let manager = PluginManager::new(
        &AlephToolServer::new(),
        PluginsConfig::with_search_paths([root.path()]),
    );
    let error = manager.load(&dir).unwrap_err().to_string();
    assert!(
        error.contains("`hooks[0]`: a `resolver` cannot take part in `on_response`"),
        "{error}"
    );
}
