//! A warm `echo` call served three ways, through `AlephToolServer::call` each time:
//!
//! - `echo/in_process`: a `#[tool]` function linked into the program;
//! - `echo/wasm`: the `echo` export of the `text-tools` WebAssembly plugin;
//! - `echo/node`: a Node.js plugin written with `@aleph/plugin-sdk`, one JSON-RPC round trip
//!   over the child's stdin and stdout, the process in its OS sandbox (the default);
//! - `echo/node_unsandboxed`: the same plugin with `[plugins.runtimes.nodejs.sandbox]`
//!   turned off, what the sandbox costs a warm call.
//!
//! Needs the example plugins and the SDK built: `bash examples/plugins/build.sh`. Run with
//! `cargo bench -p aleph-tools --features full --bench node`.

#![allow(missing_docs)]

use std::hint::black_box;
use std::path::{Path, PathBuf};

use aleph_tools::plugin::{PluginManager, PluginsConfig};
use aleph_tools::prelude::*;
use aleph_tools::sandbox::Sandbox;
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};

/// Echo the arguments back.
#[tool(register = false, name = "echo_rust", inline)]
fn echo(message: String, n: i64) -> Value {
    json!({ "message": message, "n": n })
}

const MANIFEST: &str = r#"
[plugin]
id = "echo-node"
version = "1.0.0"
kind = "nodejs"
entry = "index.js"

[[tools]]
name = "echo_node"
description = "Echo the arguments back."
handler = "echo"
"#;

const SOURCE: &str = r#"
require("@aleph/plugin-sdk").createServer({ name: "echo-node", tools: { echo: (args) => args } }).start();
"#;

fn examples() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples/plugins");
    assert!(
        dir.join("text-tools/text_tools.wasm").exists()
            && dir.join("../../sdk/node/dist/cjs/index.js").exists(),
        "build the example plugins and the SDK first: bash examples/plugins/build.sh"
    );
    dir
}

/// A Node.js plugin directory with the SDK copied in.
fn node_plugin(root: &Path) -> PathBuf {
    let dir = root.join("echo-node");
    let sdk = dir.join("node_modules/@aleph/plugin-sdk");
    std::fs::create_dir_all(&sdk).unwrap();
    let built = examples().join("../../sdk/node");
    std::fs::copy(built.join("package.json"), sdk.join("package.json")).unwrap();
    copy_tree(&built.join("dist"), &sdk.join("dist"));
    std::fs::write(dir.join("aleph_plugin.toml"), MANIFEST).unwrap();
    std::fs::write(dir.join("index.js"), SOURCE).unwrap();
    dir
}

/// Copies the directory `from` to `to`, with its subdirectories (the SDK's `dist/cjs` and
/// `dist/esm`).
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &to.join(entry.file_name()));
        } else {
            std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
        }
    }
}

fn echo_calls(c: &mut Criterion) {
    let root = std::env::temp_dir().join(format!("aleph-bench-node-{}", std::process::id()));
    let node = node_plugin(&root);
    let server = AlephToolServer::new();
    server.add(EchoTool).unwrap();
    let manager = PluginManager::new(&server, PluginsConfig::with_search_paths([&root]));
    manager.load(&examples().join("text-tools")).unwrap();
    manager.load(&node).unwrap();
    let plain = AlephToolServer::new();
    let mut config = PluginsConfig::with_search_paths([&root]);
    config.runtimes.nodejs.sandbox = Sandbox::none();
    let plain_manager = PluginManager::new(&plain, config);
    plain_manager.load(&node).unwrap();

    let runtime = tokio::runtime::Runtime::new().unwrap();
    let args = json!({ "message": "hello", "n": 1 });
    let mut group = c.benchmark_group("echo");
    for (label, server, tool) in [
        ("in_process", &server, "echo_rust"),
        ("wasm", &server, "echo"),
        ("node", &server, "echo_node"),
        ("node_unsandboxed", &plain, "echo_node"),
    ] {
        group.bench_function(label, |b| {
            b.to_async(&runtime).iter(|| async {
                let result = server.call(tool, black_box(args.clone())).await;
                assert_eq!(result.output["n"], 1, "{:?}", result.error);
                black_box(result)
            });
        });
    }
    group.finish();
    drop(manager);
    drop(plain_manager);
    let _ = std::fs::remove_dir_all(&root);
}

criterion_group!(benches, echo_calls);
criterion_main!(benches);
