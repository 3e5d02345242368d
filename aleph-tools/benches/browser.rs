//! What the browser tools cost a call, against a real headless Chromium (sandboxed, as by
//! default) and a page served on loopback: `browser_navigate` (the page loaded, then its
//! snapshot taken and rendered as text) in one round trip, and `pdf_generate` printing a
//! 10-page Markdown document to a file.
//!
//! Run with `cargo bench -p aleph-tools --features browser --bench browser`.

#![allow(missing_docs)]

use std::time::Duration;

use aleph_tools::builtin::Browser;
use aleph_tools::prelude::*;
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpListener;

const PAGE: &str = r#"<!doctype html><html><head><title>Order</title></head><body>
<h1>Place an order</h1><nav><a href="/">Home</a> <a href="/help">Help</a></nav>
<form><label>Quantity <input name="qty" value="1"></label>
<label>Colour <select name="color"><option>red</option><option>blue</option></select></label>
<button>Order</button></form>
<ul><li>First item</li><li>Second item</li><li>Third item</li></ul></body></html>"#;

/// A 10-page Markdown document: a section a page.
fn document() -> String {
    (1..=10)
        .map(|page| {
            format!(
                "# Section {page}\n\n{}\n\n| key | value |\n|---|---|\n| page | {page} |\n",
                "A paragraph of ordinary prose that fills some of the page. ".repeat(12)
            )
        })
        .collect::<Vec<_>>()
        .join("\n<div style=\"break-after: page\"></div>\n\n")
}

async fn serve_page() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("a port");
    let port = listener.local_addr().expect("an address").port();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut head = [0_u8; 4096];
                let _ = stream.read(&mut head).await;
                let reply = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{PAGE}",
                    PAGE.len()
                );
                let _ = stream.write_all(reply.as_bytes()).await;
            });
        }
    });
    port
}

fn browser(c: &mut Criterion) {
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    let dir = tempfile::tempdir().expect("a directory");
    let (server, url) = runtime.block_on(async {
        let port = serve_page().await;
        let server = AlephToolServer::builder()
            .with_builtin(Browser::new().allow_hosts(["connect:127.0.0.1"]))
            .with_allowed_paths([dir.path()])
            .with_working_dir(dir.path())
            .build()
            .expect("a server");
        (server, format!("http://127.0.0.1:{port}/"))
    });
    let navigate = || async {
        let page = server.call("browser_navigate", json!({ "url": url })).await;
        assert!(page.success, "{}", page.model_text());
    };
    // The browser's start is not part of a call's cost.
    runtime.block_on(navigate());
    let mut group = c.benchmark_group("browser");
    group.bench_function("navigate_and_snapshot", |b| {
        b.to_async(&runtime).iter(navigate);
    });
    let content = document();
    group.bench_function("pdf_10_pages", |b| {
        b.to_async(&runtime).iter(|| async {
            let made = server
                .call(
                    "pdf_generate",
                    json!({ "content": content, "path": "report.pdf", "overwrite": true }),
                )
                .await;
            assert!(made.success, "{}", made.model_text());
            assert_eq!(made.output["pages"], 10);
        });
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_secs(2))
        .measurement_time(Duration::from_secs(10));
    targets = browser
}
criterion_main!(benches);
