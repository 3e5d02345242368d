//! The cost of serving a WebAssembly plugin's tool:
//!
//! - `echo/raw_extism`: `extism::Plugin::call` on the `text-tools` module, the floor;
//! - `echo/wasm_plugin`: `WasmPlugin::call`, the pooled instance on a blocking thread;
//! - `echo/server_call`: `AlephToolServer::call("echo", …)`, the whole pipeline (name
//!   lookup, validation, the plugin call, output parsing);
//! - `pool/size_1` and `pool/size_2`: eight concurrent `word_count` calls on a 200 KB text,
//!   with one and with two instances in the pool.
//!
//! Needs the example plugins built: `bash examples/plugins/build.sh`. Run with
//! `cargo bench -p aleph-tools --features wasm --bench plugins`.

#![allow(missing_docs)]

use std::hint::black_box;
use std::path::PathBuf;

use aleph_tools::CancellationToken;
use aleph_tools::plugin::{PluginManager, PluginsConfig, WasmConfig, WasmRuntime};
use aleph_tools::prelude::*;
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;

fn plugins_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples/plugins");
    assert!(
        dir.join("text-tools/text_tools.wasm").exists(),
        "build the example plugins first: bash examples/plugins/build.sh"
    );
    dir
}

fn server_with(pool_size: usize) -> AlephToolServer {
    let server = AlephToolServer::new();
    let mut config = PluginsConfig::with_search_paths([plugins_dir()]);
    config.runtimes.wasm.pool_size = pool_size;
    PluginManager::new(&server, config)
        .load(&plugins_dir().join("text-tools"))
        .unwrap();
    server
}

fn echo(c: &mut Criterion) {
    let module = std::fs::read(plugins_dir().join("text-tools/text_tools.wasm")).unwrap();
    let input = br#"{"message":"hello","n":1}"#;
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let mut group = c.benchmark_group("echo");

    let manifest = extism::Manifest::new([extism::Wasm::data(module.clone())]);
    let mut raw = extism::Plugin::new(manifest, [], false).unwrap();
    group.bench_function("raw_extism", |b| {
        b.iter(|| {
            let out: Vec<u8> = raw.call("echo", black_box(&input[..])).unwrap();
            black_box(out)
        });
    });

    let plugin = WasmRuntime::new(WasmConfig::default())
        .load_bytes(
            "text-tools",
            &module,
            &aleph_tools::plugin::Permissions::default(),
            &plugins_dir(),
        )
        .unwrap();
    let cancel = CancellationToken::new();
    group.bench_function("wasm_plugin", |b| {
        b.to_async(&runtime).iter(|| async {
            black_box(plugin.call("echo", input.to_vec(), &cancel).await.unwrap())
        });
    });

    let server = server_with(2);
    let args = json!({ "message": "hello", "n": 1 });
    group.bench_function("server_call", |b| {
        b.to_async(&runtime).iter(|| async {
            let result = server.call("echo", black_box(args.clone())).await;
            assert!(result.success);
            black_box(result)
        });
    });
    group.finish();
}

fn pool(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let text = "plugins run in a pool of instances ".repeat(6_000);
    let mut group = c.benchmark_group("pool");
    group.sample_size(20);
    for size in [1, 2] {
        let server = server_with(size);
        let args = json!({ "text": text });
        group.bench_function(format!("size_{size}"), |b| {
            b.to_async(&runtime).iter(|| async {
                let calls: Vec<_> = (0..8)
                    .map(|_| {
                        let server = server.clone();
                        let args = args.clone();
                        tokio::spawn(async move { server.call("word_count", args).await })
                    })
                    .collect();
                for call in calls {
                    assert!(call.await.unwrap().success);
                }
            });
        });
    }
    group.finish();
}

criterion_group!(benches, echo, pool);
criterion_main!(benches);
