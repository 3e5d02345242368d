//! The browser tools: a page served on loopback, opened, filled in and clicked by reference
//! in a sandboxed headless Chromium, a screenshot saved for the guide
//! (`book/src/images/browser.png`), and a Markdown report printed to a PDF file. Needs Chromium's headless shell, Chromium or Chrome
//! (Debian: `apt install chromium-headless-shell`).

use aleph_tools::builtin::Browser;
use aleph_tools::prelude::*;
use aleph_tools::{Content, ToolResult};
use base64::Engine as _;
use serde_json::json;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpListener;

const PAGE: &str = r#"<!doctype html><html><head><title>Greeter</title>
<style>body { font: 18px sans-serif; margin: 40px; } input, button { font-size: 18px; }</style>
</head><body><h1>Say hello</h1>
<label>Name <input id="name"></label>
<button onclick="document.getElementById('out').textContent = 'Hello, ' + document.getElementById('name').value + '!'">Greet</button>
<p id="out"></p></body></html>"#;

/// The reference the snapshot gives the element on the line holding `needle`.
fn reference(result: &ToolResult, needle: &str) -> String {
    let text = result.model_text();
    let line = text
        .lines()
        .find(|line| line.contains(needle))
        .expect("the element is in the snapshot");
    line.split("[ref=")
        .nth(1)
        .and_then(|rest| rest.split(']').next())
        .expect("a reference")
        .to_owned()
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // A page on loopback.
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let port = listener.local_addr()?.port();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let mut head = [0_u8; 4096];
            let _ = stream.read(&mut head).await;
            let reply = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{PAGE}",
                PAGE.len()
            );
            let _ = stream.write_all(reply.as_bytes()).await;
        }
    });

    // Loopback is private: a rule that names the address lets pages reach it.
    let server = AlephToolServer::builder()
        .with_builtin(
            Browser::new()
                .allow_hosts(["connect:127.0.0.1"])
                .viewport(640, 360),
        )
        .build()?;

    let page = server
        .call(
            "browser_navigate",
            json!({ "url": format!("http://127.0.0.1:{port}/") }),
        )
        .await;
    println!("{}", page.model_text());
    let name = reference(&page, "textbox \"Name\"");
    let greet = reference(&page, "button \"Greet\"");
    server
        .call("browser_type", json!({ "element": name, "text": "Ada" }))
        .await;
    let clicked = server
        .call("browser_click", json!({ "element": greet }))
        .await;
    assert!(
        clicked.model_text().contains("Hello, Ada!"),
        "{}",
        clicked.model_text()
    );
    println!("after the click:\n{}", clicked.model_text());

    let refused = server
        .call(
            "browser_navigate",
            json!({ "url": "http://169.254.169.254/" }),
        )
        .await;
    println!("a cloud metadata address: {}", refused.model_text());

    let shot = server.call("browser_screenshot", json!({})).await;
    let Some(Content::Image(image)) = shot
        .content
        .iter()
        .find(|block| matches!(block, Content::Image(_)))
    else {
        return Err(format!("no screenshot: {}", shot.model_text()).into());
    };
    let png = base64::engine::general_purpose::STANDARD.decode(&image.data)?;
    let out =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../book/src/images/browser.png");
    std::fs::write(&out, &png)?;
    println!(
        "screenshot: {} bytes, saved to book/src/images/browser.png",
        png.len()
    );

    // A Markdown report printed to a PDF file inside the allowed directory.
    let reports = tempfile::tempdir()?;
    let server = AlephToolServer::builder()
        .with_builtin(Browser::default())
        .with_allowed_paths([reports.path()])
        .with_working_dir(reports.path())
        .build()?;
    let report = "# Orders\n\n| colour | count |\n|---|---|\n| red | 12 |\n| blue | 7 |\n\n\
                  <div style=\"break-after: page\"></div>\n\n# Notes\n\nBlue sold out on Friday.\n";
    let made = server
        .call(
            "pdf_generate",
            json!({ "content": report, "path": "orders.pdf", "page_size": "A5" }),
        )
        .await;
    assert!(made.success, "{}", made.model_text());
    assert_eq!(made.output["pages"], 2, "{}", made.model_text());
    let written = std::fs::read(reports.path().join("orders.pdf"))?;
    assert!(written.starts_with(b"%PDF-"));
    println!("{}", made.model_text());
    Ok(())
}
