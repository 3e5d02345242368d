//! The browser tools against a real headless Chromium (Debian's `chromium`, which the
//! project's setup installs), driving pages served on loopback by a server written here.
//! Every page is reached through the host rules: loopback is allowed by naming it
//! (`connect:127.0.0.1`), so a test that expects a refusal points at an address the rule does
//! not name (`127.0.0.2`), which never leaves the machine.

use std::io;
use std::time::Duration;

use aleph_tools::builtin::Browser;
use aleph_tools::prelude::*;
use aleph_tools::sandbox::Sandbox;
use aleph_tools::{Content, ToolErrorKind};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const FORM: &str = r#"<!doctype html><html><head><title>Order</title></head><body>
<h1>Place an order</h1>
<a href="/next">Next page</a>
<form onsubmit="event.preventDefault(); document.getElementById('out').textContent = 'Ordered ' + this.qty.value + ' ' + this.color.value;">
<label>Quantity <input name="qty" value="1"></label>
<label>Colour <select name="color"><option value="r">red</option><option value="b">blue</option></select></label>
<button type="submit">Order</button>
</form>
<p id="out"></p>
<button onclick="setTimeout(() => { document.getElementById('late').textContent = 'Late arrival'; }, 300)">Later</button>
<p id="late"></p>
</body></html>"#;

/// Starts the test web on loopback; returns its port. It ends with the test's runtime.
async fn web() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            tokio::spawn(async move {
                let _ = answer(stream, port).await;
            });
        }
    });
    port
}

async fn answer(mut stream: TcpStream, _port: u16) -> io::Result<()> {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if stream.read(&mut byte).await? == 0 {
            return Ok(());
        }
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    let path = head.split_whitespace().nth(1).unwrap_or("/").to_owned();
    let html = |body: &str| {
        format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .into_bytes()
    };
    let bytes = match path.as_str() {
        "/form" => html(FORM),
        "/next" => html("<!doctype html><title>Next</title><h1>The second page</h1>"),
        "/slow" => html(
            "<!doctype html><title>Slow</title><h1>Half there</h1><img src=\"/never\">",
        ),
        "/never" => {
            // Holds the request open: the page that asked never finishes loading.
            tokio::time::sleep(Duration::from_secs(120)).await;
            return Ok(());
        }
        "/to-private" => b"HTTP/1.1 302 Found\r\nLocation: http://127.0.0.2:9/secret\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_vec(),
        "/popups" => html(
            "<!doctype html><title>Popups</title><script>for (let i = 0; i < 100; i++) window.open('/next');</script><h1>Many windows</h1>",
        ),
        "/dialog" => html("<!doctype html><title>Dialog</title><script>alert('Hello there')</script><h1>After the dialog</h1>"),
        _ => b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_vec(),
    };
    stream.write_all(&bytes).await?;
    stream.shutdown().await
}

fn server(browser: Browser) -> AlephToolServer {
    AlephToolServer::builder()
        .with_builtin(browser.allow_hosts(["connect:127.0.0.1"]))
        .build()
        .unwrap()
}

fn text(result: &ToolResult) -> String {
    result.model_text().into_owned()
}

/// The reference the snapshot gives the element on the line holding `needle`.
fn reference(snapshot: &str, needle: &str) -> String {
    let line = snapshot
        .lines()
        .find(|line| line.contains(needle))
        .unwrap_or_else(|| panic!("no line with {needle:?} in:\n{snapshot}"));
    let start = line.find("[ref=").expect("a reference") + 5;
    line[start..].split(']').next().unwrap().to_owned()
}

async fn call(server: &AlephToolServer, tool: &str, args: Value) -> ToolResult {
    server.call(tool, args).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_form_is_filled_and_sent_through_references_in_the_sandboxed_browser() {
    let port = web().await;
    let server = server(Browser::new());
    let opened = call(
        &server,
        "browser_navigate",
        json!({ "url": format!("http://127.0.0.1:{port}/form") }),
    )
    .await;
    assert!(opened.success, "{}", text(&opened));
    let snapshot = text(&opened);
    assert!(snapshot.contains("Tab 0 of 1: Order"), "{snapshot}");
    assert!(
        snapshot.contains("- heading \"Place an order\""),
        "{snapshot}"
    );
    assert!(
        snapshot.contains(&format!("-> http://127.0.0.1:{port}/next")),
        "{snapshot}"
    );

    let quantity = reference(&snapshot, "textbox \"Quantity\"");
    let typed = call(
        &server,
        "browser_type",
        json!({ "element": quantity, "text": "3" }),
    )
    .await;
    assert!(typed.success, "{}", text(&typed));
    assert!(
        text(&typed).contains("textbox \"Quantity\""),
        "{}",
        text(&typed)
    );
    let colour = reference(&snapshot, "combobox \"Colour\"");
    let chosen = call(
        &server,
        "browser_select",
        json!({ "element": colour, "values": ["blue"] }),
    )
    .await;
    assert!(chosen.success, "{}", text(&chosen));
    let wrong = call(
        &server,
        "browser_select",
        json!({ "element": colour, "values": ["green"] }),
    )
    .await;
    assert!(text(&wrong).contains("\"red\""), "{}", text(&wrong));
    let order = reference(&snapshot, "button \"Order\"");
    let sent = call(&server, "browser_click", json!({ "element": order })).await;
    assert!(text(&sent).contains("Ordered 3 b"), "{}", text(&sent));

    // A click that leads to another page answers with that page.
    let link = reference(&snapshot, "link \"Next page\"");
    let next = call(&server, "browser_click", json!({ "element": link })).await;
    assert!(text(&next).contains("The second page"), "{}", text(&next));
    // The form's references went with its page.
    let stale = call(&server, "browser_click", json!({ "element": order })).await;
    assert!(!stale.success);
    assert!(text(&stale).contains("latest snapshot"), "{}", text(&stale));
    let unknown = call(&server, "browser_click", json!({ "element": "e999999" })).await;
    assert!(
        text(&unknown).contains("browser_snapshot"),
        "{}",
        text(&unknown)
    );

    let shot = call(&server, "browser_screenshot", json!({})).await;
    let Some(Content::Image(image)) = shot.content.iter().find(|c| matches!(c, Content::Image(_)))
    else {
        panic!("no image: {}", text(&shot));
    };
    assert_eq!(image.mime_type, "image/png");
}
