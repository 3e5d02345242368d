//! `web_fetch`, `web_search` and the meta tools through the server. The web is an HTTP
//! server on loopback written here byte by byte (so it can misbehave: an endless body, a
//! slow-loris drip, invalid UTF-8); a loopback server answering in SearXNG's JSON format
//! stands in for a SearXNG instance.

use std::io;
use std::time::{Duration, Instant};

use aleph_tools::builtin::{MetaTools, SearxNg, WebFetch, WebSearch};
use aleph_tools::prelude::*;
use aleph_tools::provider::Provider;
use aleph_tools::{RegistryError, ToolErrorKind};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

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

async fn answer(mut stream: TcpStream, port: u16) -> io::Result<()> {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if stream.read(&mut byte).await? == 0 {
            return Ok(());
        }
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    let target = head.split_whitespace().nth(1).unwrap_or("/").to_owned();
    let (path, query) = target.split_once('?').unwrap_or((&target, ""));
    let reply = |status: &str, content_type: &str, body: &[u8]| {
        let mut out = format!(
            "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        )
        .into_bytes();
        out.extend_from_slice(body);
        out
    };
    let redirect = |to: String| {
        format!(
            "HTTP/1.1 302 Found\r\nLocation: {to}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        )
        .into_bytes()
    };
    let bytes = match path {
        "/page" => {
            // ISO-8859-1 declared in the header: 0xE9 is é.
            let mut body = b"<html><head><title>Caf\xE9 &amp; Bar</title></head><body><h1>Menu</h1><p>Cr\xE8me br\xFBl\xE9e</p><script>secret()</script></body></html>".to_vec();
            body.extend_from_slice(b"\n");
            reply("200 OK", "text/html; charset=ISO-8859-1", &body)
        }
        "/meta-charset" => reply(
            "200 OK",
            "text/html",
            "<html><head><meta charset=\"windows-1251\"></head><body>\u{0}</body></html>"
                .replace('\u{0}', "")
                .as_bytes()
                .iter()
                .copied()
                .chain([0xCF, 0xF0, 0xE8, 0xE2, 0xE5, 0xF2])
                .collect::<Vec<u8>>()
                .as_slice(),
        ),
        "/json" => reply("200 OK", "application/json", br#"{"answer": 42}"#),
        "/invalid-utf8" => reply(
            "200 OK",
            "text/plain; charset=utf-8",
            b"ok \xFF\xFE then more",
        ),
        "/image" => reply("200 OK", "image/png", b"\x89PNG\r\n\x1a\n\0\0\0"),
        "/missing" => reply("404 Not Found", "text/plain", b"no such page"),
        "/deep" => {
            let html = format!(
                "<html><body>{}bottom{}</body></html>",
                "<div><span>".repeat(5_000),
                "</span></div>".repeat(5_000)
            );
            reply("200 OK", "text/html; charset=utf-8", html.as_bytes())
        }
        "/redirect" => redirect(format!("http://127.0.0.1:{port}/json")),
        "/redirect-out" => redirect(format!("http://localhost:{port}/json")),
        "/loop" => redirect(format!("http://127.0.0.1:{port}/loop")),
        "/endless" => {
            stream
                .write_all(
                    b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n",
                )
                .await?;
            let chunk = vec![b'x'; 64 * 1024];
            loop {
                stream.write_all(&chunk).await?;
            }
        }
        "/slow" => {
            stream
                .write_all(
                    b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 1000\r\n\r\n",
                )
                .await?;
            loop {
                stream.write_all(b"x").await?;
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
        "/search" => searx(query),
        _ => reply("404 Not Found", "text/plain", b""),
    };
    stream.write_all(&bytes).await?;
    stream.shutdown().await
}

/// SearXNG's JSON answer (`/search?q=…&format=json`), as its documentation shows it:
/// `query`, `number_of_results` and `results` with `url`, `title`, `content`, `engine`.
fn searx(query: &str) -> Vec<u8> {
    let pairs: Vec<(String, String)> = query
        .split('&')
        .filter_map(|pair| {
            let (k, v) = pair.split_once('=')?;
            Some((k.to_owned(), v.replace('+', " ").replace("%20", " ")))
        })
        .collect();
    let get = |key: &str| pairs.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone());
    if get("format").as_deref() != Some("json") {
        return b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            .to_vec();
    }
    let q = get("q").unwrap_or_default();
    let body = if q == "garbage" {
        "<html>not json</html>".to_owned()
    } else {
        json!({
            "query": q,
            "number_of_results": 3,
            "results": (1..=3).map(|i| json!({
                "url": format!("https://example.org/{i}"),
                "title": format!("Result {i} for {q}"),
                "content": format!("Snippet {i} in {}", get("language").unwrap_or_else(|| "any".into())),
                "engine": "duckduckgo",
                "score": 1.0 / f64::from(i),
            })).chain([json!({ "title": "no url", "content": "" })]).collect::<Vec<_>>(),
            "answers": [],
            "suggestions": [],
            "unresponsive_engines": []
        })
        .to_string()
    };
    format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

fn fetcher(fetch: WebFetch) -> AlephToolServer {
    AlephToolServer::builder()
        .with_builtin(fetch)
        .build()
        .unwrap()
}

fn loopback() -> WebFetch {
    WebFetch::new()
        .allow_hosts(["connect:127.0.0.1"])
        .allow_private_addresses(true)
        .timeout(Duration::from_secs(2))
        .max_bytes(256 * 1024)
}

async fn fetch(server: &AlephToolServer, url: String) -> ToolResult {
    server.call("web_fetch", json!({ "url": url })).await
}

#[tokio::test]
async fn pages_become_text_in_their_charset() {
    let port = web().await;
    let server = fetcher(loopback());
    let page = fetch(&server, format!("http://127.0.0.1:{port}/page")).await;
    assert!(page.success, "{:?}", page.error);
    assert_eq!(page.output["title"], "Café & Bar");
    let text = page.output["text"].as_str().unwrap();
    assert!(
        text.contains("Menu") && text.contains("Crème brûlée"),
        "{text}"
    );
    assert!(!text.contains("secret()"), "{text}");
    assert_eq!(page.output["content_type"], "text/html; charset=ISO-8859-1");
    assert!(
        page.model_text()
            .starts_with("# Café & Bar\nhttp://127.0.0.1:")
    );
    let meta = fetch(&server, format!("http://127.0.0.1:{port}/meta-charset")).await;
    assert!(
        meta.output["text"].as_str().unwrap().contains("Привет"),
        "{}",
        meta.output
    );
    let json = fetch(&server, format!("http://127.0.0.1:{port}/json")).await;
    assert_eq!(json.output["text"], r#"{"answer": 42}"#);
    let raw = server
        .call(
            "web_fetch",
            json!({ "url": format!("http://127.0.0.1:{port}/page"), "raw": true }),
        )
        .await;
    assert!(raw.output["text"].as_str().unwrap().contains("<script>"));
    let invalid = fetch(&server, format!("http://127.0.0.1:{port}/invalid-utf8")).await;
    assert_eq!(invalid.output["text"], "ok \u{FFFD}\u{FFFD} then more");
}

#[tokio::test]
async fn hostile_bodies_are_bounded() {
    let port = web().await;
    let server = fetcher(loopback());
    let endless = fetch(&server, format!("http://127.0.0.1:{port}/endless")).await;
    assert!(endless.success, "{:?}", endless.error);
    assert_eq!(endless.output["truncated"], true);
    assert_eq!(endless.output["bytes"], 256 * 1024);
    let started = Instant::now();
    let slow = fetch(&server, format!("http://127.0.0.1:{port}/slow")).await;
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
    assert!(
        slow.error
            .as_deref()
            .unwrap()
            .contains("did not answer in full within 2 s"),
        "{:?}",
        slow.error
    );
    let started = Instant::now();
    let deep = fetch(&server, format!("http://127.0.0.1:{port}/deep")).await;
    assert!(deep.success, "{:?}", deep.error);
    assert_eq!(deep.output["text"], "bottom");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    let image = fetch(&server, format!("http://127.0.0.1:{port}/image")).await;
    assert!(
        image.error.as_deref().unwrap().contains("is image/png"),
        "{:?}",
        image.error
    );
    let missing = fetch(&server, format!("http://127.0.0.1:{port}/missing")).await;
    assert!(
        missing
            .error
            .as_deref()
            .unwrap()
            .contains("answered 404 Not Found: no such page"),
        "{:?}",
        missing.error
    );
    // The server keeps serving after all of them.
    assert!(
        fetch(&server, format!("http://127.0.0.1:{port}/json"))
            .await
            .success
    );
}

#[tokio::test]
async fn redirects_are_followed_and_checked_again() {
    let port = web().await;
    let server = fetcher(loopback());
    let followed = fetch(&server, format!("http://127.0.0.1:{port}/redirect")).await;
    assert_eq!(
        followed.output["url"],
        format!("http://127.0.0.1:{port}/json")
    );
    let out = fetch(&server, format!("http://127.0.0.1:{port}/redirect-out")).await;
    assert_eq!(out.error_kind, Some(ToolErrorKind::PermissionDenied));
    assert!(
        out.error
            .as_deref()
            .unwrap()
            .contains("redirected to `http://localhost:"),
        "{:?}",
        out.error
    );
    let looped = fetch(&server, format!("http://127.0.0.1:{port}/loop")).await;
    assert!(
        looped
            .error
            .as_deref()
            .unwrap()
            .contains("redirected more than 10 times")
    );
    // With every host allowed but private addresses refused, the cloud metadata address is
    // refused.
    let open = fetcher(WebFetch::new().allow_hosts(["connect:*"]));
    let metadata = fetch(&open, "http://169.254.169.254/latest/meta-data".to_owned()).await;
    assert_eq!(metadata.error_kind, Some(ToolErrorKind::PermissionDenied));
    assert!(
        metadata
            .error
            .as_deref()
            .unwrap()
            .contains("`169.254.169.254` is a link-local address")
    );
}

#[tokio::test]
async fn private_and_loopback_addresses_are_refused_by_default() {
    let port = web().await;
    let server = AlephToolServer::builder()
        .with_builtin(WebFetch::default())
        .build()
        .unwrap();
    for url in [
        format!("http://127.0.0.1:{port}/json"),
        format!("http://localhost:{port}/json"),
        format!("http://[::1]:{port}/json"),
        format!("http://[::ffff:127.0.0.1]:{port}/json"),
        "http://10.0.0.1/".to_owned(),
        "http://0.0.0.0/".to_owned(),
    ] {
        let result = fetch(&server, url.clone()).await;
        assert_eq!(
            result.error_kind,
            Some(ToolErrorKind::PermissionDenied),
            "{url}: {:?}",
            result.error
        );
        assert!(
            result.error.as_deref().unwrap().contains("address"),
            "{url}: {:?}",
            result.error
        );
    }
    for (url, expected) in [
        ("file:///etc/passwd", "only http and https"),
        ("not a url", "/url"),
        ("ftp://example.org/", "only http and https"),
    ] {
        let result = fetch(&server, url.to_owned()).await;
        assert!(
            result.error.as_deref().unwrap().contains(expected),
            "{url}: {:?}",
            result.error
        );
    }
}

#[tokio::test]
async fn host_rules_are_the_plugin_syntax_and_checked_at_build() {
    let rules = fetcher(WebFetch::new().allow_hosts(["connect:*.example.com"]));
    let refused = fetch(&rules, "https://example.org/".to_owned()).await;
    assert!(
        refused
            .error
            .as_deref()
            .unwrap()
            .contains("`example.org` is not among the allowed hosts (`*.example.com`)"),
        "{:?}",
        refused.error
    );
    let bad = AlephToolServer::builder()
        .with_builtin(WebFetch::new().allow_hosts(["example.com"]))
        .build()
        .unwrap_err();
    assert!(matches!(bad, RegistryError::InvalidSetting { .. }), "{bad}");
    assert!(
        bad.to_string().contains("must start with `connect:`"),
        "{bad}"
    );
}

#[tokio::test]
async fn search_answers_from_searxng_json() {
    let port = web().await;
    let server = AlephToolServer::builder()
        .with_builtin(WebSearch::new(SearxNg::new(format!(
            "http://127.0.0.1:{port}"
        ))))
        .build()
        .unwrap();
    let found = server
        .call(
            "web_search",
            json!({ "query": "rust tools", "max_results": 2, "language": "de" }),
        )
        .await;
    assert!(found.success, "{:?}", found.error);
    assert_eq!(
        found.output,
        json!({
            "query": "rust tools",
            "results": [
                { "title": "Result 1 for rust tools", "url": "https://example.org/1", "snippet": "Snippet 1 in de" },
                { "title": "Result 2 for rust tools", "url": "https://example.org/2", "snippet": "Snippet 2 in de" },
            ]
        })
    );
    let all = server.call("web_search", json!({ "query": "x" })).await;
    assert_eq!(
        all.output["results"].as_array().unwrap().len(),
        3,
        "the result without a URL is dropped"
    );
    let garbage = server
        .call("web_search", json!({ "query": "garbage" }))
        .await;
    assert!(
        garbage
            .error
            .as_deref()
            .unwrap()
            .contains("not SearXNG's JSON"),
        "{:?}",
        garbage.error
    );
    let definition = server.tools().get("web_search").unwrap();
    let schema = definition.output_schema.as_ref().unwrap();
    let hit = schema
        .pointer("/$defs/SearchHit")
        .or_else(|| schema.pointer("/properties/results/items"))
        .unwrap_or_else(|| panic!("{schema}"));
    assert_eq!(hit["required"], json!(["title", "url", "snippet"]));
    let down = AlephToolServer::builder()
        .with_builtin(WebSearch::new(SearxNg::new("http://127.0.0.1:9")))
        .build()
        .unwrap();
    let unreachable = down.call("web_search", json!({ "query": "x" })).await;
    assert!(
        unreachable
            .error
            .as_deref()
            .unwrap()
            .contains("could not be reached"),
        "{:?}",
        unreachable.error
    );
    let bad = AlephToolServer::builder()
        .with_builtin(WebSearch::new(SearxNg::new("not a url")))
        .build()
        .unwrap_err();
    assert!(bad.to_string().contains("is not a URL"), "{bad}");
}

/// Add two numbers.
#[tool(register = false, tags = ["math"])]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

/// Delete everything.
#[tool(register = false, tags = ["danger"])]
fn wipe() {}

#[tokio::test]
async fn meta_tools_list_what_the_filter_offers_and_give_schemas_per_provider() {
    let server = AlephToolServer::builder()
        .with_tool(AddTool)
        .with_tool(WipeTool)
        .with_builtin(MetaTools::default())
        .with_providers([Provider::Anthropic])
        .with_filter(ToolFilter::new().block("wipe"))
        .build()
        .unwrap();
    let listed = server.call("list_tools", json!({})).await;
    let names: Vec<&str> = listed.output["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["add", "get_tool_schema", "list_tools"]);
    let math = server.call("list_tools", json!({ "tag": "math" })).await;
    assert_eq!(
        math.output,
        json!({ "tools": [{ "name": "add", "summary": "Add two numbers.", "category": "builtin", "tags": ["math"] }] })
    );
    let skills = server
        .call("list_tools", json!({ "category": "skill" }))
        .await;
    assert_eq!(skills.output, json!({ "tools": [] }));
    let bad_category = server
        .call("list_tools", json!({ "category": "weather" }))
        .await;
    assert!(bad_category.error.as_deref().unwrap().contains("/category"));
    let schema = server
        .call("get_tool_schema", json!({ "name": "add" }))
        .await;
    assert_eq!(schema.output["name"], "add");
    assert_eq!(schema.output["input_schema"]["required"], json!(["a", "b"]));
    let hidden = server
        .call("get_tool_schema", json!({ "name": "wipe" }))
        .await;
    assert!(
        !hidden.success,
        "a tool the filter hides has no schema to give"
    );
    let typo = server
        .call("get_tool_schema", json!({ "name": "ad" }))
        .await;
    assert!(
        typo.error
            .as_deref()
            .unwrap()
            .contains("did you mean `add`?"),
        "{:?}",
        typo.error
    );
    let openai = AlephToolServer::builder()
        .with_tool(AddTool)
        .with_builtin(MetaTools::new().provider(Provider::OpenAiChat))
        .build()
        .unwrap();
    let entry = openai
        .call("get_tool_schema", json!({ "name": "add" }))
        .await;
    assert_eq!(entry.output["type"], "function");
    assert_eq!(entry.output["function"]["name"], "add");
}

#[tokio::test]
async fn meta_tools_list_and_describe_only_what_the_caller_may_call() {
    let server = AlephToolServer::builder()
        .with_tool(AddTool)
        .with_tool(WipeTool)
        .with_builtin(MetaTools::default())
        .with_middleware(
            aleph_tools::middleware::Permission::new().require_for_tag("admin", "danger"),
        )
        .build()
        .unwrap();
    let names = |listed: &ToolResult| -> Vec<String> {
        listed.output["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect()
    };
    let guest = server.call("list_tools", json!({})).await;
    assert_eq!(names(&guest), ["add", "get_tool_schema", "list_tools"]);
    let admin = ToolContext::new().with_capabilities(["admin"]);
    let listed = server
        .call("list_tools", json!({}))
        .context(admin.clone())
        .await;
    assert_eq!(
        names(&listed),
        ["add", "get_tool_schema", "list_tools", "wipe"]
    );
    let hidden = server
        .call("get_tool_schema", json!({ "name": "wipe" }))
        .await;
    assert!(!hidden.success, "{hidden:?}");
    let shown = server
        .call("get_tool_schema", json!({ "name": "wipe" }))
        .context(admin)
        .await;
    assert_eq!(shown.output["name"], "wipe", "{shown:?}");
}
