//! `[[channels]]` and `[[providers]]` as the host's `Channel` and `ModelProvider`, with real
//! Node.js plugins (messages received at any time, chunks streamed as emitted) and a
//! WebAssembly provider, used through `Arc<dyn …>` like built-in ones.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use aleph_tools::AlephToolServer;
use aleph_tools::plugin::{Channel, ModelProvider, PluginError, PluginManager, PluginsConfig};
use aleph_tools_tests::node_plugin;
use futures_util::StreamExt;
use serde_json::{Value, json};

const BRIDGE: &str = r#"
[plugin]
id = "bridge"
version = "1.0.0"
kind = "nodejs"
entry = "index.js"

[[channels]]
name = "chat"
description = "A chat room that echoes"
connect_handler = "connectChat"
disconnect_handler = "disconnectChat"
send_handler = "sendChat"

[[providers]]
name = "local-llama"
description = "A model that repeats you"
list_models_handler = "listModels"
chat_handler = "chat"
stream_handler = "stream"

[[providers]]
name = "broken"
list_models_handler = "listModels"
chat_handler = "chat"
stream_handler = "streamThenFail"
"#;

const BRIDGE_JS: &str = r#"
const { createServer } = require("@aleph/plugin-sdk");
let timer = null;
createServer({
  name: "bridge",
  channels: {
    connectChat: (config, ctx) => {
      timer = setTimeout(() => ctx.receive({ from: "room", text: `welcome to ${config.room}` }), 100);
      return { joined: config.room };
    },
    disconnectChat: () => { clearTimeout(timer); return null; },
    sendChat: (message, ctx) => {
      setTimeout(() => ctx.receive({ from: "bot", text: `echo: ${message.text}` }), 20);
      return { id: 1 };
    },
  },
  providers: {
    listModels: () => [{ id: "tiny" }, { id: "small" }],
    chat: (request) => ({ message: { role: "assistant", content: `you said ${request.messages.at(-1).content}` } }),
    stream: async (request, ctx) => {
      for (const word of request.text.split(" ")) {
        ctx.emit({ delta: word });
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      return null;
    },
    streamThenFail: (request, ctx) => {
      ctx.emit({ delta: "half" });
      throw new Error("the model ran out of memory");
    },
  },
}).start();
"#;

async fn load(root: &Path) -> PluginManager {
    let manager = PluginManager::new(
        &AlephToolServer::new(),
        PluginsConfig::with_search_paths([root]),
    );
    let loading = manager.clone();
    let report = tokio::task::spawn_blocking(move || loading.load_all())
        .await
        .unwrap();
    assert!(report.failed.is_empty(), "{:?}", report.failed);
    manager
}

#[tokio::test(flavor = "multi_thread")]
async fn a_node_channel_connects_sends_and_receives_at_any_time() {
    let root = tempfile::tempdir().unwrap();
    node_plugin(root.path(), "bridge", BRIDGE, BRIDGE_JS);
    let manager = load(root.path()).await;
    let channels: Vec<(String, String, String)> = manager
        .channels()
        .into_iter()
        .map(|c| (c.plugin, c.name, c.description))
        .collect();
    assert_eq!(
        channels,
        [(
            "bridge".into(),
            "chat".into(),
            "A chat room that echoes".into()
        )]
    );
    let chat: Arc<dyn Channel> = Arc::new(manager.plugin("bridge").channel("chat").unwrap());
    let mut inbound = chat.inbound();
    assert_eq!(
        chat.connect(json!({ "room": "lobby" })).await.unwrap(),
        json!({ "joined": "lobby" })
    );
    assert_eq!(
        chat.send(json!({ "text": "hi" })).await.unwrap(),
        json!({ "id": 1 })
    );
    let first = tokio::time::timeout(Duration::from_secs(5), inbound.next())
        .await
        .unwrap();
    assert_eq!(first, Some(json!({ "from": "bot", "text": "echo: hi" })));
    // Received after `connect` returned, from the timer it left.
    let second = tokio::time::timeout(Duration::from_secs(5), inbound.next())
        .await
        .unwrap();
    assert_eq!(
        second,
        Some(json!({ "from": "room", "text": "welcome to lobby" }))
    );
    chat.disconnect().await.unwrap();

    let unknown = manager.plugin("bridge").channel("mail").unwrap_err();
    assert!(matches!(unknown, PluginError::Unknown { .. }));
    assert_eq!(
        unknown.to_string(),
        "plugin `bridge` has no channel `mail`; it has: chat"
    );
    assert!(matches!(
        manager.plugin("ghost").channel("chat"),
        Err(PluginError::NotFound(_))
    ));

    // Unloaded, the stream ends and calls say why.
    manager.plugin("bridge").unload().unwrap();
    let ended = tokio::time::timeout(Duration::from_secs(5), inbound.next())
        .await
        .unwrap();
    assert_eq!(ended, None);
    let gone = chat.send(json!({ "text": "anyone?" })).await.unwrap_err();
    assert_eq!(
        gone.to_string(),
        "channel `chat`: plugin `bridge` is not running"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_node_provider_lists_chats_and_streams_as_it_goes() {
    let root = tempfile::tempdir().unwrap();
    node_plugin(root.path(), "bridge", BRIDGE, BRIDGE_JS);
    let manager = load(root.path()).await;
    let names: Vec<(String, bool, bool)> = manager
        .providers()
        .into_iter()
        .map(|p| (p.name, p.streams, p.embeds))
        .collect();
    assert_eq!(
        names,
        [
            ("broken".into(), true, false),
            ("local-llama".into(), true, false)
        ]
    );
    let llama: Arc<dyn ModelProvider> =
        Arc::new(manager.plugin("bridge").provider("local-llama").unwrap());
    assert_eq!(
        llama.list_models().await.unwrap(),
        [json!({ "id": "tiny" }), json!({ "id": "small" })]
    );
    let answer = llama
        .chat(json!({ "model": "tiny", "messages": [{ "role": "user", "content": "hello" }] }))
        .await
        .unwrap();
    assert_eq!(answer["message"]["content"], "you said hello");
    let chunks: Vec<Value> = llama
        .stream(json!({ "text": "one two three" }))
        .await
        .unwrap()
        .map(Result::unwrap)
        .collect()
        .await;
    assert_eq!(
        chunks,
        [
            json!({ "delta": "one" }),
            json!({ "delta": "two" }),
            json!({ "delta": "three" })
        ]
    );
    let embed = llama.embed(json!("text")).await.unwrap_err();
    assert_eq!(
        embed.to_string(),
        "provider `local-llama`: plugin `bridge` declares no `embed_handler` for it"
    );

    // A stream that fails ends with the error, after what it sent.
    let broken = manager.plugin("bridge").provider("broken").unwrap();
    let items: Vec<_> = broken.stream(json!({})).await.unwrap().collect().await;
    assert_eq!(items.len(), 2, "{items:?}");
    assert_eq!(items[0], Ok(json!({ "delta": "half" })));
    let error = items[1].clone().unwrap_err().to_string();
    assert!(error.contains("the model ran out of memory"), "{error}");
}

/// A WebAssembly provider whose exports answer fixed JSON, and fail on `broken_chat`.
const MODEL_WAT: &str = r#"
(module
  (import "extism:host/env" "alloc" (func $alloc (param i64) (result i64)))
  (import "extism:host/env" "store_u8" (func $store_u8 (param i64 i32)))
  (import "extism:host/env" "output_set" (func $output_set (param i64 i64)))
  (import "extism:host/env" "error_set" (func $error_set (param i64)))
  (memory 1)
  (data (i32.const 0) "[{\"id\":\"wasm-tiny\"}]")
  (data (i32.const 32) "{\"content\":\"hello from wasm\"}")
  (data (i32.const 80) "[\"a\",\"b\",\"c\"]")
  (data (i32.const 96) "[[0.5,0.25]]")
  (data (i32.const 112) "the weights are missing")
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
  (func (export "models") (result i32)
    (call $output_set (call $emit (i32.const 0) (i32.const 20)) (i64.const 20))
    (i32.const 0))
  (func (export "chat") (result i32)
    (call $output_set (call $emit (i32.const 32) (i32.const 29)) (i64.const 29))
    (i32.const 0))
  (func (export "stream") (result i32)
    (call $output_set (call $emit (i32.const 80) (i32.const 13)) (i64.const 13))
    (i32.const 0))
  (func (export "embed") (result i32)
    (call $output_set (call $emit (i32.const 96) (i32.const 12)) (i64.const 12))
    (i32.const 0))
  (func (export "broken_chat") (result i32)
    (call $error_set (call $emit (i32.const 112) (i32.const 23)))
    (i32.const 1)))
"#;

#[tokio::test(flavor = "multi_thread")]
async fn a_webassembly_provider_answers_through_its_exports() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("model");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("model.wat"), MODEL_WAT).unwrap();
    std::fs::write(
        dir.join("aleph_plugin.toml"),
        "[plugin]\nid = \"model\"\nversion = \"1.0.0\"\nkind = \"wasm\"\nentry = \"model.wat\"\n\n[[providers]]\nname = \"tiny\"\nlist_models_handler = \"models\"\nchat_handler = \"chat\"\nstream_handler = \"stream\"\nembed_handler = \"embed\"\n\n[[providers]]\nname = \"broken\"\nlist_models_handler = \"models\"\nchat_handler = \"broken_chat\"\n",
    )
    .unwrap();
    let manager = load(root.path()).await;
    let tiny = manager.plugin("model").provider("tiny").unwrap();
    assert_eq!(
        tiny.list_models().await.unwrap(),
        [json!({ "id": "wasm-tiny" })]
    );
    assert_eq!(
        tiny.chat(json!({ "messages": [] })).await.unwrap(),
        json!({ "content": "hello from wasm" })
    );
    let chunks: Vec<_> = tiny.stream(json!({})).await.unwrap().collect().await;
    assert_eq!(chunks, [Ok(json!("a")), Ok(json!("b")), Ok(json!("c"))]);
    assert_eq!(
        tiny.embed(json!(["x"])).await.unwrap(),
        json!([[0.5, 0.25]])
    );
    let broken = manager.plugin("model").provider("broken").unwrap();
    let error = broken.chat(json!({})).await.unwrap_err().to_string();
    assert!(
        error.starts_with("provider `broken`: plugin `model`: "),
        "{error}"
    );
    assert!(error.contains("the weights are missing"), "{error}");
    let stream = broken.stream(json!({})).await.err().unwrap().to_string();
    assert!(stream.contains("declares no `stream_handler`"), "{stream}");
}

#[test]
fn what_a_runtime_cannot_serve_does_not_load() {
    let root = tempfile::tempdir().unwrap();
    // A WebAssembly plugin cannot push the messages a channel receives.
    let dir = root.path().join("wasm-chat");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("p.wat"), "(module)").unwrap();
    std::fs::write(
        dir.join("aleph_plugin.toml"),
        "[plugin]\nid = \"wasm-chat\"\nversion = \"1.0.0\"\nkind = \"wasm\"\nentry = \"p.wat\"\n\n[[channels]]\nname = \"c\"\nconnect_handler = \"a\"\ndisconnect_handler = \"b\"\nsend_handler = \"c\"\n",
    )
    .unwrap();
    let manager = PluginManager::new(
        &AlephToolServer::new(),
        PluginsConfig::with_search_paths([root.path()]),
    );
    let error = manager.load(&dir).unwrap_err().to_string();
    assert!(
        error.contains("write the channel as a Node.js plugin"),
        "{error}"
    );
    // A WebAssembly provider needs its exports; a Node.js one its handlers.
    std::fs::write(
        dir.join("aleph_plugin.toml"),
        "[plugin]\nid = \"wasm-chat\"\nversion = \"1.0.0\"\nkind = \"wasm\"\nentry = \"p.wat\"\n\n[[providers]]\nname = \"m\"\nlist_models_handler = \"models\"\nchat_handler = \"chat\"\n",
    )
    .unwrap();
    let error = manager.load(&dir).unwrap_err().to_string();
    assert!(
        error.contains("`providers[0].list_models_handler` names `models`"),
        "{error}"
    );
    let node = node_plugin(
        root.path(),
        "node-chat",
        "[plugin]\nid = \"node-chat\"\nversion = \"1.0.0\"\nkind = \"nodejs\"\nentry = \"index.js\"\n\n[[channels]]\nname = \"chat\"\nconnect_handler = \"c\"\ndisconnect_handler = \"d\"\nsend_handler = \"s\"\n",
        r#"require("@aleph/plugin-sdk").createServer({ name: "n", channels: { c: () => null, d: () => null } }).start();"#,
    );
    let error = manager.load(&node).unwrap_err().to_string();
    assert!(
        error.contains("channel `chat` (`s` in `channels`)"),
        "{error}"
    );
}
