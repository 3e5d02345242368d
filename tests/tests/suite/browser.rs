//! The browser tools against a real headless Chromium (Debian's `chromium`, which the
//! project's setup installs), driving pages served on loopback by a server written here.
//! Every page is reached through the host rules: loopback is allowed by naming it
//! (`connect:127.0.0.1`), so a test that expects a refusal points at an address the rule does
//! not name (`127.0.0.2`), which never leaves the machine.

use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use aleph_tools::builtin::Browser;
use aleph_tools::prelude::*;
use aleph_tools::sandbox::Sandbox;
use aleph_tools::{Content, ToolErrorKind};
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;

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

/// What a test tells its pages, and hears from them: `/signal` answers `go` once `go` is
/// set, and `/removed` notifies `removed`.
#[derive(Default)]
struct Signal {
    go: AtomicBool,
    removed: Notify,
}

/// Starts the test web on loopback; returns its port. It ends with the test's runtime.
async fn web() -> u16 {
    web_with(Arc::default()).await
}

async fn web_with(signal: Arc<Signal>) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let signal = Arc::clone(&signal);
            tokio::spawn(async move {
                let _ = answer(stream, &signal).await;
            });
        }
    });
    port
}

async fn answer(mut stream: TcpStream, signal: &Signal) -> io::Result<()> {
    let Some(path) = aleph_tools_tests::request_path(&mut stream).await else {
        return Ok(());
    };
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
            tokio::time::sleep(Duration::from_mins(2)).await;
            return Ok(());
        }
        "/to-private" => b"HTTP/1.1 302 Found\r\nLocation: http://127.0.0.2:9/secret\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_vec(),
        "/popups" => html(
            "<!doctype html><title>Popups</title><script>for (let i = 0; i < 100; i++) window.open('/next');</script><h1>Many windows</h1>",
        ),
        "/vanishing" => html(
            "<!doctype html><title>Vanishing</title><button id=\"gone\">Soon gone</button>\
             <script>const poll = setInterval(async () => { \
               if (await (await fetch('/signal')).text() === 'go') { \
                 document.getElementById('gone').remove(); clearInterval(poll); fetch('/removed'); } }, 50)</script>",
        ),
        "/signal" => html(if signal.go.load(Ordering::SeqCst) { "go" } else { "wait" }),
        "/removed" => {
            signal.removed.notify_one();
            html("")
        }
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_unreachable_and_slow_pages_each_get_a_clear_answer() {
    let port = web().await;
    let server = server(
        Browser::new()
            .load_timeout(Duration::from_secs(2))
            .max_tabs(3),
    );
    let url = |path: &str| format!("http://127.0.0.1:{port}{path}");

    // A redirect to an address no rule names is refused, and says why.
    let refused = call(
        &server,
        "browser_navigate",
        json!({ "url": url("/to-private") }),
    )
    .await;
    assert_eq!(
        refused.error_kind,
        Some(ToolErrorKind::PermissionDenied),
        "{}",
        text(&refused)
    );
    assert!(text(&refused).contains("127.0.0.2"), "{}", text(&refused));
    for (bad, says) in [
        ("file:///etc/passwd", "only http and https"),
        ("javascript:alert(1)", "only http and https"),
        ("http://localhost:1/", "not among"),
        ("not a url", "not an absolute URL"),
    ] {
        let answer = call(&server, "browser_navigate", json!({ "url": bad })).await;
        assert!(!answer.success, "{bad}");
        assert!(text(&answer).contains(says), "{bad}: {}", text(&answer));
    }
    // Nothing listens there: unreachable, said so.
    let free = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let closed = call(
        &server,
        "browser_navigate",
        json!({ "url": format!("http://127.0.0.1:{free}/") }),
    )
    .await;
    // Through the sandbox's proxy, the page is the proxy's answer.
    assert!(
        text(&closed).contains("HTTP status: 502") && text(&closed).contains("Connection refused"),
        "{}",
        text(&closed)
    );

    // A page that never finishes loading: an error, and what loaded can still be read.
    let slow = call(&server, "browser_navigate", json!({ "url": url("/slow") })).await;
    assert!(
        text(&slow).contains("did not finish loading within 2 s"),
        "{}",
        text(&slow)
    );
    let seen = call(&server, "browser_snapshot", json!({})).await;
    assert!(text(&seen).contains("Half there"), "{}", text(&seen));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn popups_past_the_tab_limit_are_closed_and_tabs_are_managed() {
    let port = web().await;
    let server = server(Browser::new().max_tabs(3));
    let url = |path: &str| format!("http://127.0.0.1:{port}{path}");

    // A page opening 100 windows fills the tab limit and no more.
    let popups = call(
        &server,
        "browser_navigate",
        json!({ "url": url("/popups") }),
    )
    .await;
    assert!(popups.success, "{}", text(&popups));
    let mut listed = call(&server, "browser_tabs", json!({ "action": "list" })).await;
    for _ in 0..20 {
        if listed.output["tabs"]
            .as_array()
            .is_some_and(|tabs| tabs.len() == 3)
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        listed = call(&server, "browser_tabs", json!({ "action": "list" })).await;
    }
    assert_eq!(
        listed.output["tabs"].as_array().map(Vec::len),
        Some(3),
        "{}",
        text(&listed)
    );
    // The page's answer, or the next one, says what was closed.
    let noted = call(&server, "browser_snapshot", json!({ "tab": 0 })).await;
    let said = format!("{}\n{}", text(&popups), text(&noted));
    assert!(said.contains("past the tab limit"), "{said}");
    let full = call(&server, "browser_tabs", json!({ "action": "open" })).await;
    assert!(text(&full).contains("its limit"), "{}", text(&full));
    for last in [2, 1] {
        let closed = call(
            &server,
            "browser_tabs",
            json!({ "action": "close", "index": last }),
        )
        .await;
        assert!(closed.success, "{}", text(&closed));
    }
    let missing = call(
        &server,
        "browser_tabs",
        json!({ "action": "switch", "index": 7 }),
    )
    .await;
    assert!(
        text(&missing).contains("there is no tab 7"),
        "{}",
        text(&missing)
    );
    let no_index = call(&server, "browser_tabs", json!({ "action": "close" })).await;
    assert_eq!(
        no_index.error_kind,
        Some(ToolErrorKind::InvalidArgs),
        "{}",
        text(&no_index)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dialogs_are_dismissed_and_waits_end_when_the_text_comes() {
    let port = web().await;
    let server = server(Browser::new());
    let url = |path: &str| format!("http://127.0.0.1:{port}{path}");

    // A dialog is dismissed, and the answer says so.
    let dialog = call(
        &server,
        "browser_navigate",
        json!({ "url": url("/dialog") }),
    )
    .await;
    assert!(
        text(&dialog).contains("After the dialog"),
        "{}",
        text(&dialog)
    );
    assert!(
        text(&dialog).contains("dismissed: Hello there"),
        "{}",
        text(&dialog)
    );

    // Waiting for a text that a script adds later.
    let form = call(&server, "browser_navigate", json!({ "url": url("/form") })).await;
    let later = reference(&text(&form), "button \"Later\"");
    call(&server, "browser_click", json!({ "element": later })).await;
    let waited = call(
        &server,
        "browser_wait_for",
        json!({ "text": "Late arrival", "seconds": 5 }),
    )
    .await;
    assert!(waited.success, "{}", text(&waited));
    let never = call(
        &server,
        "browser_wait_for",
        json!({ "text": "Never there", "seconds": 0.3 }),
    )
    .await;
    assert!(text(&never).contains("did not appear"), "{}", text(&never));
    let both = call(
        &server,
        "browser_wait_for",
        json!({ "text": "a", "text_gone": "b" }),
    )
    .await;
    assert_eq!(both.error_kind, Some(ToolErrorKind::InvalidArgs));
    let typed_into_heading = call(
        &server,
        "browser_type",
        json!({ "element": reference(&text(&form), "link \"Next page\""), "text": "x" }),
    )
    .await;
    assert!(
        text(&typed_into_heading).contains("does not take text"),
        "{}",
        text(&typed_into_heading)
    );
}

/// A page asks for resources at an address no rule names (`127.0.0.2`, and `localhost`,
/// which no rule names either) from an image, a script's `fetch` and, in the sandbox, a
/// WebSocket (which request interception does not see; the sandbox's proxy refuses it); a
/// listener there counts the connections that reach it: none, sandboxed or not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_cannot_reach_an_address_the_rules_do_not_name() {
    for sandbox in [Sandbox::new(), Sandbox::none()] {
        let forbidden = TcpListener::bind("127.0.0.2:0").await.unwrap();
        let forbidden_port = forbidden.local_addr().unwrap().port();
        let reached = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counter = Arc::clone(&reached);
        tokio::spawn(async move {
            while forbidden.accept().await.is_ok() {
                counter.fetch_add(1, Ordering::SeqCst);
            }
        });
        let page = format!(
            "<!doctype html><title>Probe</title><img src=\"http://127.0.0.2:{forbidden_port}/i.png\">\
             <script>fetch('http://127.0.0.2:{forbidden_port}/f').catch(() => {{}});\
             fetch('http://localhost:{forbidden_port}/g').catch(() => {{}});</script><h1>Probing</h1>"
        );
        let page = if sandbox.is_enabled() {
            format!(
                "{page}<script>try {{ new WebSocket('ws://127.0.0.2:{forbidden_port}/w'); }} catch (e) {{}}</script>"
            )
        } else {
            page
        };
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("probe.html"), &page).unwrap();
        let port = web_of(dir.path().to_owned()).await;
        let server = server(Browser::new().sandbox(sandbox.clone()));
        let opened = call(
            &server,
            "browser_navigate",
            json!({ "url": format!("http://127.0.0.1:{port}/probe.html") }),
        )
        .await;
        assert!(text(&opened).contains("Probing"), "{}", text(&opened));
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert_eq!(
            reached.load(Ordering::SeqCst),
            0,
            "sandbox: {}",
            sandbox.is_enabled()
        );
    }
}

/// A web of static files from `dir`, on loopback.
async fn web_of(dir: std::path::PathBuf) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let dir = dir.clone();
            tokio::spawn(async move {
                let Some(path) = aleph_tools_tests::request_path(&mut stream).await else {
                    return;
                };
                let path = path.trim_start_matches('/').to_owned();
                let body = std::fs::read(dir.join(path)).unwrap_or_default();
                let mut out = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                )
                .into_bytes();
                out.extend_from_slice(&body);
                let _ = stream.write_all(&out).await;
            });
        }
    });
    port
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_browser_that_dies_is_started_again_at_the_next_call() {
    let port = web().await;
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    let wrapper = recording_wrapper(dir.path(), &pid_file);
    let server = server(Browser::new().program(&wrapper).sandbox(Sandbox::none()));
    let url = format!("http://127.0.0.1:{port}/next");
    let first = call(&server, "browser_navigate", json!({ "url": url })).await;
    assert!(first.success, "{}", text(&first));
    let pid: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let again = call(&server, "browser_navigate", json!({ "url": url })).await;
    assert!(again.success, "{}", text(&again));
    assert!(text(&again).contains("started again"), "{}", text(&again));
    assert!(text(&again).contains("The second page"), "{}", text(&again));
    // Closed with the server.
    let new_pid: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    drop(server);
    aleph_tools_tests::eventually("the browser to end with its server", || {
        !aleph_tools_tests::process_alive(u64::try_from(new_pid).unwrap())
    })
    .await;
}

/// The processes descending from `root`, by their `/proc` parent links.
fn descendants(root: i32) -> Vec<i32> {
    let parents: Vec<(i32, i32)> = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|entry| {
            let pid: i32 = entry.ok()?.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            // The parent is the second field after the command's closing parenthesis.
            let parent = stat
                .rsplit_once(')')?
                .1
                .split_whitespace()
                .nth(1)?
                .parse()
                .ok()?;
            Some((pid, parent))
        })
        .collect();
    let mut found = vec![root];
    let mut at = 0;
    while at < found.len() {
        let parent = found[at];
        found.extend(
            parents
                .iter()
                .filter(|(_, p)| *p == parent)
                .map(|(pid, _)| *pid),
        );
        at += 1;
    }
    found.remove(0);
    found
}

/// A script that starts Chromium after writing its process id to `pid_file`.
fn recording_wrapper(dir: &std::path::Path, pid_file: &std::path::Path) -> std::path::PathBuf {
    let wrapper = dir.join("browser.sh");
    let real = [
        "/usr/lib/chromium/chromium-headless-shell",
        "/usr/lib/chromium/chromium",
    ]
    .into_iter()
    .find(|path| std::path::Path::new(path).exists())
    .expect("Chromium is installed (tests/interop/setup.sh)");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\necho $$ > {}\nexec {real} \"$@\"\n",
            pid_file.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(
        &wrapper,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    wrapper
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crashed_renderer_is_a_clear_error_until_the_tab_navigates_again() {
    let port = web().await;
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    let wrapper = recording_wrapper(dir.path(), &pid_file);
    let server = server(Browser::new().program(&wrapper).sandbox(Sandbox::none()));
    let url = format!("http://127.0.0.1:{port}/form");
    let first = call(&server, "browser_navigate", json!({ "url": url })).await;
    assert!(first.success, "{}", text(&first));
    let browser: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let renderers: Vec<i32> = descendants(browser)
        .into_iter()
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|line| String::from_utf8_lossy(&line).contains("--type=renderer"))
        })
        .collect();
    assert!(!renderers.is_empty(), "the page has a renderer");
    for renderer in &renderers {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(*renderer),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    let mut crashed = call(&server, "browser_snapshot", json!({})).await;
    for _ in 0..50 {
        if !crashed.success {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        crashed = call(&server, "browser_snapshot", json!({})).await;
    }
    assert!(!crashed.success, "{}", text(&crashed));
    assert!(
        text(&crashed).contains("crashed (its renderer died); open it again with browser_navigate"),
        "{}",
        text(&crashed)
    );
    // Every call on the tab says so, not only the first.
    let click = call(&server, "browser_click", json!({ "element": "e1" })).await;
    assert!(text(&click).contains("crashed"), "{}", text(&click));
    // The browser lives on: navigating mends the tab, without a restart.
    let again = call(&server, "browser_navigate", json!({ "url": url })).await;
    assert!(again.success, "{}", text(&again));
    assert!(text(&again).contains("Place an order"), "{}", text(&again));
    assert!(!text(&again).contains("started again"), "{}", text(&again));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fifty_megabyte_page_gets_a_bounded_answer_and_the_browser_serves_on() {
    let dir = tempfile::tempdir().unwrap();
    // 60,000 paragraphs (more elements than a tree is read for, 5 MB of text) and 45 MB the
    // parser reads through as a comment: 50 MB on the wire that Chromium loads in seconds.
    // Laying out 50 MB of paragraphs takes it a minute on a busy two-core machine, which
    // would time the test on Chromium's layout rather than on the tool's bounds.
    let mut page =
        String::from("<!doctype html><title>Huge</title><h1>The start of a huge page</h1>");
    let paragraph =
        "<p>Every paragraph of this page says the same thing at some length, to be large.</p>\n";
    for _ in 0..60_000 {
        page.push_str(paragraph);
    }
    page.push_str("<!-- ");
    while page.len() < 50 << 20 {
        page.push_str("filler ");
    }
    page.push_str("-->");
    std::fs::write(dir.path().join("huge.html"), &page).unwrap();
    drop(page);
    let port = web_of(dir.path().to_owned()).await;
    let small = web().await;
    let server = server(Browser::new().load_timeout(Duration::from_mins(1)));
    let huge = call(
        &server,
        "browser_navigate",
        json!({ "url": format!("http://127.0.0.1:{port}/huge.html") }),
    )
    .await;
    let said = text(&huge);
    let head = &said[..said.len().min(2000)];
    assert!(huge.success, "{head}");
    // Its text, cut, in place of a tree the browser would take long to build.
    assert!(
        said.contains("too many to read as an accessibility tree"),
        "{head}"
    );
    assert!(said.contains("The start of a huge page"), "{head}");
    assert!(
        said.contains("[the text is cut at 48 KiB]"),
        "{}",
        &said[said.len().saturating_sub(500)..]
    );
    assert!(
        said.len() < 64 * 1024,
        "the answer is bounded: {} bytes",
        said.len()
    );
    let next = call(
        &server,
        "browser_navigate",
        json!({ "url": format!("http://127.0.0.1:{small}/next") }),
    )
    .await;
    assert!(next.success, "{}", text(&next));
    assert!(!text(&next).contains("started again"), "{}", text(&next));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reference_whose_element_left_the_page_is_said_to_be_gone() {
    let signal = Arc::new(Signal::default());
    let port = web_with(Arc::clone(&signal)).await;
    let server = server(Browser::new());
    let opened = call(
        &server,
        "browser_navigate",
        json!({ "url": format!("http://127.0.0.1:{port}/vanishing") }),
    )
    .await;
    let button = reference(&text(&opened), "button \"Soon gone\"");
    // The page removes it after the snapshot, when told to (a wait that answers with a
    // snapshot would renew the references).
    let removed = signal.removed.notified();
    signal.go.store(true, Ordering::SeqCst);
    removed.await;
    for tool in ["browser_click", "browser_screenshot"] {
        let gone = call(&server, tool, json!({ "element": button })).await;
        assert!(!gone.success, "{tool}: {}", text(&gone));
        assert!(
            text(&gone).contains("gone from the page") && text(&gone).contains("browser_snapshot"),
            "{tool}: {}",
            text(&gone)
        );
    }
}
