//! `pdf_generate` against a real headless Chromium: documents printed to PDF files that
//! poppler's `pdfinfo` and `pdftotext` (Debian's poppler-utils, which the project's setup
//! installs) read back, concurrent calls, paper sizes, and every way a call can go wrong.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use aleph_tools::ToolErrorKind;
use aleph_tools::builtin::Browser;
use aleph_tools::prelude::*;
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;

fn server(dir: &Path, browser: Browser) -> AlephToolServer {
    AlephToolServer::builder()
        .with_builtin(browser.allow_hosts(["connect:127.0.0.1"]))
        .with_allowed_paths([dir])
        .with_working_dir(dir)
        .build()
        .unwrap()
}

async fn generate(server: &AlephToolServer, args: Value) -> ToolResult {
    server.call("pdf_generate", args).await
}

fn text(result: &ToolResult) -> String {
    result.model_text().into_owned()
}

/// What `pdfinfo` says of `pdf`, line by line.
fn pdfinfo(pdf: &Path) -> String {
    let out = Command::new("pdfinfo")
        .arg(pdf)
        .output()
        .expect("pdfinfo (poppler-utils) runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn pdftotext(pdf: &Path) -> String {
    let out = Command::new("pdftotext")
        .arg(pdf)
        .arg("-")
        .output()
        .expect("pdftotext (poppler-utils) runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn info_line<'a>(info: &'a str, key: &str) -> &'a str {
    info.lines()
        .find_map(|line| line.strip_prefix(key))
        .map_or("", |rest| rest.trim_start_matches(':').trim())
}

/// A Markdown document of `pages` sections, each on a page of its own.
fn sections(pages: usize) -> String {
    (1..=pages)
        .map(|page| {
            format!(
                "# Section {page}\n\nThe {page}th part of the report, with *emphasis*, `code` and a table:\n\n\
                 | key | value |\n|---|---|\n| page | {page} |\n"
            )
        })
        .collect::<Vec<_>>()
        .join("\n<div style=\"break-after: page\"></div>\n\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_markdown_document_becomes_a_pdf_whose_pages_and_text_poppler_reads() {
    let dir = tempfile::tempdir().unwrap();
    let server = server(dir.path(), Browser::new());
    // Headings become the outline, kept as strings: one that reads like a page is not one.
    let content = format!(
        "{}\n\n## /Type /Page\n\n[/Type /Page](http://example.com/Type/Page)\n",
        sections(10)
    );
    let made = generate(
        &server,
        json!({ "content": content, "path": "out/report.pdf", "title": "Quarterly report" }),
    )
    .await;
    assert!(made.success, "{}", text(&made));
    assert!(text(&made).contains("wrote `"), "{}", text(&made));
    assert!(text(&made).contains("10 pages"), "{}", text(&made));
    let data = &made.output;
    assert_eq!(data["pages"], 10);
    let pdf = dir.path().join("out/report.pdf");
    assert_eq!(
        data["bytes"].as_u64().unwrap(),
        std::fs::metadata(&pdf).unwrap().len()
    );
    let info = pdfinfo(&pdf);
    assert_eq!(info_line(&info, "Pages"), "10", "{info}");
    assert_eq!(info_line(&info, "Title"), "Quarterly report", "{info}");
    assert!(
        info_line(&info, "Page size").contains("595"),
        "A4 by default: {info}"
    );
    let words = pdftotext(&pdf);
    for page in 1..=10 {
        assert!(words.contains(&format!("Section {page}")), "{words}");
    }
    // Pages break where the document says: section 7 starts page 7.
    let seventh = words.split('\u{c}').nth(6).unwrap_or_default();
    assert!(seventh.contains("Section 7"), "{seventh}");
    // No temporary file is left beside it.
    let left: Vec<_> = std::fs::read_dir(dir.path().join("out"))
        .unwrap()
        .map(|entry| entry.unwrap().file_name())
        .collect();
    assert_eq!(left, ["report.pdf"], "{left:?}");

    // Paper size, orientation and margins as asked; HTML and text as given.
    let letter = generate(
        &server,
        json!({
            "content": "<h1 style=\"font-family: sans-serif\">Wide</h1><p>Landscape letter</p>",
            "format": "html",
            "path": "wide.pdf",
            "page_size": "Letter",
            "landscape": true,
            "margin_mm": 0,
        }),
    )
    .await;
    assert!(letter.success, "{}", text(&letter));
    let info = pdfinfo(&dir.path().join("wide.pdf"));
    assert!(
        info_line(&info, "Page size").starts_with("792 x 612"),
        "{info}"
    );
    assert!(pdftotext(&dir.path().join("wide.pdf")).contains("Landscape letter"));
    let plain = generate(
        &server,
        json!({ "content": "a < b & c\n    kept as written", "format": "text", "path": "plain.pdf" }),
    )
    .await;
    assert!(plain.success, "{}", text(&plain));
    let words = pdftotext(&dir.path().join("plain.pdf"));
    assert!(words.contains("a < b & c"), "{words}");
    assert!(words.contains("kept as written"), "{words}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_calls_each_write_their_own_document() {
    let dir = tempfile::tempdir().unwrap();
    let server = server(dir.path(), Browser::new());
    let calls = (0..6).map(|n| {
        let server = server.clone();
        async move {
            let pages = n % 3 + 1;
            let content = format!("Document number {n}.\n\n{}", sections(pages));
            let made = generate(
                &server,
                json!({ "content": content, "path": format!("doc-{n}.pdf") }),
            )
            .await;
            (n, pages, made)
        }
    });
    // Two calls to one file at once: each writes a whole file, and one of them is what stays.
    let same = (0..2).map(|n| {
        let server = server.clone();
        async move {
            generate(
                &server,
                json!({ "content": format!("Shared writer {n}"), "path": "shared.pdf", "overwrite": true }),
            )
            .await
        }
    });
    // Two calls to one new file without `overwrite`: one writes it, the other is refused.
    let racing = (0..2).map(|n| {
        let server = server.clone();
        async move {
            generate(
                &server,
                json!({ "content": format!("Racer {n}"), "path": "race.pdf" }),
            )
            .await
        }
    });
    let (made, shared, raced) = tokio::join!(
        futures_util::future::join_all(calls),
        futures_util::future::join_all(same),
        futures_util::future::join_all(racing)
    );
    let won: Vec<_> = raced.iter().filter(|result| result.success).collect();
    assert_eq!(won.len(), 1, "{raced:?}");
    let lost = raced.iter().find(|result| !result.success).unwrap();
    assert!(text(lost).contains("set `overwrite`"), "{}", text(lost));
    for (n, pages, result) in made {
        assert!(result.success, "{n}: {}", text(&result));
        let pdf = dir.path().join(format!("doc-{n}.pdf"));
        let words = pdftotext(&pdf);
        assert!(
            words.contains(&format!("Document number {n}.")),
            "{n}: {words}"
        );
        for other in (0..6).filter(|other| *other != n) {
            assert!(
                !words.contains(&format!("Document number {other}.")),
                "{n}: {words}"
            );
        }
        assert_eq!(info_line(&pdfinfo(&pdf), "Pages"), pages.to_string());
    }
    for result in shared {
        assert!(result.success, "{}", text(&result));
    }
    let words = pdftotext(&dir.path().join("shared.pdf"));
    assert!(
        words.trim() == "Shared writer 0" || words.trim() == "Shared writer 1",
        "{words}"
    );
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 8, "no temporary file is left: {names:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paths_outside_links_existing_files_and_bad_arguments_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(
        outside.path().join("stolen.pdf"),
        dir.path().join("link.pdf"),
    )
    .unwrap();
    std::os::unix::fs::symlink(outside.path(), dir.path().join("away")).unwrap();
    std::fs::write(dir.path().join("kept.pdf"), b"the old file").unwrap();
    let server = server(dir.path(), Browser::new());

    for (path, kind, says) in [
        (
            "../escape.pdf",
            ToolErrorKind::PermissionDenied,
            "outside the allowed",
        ),
        (
            "/etc/escape.pdf",
            ToolErrorKind::PermissionDenied,
            "outside the allowed",
        ),
        (
            "away/escape.pdf",
            ToolErrorKind::PermissionDenied,
            "outside the allowed",
        ),
        ("link.pdf", ToolErrorKind::Execution, "symbolic link"),
        ("kept.pdf", ToolErrorKind::Execution, "set `overwrite`"),
        ("notes.txt", ToolErrorKind::InvalidArgs, "ending in `.pdf`"),
    ] {
        let refused = generate(&server, json!({ "content": "# Hi", "path": path })).await;
        assert_eq!(refused.error_kind, Some(kind), "{path}: {}", text(&refused));
        assert!(text(&refused).contains(says), "{path}: {}", text(&refused));
    }
    assert_eq!(
        std::fs::read(dir.path().join("kept.pdf")).unwrap(),
        b"the old file"
    );
    assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);

    for (args, says) in [
        (
            json!({ "content": "x", "path": "m.pdf", "margin_mm": 120 }),
            "/margin_mm",
        ),
        (
            json!({ "content": "x", "path": "m.pdf", "margin_mm": -1 }),
            "/margin_mm",
        ),
        (
            json!({ "content": "x", "path": "m.pdf", "page_size": "B7" }),
            "A4",
        ),
        (
            json!({ "content": "x", "path": "m.pdf", "format": "docx" }),
            "markdown",
        ),
        (json!({ "path": "m.pdf" }), "content"),
        (
            json!({ "content": "x".repeat(11 << 20), "path": "m.pdf" }),
            "10 MiB",
        ),
    ] {
        let refused = generate(&server, args.clone()).await;
        assert_eq!(
            refused.error_kind,
            Some(ToolErrorKind::InvalidArgs),
            "{}",
            text(&refused)
        );
        assert!(text(&refused).contains(says), "{says}: {}", text(&refused));
    }

    // Replaced when asked.
    let replaced = generate(
        &server,
        json!({ "content": "The new file", "path": "kept.pdf", "overwrite": true }),
    )
    .await;
    assert!(replaced.success, "{}", text(&replaced));
    assert!(pdftotext(&dir.path().join("kept.pdf")).contains("The new file"));
}

/// A web on loopback: `/pixel.png` answers, `/never` never does.
async fn web() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let Some(path) = aleph_tools_tests::request_path(&mut stream).await else {
                    return;
                };
                if path == "/never" {
                    tokio::time::sleep(Duration::from_mins(2)).await;
                    return;
                }
                let body = "<svg xmlns='http://www.w3.org/2000/svg' width='10' height='10'/>";
                let _ = stream
                    .write_all(
                        format!(
                            "HTTP/1.1 200 OK\r\nContent-Type: image/svg+xml\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                            body.len()
                        )
                        .as_bytes(),
                    )
                    .await;
            });
        }
    });
    port
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hostile_document_is_printed_without_reaching_out_opening_windows_or_hanging() {
    let dir = tempfile::tempdir().unwrap();
    let port = web().await;
    let server = server(
        dir.path(),
        Browser::new().load_timeout(Duration::from_secs(5)),
    );
    let html = format!(
        "<h1>Hostile</h1>\
         <img src=\"http://127.0.0.1:{port}/pixel.svg\">\
         <img src=\"http://127.0.0.2:{port}/secret.png\">\
         <img src=\"http://127.0.0.1:{port}/never\">\
         <script>for (let i = 0; i < 50; i++) window.open('about:blank');</script>"
    );
    let made = generate(
        &server,
        json!({ "content": html, "format": "html", "path": "hostile.pdf" }),
    )
    .await;
    assert!(made.success, "{}", text(&made));
    let said = text(&made);
    assert!(said.contains("127.0.0.2"), "the refusal is named: {said}");
    assert!(said.contains("still loading after 5 s"), "{said}");
    assert!(
        said.contains("opened a new window; it was closed (50 times)"),
        "{said}"
    );
    assert!(pdftotext(&dir.path().join("hostile.pdf")).contains("Hostile"));

    // The tabs are untouched: rendering happens on pages of their own, closed after.
    let tabs = server
        .call("browser_tabs", json!({ "action": "list" }))
        .await;
    assert!(tabs.success, "{}", text(&tabs));
    assert!(!text(&tabs).contains("document.invalid"), "{}", text(&tabs));
    assert!(
        tabs.output["tabs"].as_array().unwrap().len() <= 1,
        "only the tab the browser starts with, no popup: {}",
        text(&tabs)
    );

    // A document that never stops running still gets printed, and the server serves on.
    let busy = generate(
        &server,
        json!({
            "content": "<p>Spinning</p><script>setTimeout(() => { for (;;) {} }, 0)</script>",
            "format": "html",
            "path": "busy.pdf",
        }),
    )
    .await;
    assert!(!busy.success, "{}", text(&busy));
    assert!(
        text(&busy).contains("did not print within 5 s"),
        "{}",
        text(&busy)
    );
    assert!(!dir.path().join("busy.pdf").exists());
    let after = generate(
        &server,
        json!({ "content": "Still here", "path": "after.pdf" }),
    )
    .await;
    assert!(after.success, "{}", text(&after));
}
