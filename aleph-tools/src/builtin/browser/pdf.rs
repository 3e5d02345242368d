//! `pdf_generate`: a document (Markdown, HTML or plain text) rendered by the browser on a page
//! of its own and printed to a PDF file inside the allowed directories.

use std::fmt::Write as _;
use std::time::Duration;

use base64::Engine as _;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::Browsers;
use super::page::{Page, tally};
use super::pages;
use super::tabs::DOCUMENT_URL;
use crate::builtin::files::atomic;
use crate::builtin::workspace::{self, Place};
use crate::context::{State, ToolContext};
use crate::error::{ArgumentProblem, ToolError};
use crate::result::ToolOutput;
use crate::server::ToolServerBuilder;
use crate::tool;

/// The largest document taken, in bytes.
const MAX_CONTENT: usize = 10 * 1024 * 1024;

/// The most HTML a Markdown document may make, in bytes.
const MAX_HTML: usize = 4 * MAX_CONTENT;

/// The largest PDF written, in bytes; the browser's stream is read no further.
const MAX_PDF: usize = 64 * 1024 * 1024;

/// How much of the PDF one read of the browser's stream asks for.
const READ_CHUNK: usize = 1024 * 1024;

/// Millimetres per inch: the browser takes its page sizes in inches.
const MM_PER_INCH: f64 = 25.4;

/// The stylesheet Markdown and plain text are rendered with: readable print typography, and
/// no break inside a code block, a table row or an image, nor right after a heading.
const STYLE: &str = "
@page { size: auto; }
html { font-family: 'Liberation Serif', 'DejaVu Serif', Georgia, serif; font-size: 11pt; line-height: 1.45; color: #111; }
body { margin: 0; }
h1, h2, h3, h4, h5, h6 { font-family: 'Liberation Sans', 'DejaVu Sans', Helvetica, Arial, sans-serif; line-height: 1.2; margin: 1.2em 0 0.5em; break-after: avoid; }
h1 { font-size: 1.9em; } h2 { font-size: 1.5em; } h3 { font-size: 1.2em; }
p, ul, ol, blockquote, table, pre { margin: 0 0 0.8em; }
code, pre { font-family: 'Liberation Mono', 'DejaVu Sans Mono', monospace; font-size: 0.9em; }
pre { background: #f4f4f4; padding: 0.6em 0.8em; white-space: pre-wrap; overflow-wrap: anywhere; }
pre.text { background: none; padding: 0; font-size: 1em; }
pre, tr, img, figure { break-inside: avoid; }
blockquote { margin-left: 0; padding-left: 1em; border-left: 3px solid #ccc; color: #444; }
table { border-collapse: collapse; }
th, td { border: 1px solid #bbb; padding: 0.25em 0.6em; text-align: left; vertical-align: top; }
img { max-width: 100%; }
hr { border: none; border-top: 1px solid #bbb; }
";

pub(super) fn add_to(builder: ToolServerBuilder) -> ToolServerBuilder {
    builder.with_tool(PdfGenerateTool)
}

/// What the document given to `pdf_generate` is written in.
#[derive(Debug, Clone, Copy, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum DocumentFormat {
    /// Markdown (`CommonMark` with tables, footnotes, strikethrough and task lists)
    #[default]
    Markdown,
    /// A whole HTML document or a fragment, with its own styles
    Html,
    /// Plain text, kept as written
    Text,
}

/// The paper a PDF is printed on.
#[derive(Debug, Clone, Copy, Default, Deserialize, JsonSchema)]
pub(crate) enum PageSize {
    /// 210 × 297 mm
    #[default]
    A4,
    /// 297 × 420 mm
    A3,
    /// 148 × 210 mm
    A5,
    /// 8.5 × 11 in
    Letter,
    /// 8.5 × 14 in
    Legal,
    /// 11 × 17 in
    Tabloid,
}

impl PageSize {
    /// Width and height in millimetres, upright.
    fn millimetres(self) -> (f64, f64) {
        match self {
            Self::A4 => (210.0, 297.0),
            Self::A3 => (297.0, 420.0),
            Self::A5 => (148.0, 210.0),
            Self::Letter => (215.9, 279.4),
            Self::Legal => (215.9, 355.6),
            Self::Tabloid => (279.4, 431.8),
        }
    }
}

/// Render a document (Markdown, HTML or plain text) to a PDF file. Answers with the file's
/// path and its number of pages.
#[tool(crate = crate, register = false, open_world)]
pub(crate) async fn pdf_generate(
    /// The document
    content: String,
    /// The PDF file to write, relative to the working directory or absolute; it must end in
    /// `.pdf`
    path: String,
    /// What `content` is written in
    #[arg(default)]
    format: DocumentFormat,
    /// The paper size
    #[arg(default)]
    page_size: PageSize,
    /// Turn the paper sideways
    #[arg(default = false)]
    landscape: bool,
    /// The margin on every side, in millimetres
    #[arg(default = 15.0)]
    margin_mm: f64,
    /// The document's title, kept in the PDF (Markdown and text); the file's name by default
    title: Option<String>,
    /// Replace the file when it exists
    #[arg(default = false)]
    overwrite: bool,
    browsers: State<Browsers>,
    ctx: ToolContext,
) -> Result<ToolOutput, ToolError> {
    if content.len() > MAX_CONTENT {
        return Err(ToolError::invalid_args(
            "pdf_generate",
            [ArgumentProblem::new(
                "/content",
                format!("a document of at most {} MiB", MAX_CONTENT >> 20),
            )
            .received(format!("{:.1} MiB", mib(content.len())))],
        ));
    }
    let (mut width, mut height) = page_size.millimetres();
    if landscape {
        (width, height) = (height, width);
    }
    let narrowest = width.min(height);
    if !margin_mm.is_finite() || margin_mm < 0.0 || 2.0 * margin_mm > narrowest - 20.0 {
        return Err(ToolError::invalid_args(
            "pdf_generate",
            [ArgumentProblem::new(
                "/margin_mm",
                format!(
                    "a margin from 0 to {} mm, which leaves at least 20 mm to print on",
                    ((narrowest - 20.0) / 2.0).floor()
                ),
            )
            .received(margin_mm.to_string())],
        ));
    }
    if !std::path::Path::new(&path)
        .extension()
        .is_some_and(|extension| extension.eq_ignore_ascii_case("pdf"))
    {
        return Err(ToolError::invalid_args(
            "pdf_generate",
            [ArgumentProblem::new("/path", "a file name ending in `.pdf`").received(path)],
        ));
    }
    // Where the file goes is checked before anything is rendered.
    target(&ctx, &path, overwrite).await?;

    let title = title.unwrap_or_else(|| {
        std::path::Path::new(&path)
            .file_stem()
            .map(|stem| stem.to_string_lossy().into_owned())
            .unwrap_or_default()
    });
    let html = tokio::task::spawn_blocking(move || document(&content, format, &title))
        .await
        .map_err(|error| {
            ToolError::execution(format!("the document could not be read: {error}"))
        })??;

    let _turn = browsers
        .printing
        .acquire()
        .await
        .map_err(|_| ToolError::execution("the browser tools are shutting down"))?;
    let limit = browsers.settings.load_timeout;
    // Loading and printing are bounded each; this bounds the rest with them.
    let deadline = limit * 2 + Duration::from_secs(15);
    let sheet = Sheet {
        width,
        height,
        margin: margin_mm,
    };
    let rendered = tokio::time::timeout(deadline, render(&browsers, &ctx, html, sheet, limit))
        .await
        .map_err(|_| {
            ToolError::execution(format!(
                "the document was not printed within {} s",
                deadline.as_secs()
            ))
        })?;
    let (pdf, notes) = rendered?;
    let notes = tally(notes);

    let pages = pages::count(&pdf);
    ctx.progress().report(0.9, None, Some("writing the file"));
    let bytes = pdf.len();
    let shown = write(&ctx, &path, overwrite, pdf).await?;
    let mut text = format!(
        "wrote `{shown}`: {pages} page{}, {}",
        if pages == 1 { "" } else { "s" },
        size(bytes)
    );
    for note in &notes {
        let _ = write!(text, "\nNote: {note}");
    }
    Ok(ToolOutput::new(
        text,
        json!({ "path": shown, "pages": pages, "bytes": bytes, "notes": notes }),
    ))
}

/// Renders `html` on a page of its own in the caller's browser and prints it; gives the PDF
/// and what the call should be told.
async fn render(
    browsers: &Browsers,
    ctx: &ToolContext,
    html: String,
    sheet: Sheet,
    limit: Duration,
) -> Result<(Vec<u8>, Vec<String>), ToolError> {
    let (running, restarted) = browsers.get(ctx).await?;
    ctx.progress()
        .report(0.1, None, Some("rendering the document"));
    // The page's context goes with `_context`, however the call ends.
    let (tab, _context) = running
        .print_page()
        .await
        .map_err(|error| ToolError::execution(format!("no page to render on: {error}")))?;
    let page = Page {
        running,
        tab,
        notes: restarted.into_iter().collect(),
    };
    let printed = print(&page, html, sheet, limit).await.map_err(|error| {
        if page.running.connection().crashed(&page.tab.session) {
            ToolError::execution(
                "the document crashed the browser's renderer (it may be too large, or a script on it ran away); simplify it or split it",
            )
        } else {
            error
        }
    });
    let (pdf, mut notes) = printed?;
    notes.extend(page.notes);
    notes.append(&mut page.tab.lock().notes);
    if let Some((url, why)) = page.tab.refusal() {
        notes.push(format!(
            "the document asked for `{url}`, which was refused: {why}"
        ));
    }
    Ok((pdf, notes))
}

/// The paper, in millimetres.
#[derive(Clone, Copy)]
struct Sheet {
    width: f64,
    height: f64,
    margin: f64,
}

/// Renders `html` on `page` and prints it; gives the PDF and what the call should be told.
async fn print(
    page: &Page,
    html: String,
    sheet: Sheet,
    load_limit: Duration,
) -> Result<(Vec<u8>, Vec<String>), ToolError> {
    let mut notes = Vec::new();
    page.tab.lock().document = Some(html);
    let before = *page.tab.loading.borrow();
    let opened = page
        .call("Page.navigate", json!({ "url": DOCUMENT_URL }))
        .await?;
    if let Some(error) = opened["errorText"].as_str() {
        return Err(ToolError::execution(format!(
            "the document could not be opened: {error}"
        )));
    }
    // The document's images, styles, frames and fonts, as far as they load in time.
    let mut loading = page.tab.loading.clone();
    let loaded = tokio::time::timeout(load_limit, async {
        let _ = loading
            .wait_for(|now| now.stopped > before.stopped && !now.busy)
            .await;
        page.call(
            "Runtime.evaluate",
            json!({ "expression": "document.fonts.ready.then(() => true)", "awaitPromise": true }),
        )
        .await
    })
    .await;
    if let Ok(answer) = loaded {
        answer?;
    } else {
        // Printing waits for loads to end: what has not come is given up.
        let _ = page.call("Page.stopLoading", json!({})).await;
        notes.push(format!(
            "the document was still loading after {} s; it was printed as it stood",
            load_limit.as_secs_f64()
        ));
    }
    let inches = |mm: f64| mm / MM_PER_INCH;
    let printing = page.call(
        "Page.printToPDF",
        json!({
            "paperWidth": inches(sheet.width),
            "paperHeight": inches(sheet.height),
            "marginTop": inches(sheet.margin),
            "marginBottom": inches(sheet.margin),
            "marginLeft": inches(sheet.margin),
            "marginRight": inches(sheet.margin),
            "printBackground": true,
            "generateDocumentOutline": true,
            "transferMode": "ReturnAsStream",
        }),
    );
    // A script that never yields holds the printing too.
    let printed = tokio::time::timeout(load_limit, printing)
        .await
        .map_err(|_| {
            ToolError::execution(format!(
                "the document did not print within {} s: a script on it may never end",
                load_limit.as_secs_f64()
            ))
        })??;
    let Some(stream) = printed["stream"].as_str() else {
        return Err(ToolError::execution("the browser gave no PDF"));
    };
    let read = read_stream(page, stream).await;
    let _ = page.call("IO.close", json!({ "handle": stream })).await;
    Ok((read?, notes))
}

/// Reads the browser's stream `handle` whole, up to [`MAX_PDF`].
async fn read_stream(page: &Page, handle: &str) -> Result<Vec<u8>, ToolError> {
    let mut pdf = Vec::new();
    loop {
        let chunk = page
            .call("IO.read", json!({ "handle": handle, "size": READ_CHUNK }))
            .await?;
        let data = chunk["data"].as_str().unwrap_or_default();
        if chunk["base64Encoded"].as_bool() == Some(true) {
            base64::engine::general_purpose::STANDARD
                .decode_vec(data, &mut pdf)
                .map_err(|error| {
                    ToolError::execution(format!("the browser's PDF is not base64: {error}"))
                })?;
        } else {
            pdf.extend_from_slice(data.as_bytes());
        }
        if pdf.len() > MAX_PDF {
            return Err(ToolError::execution(format!(
                "the PDF is larger than {} MiB, the most written; shorten the document",
                MAX_PDF >> 20
            )));
        }
        if chunk["eof"].as_bool() != Some(false) {
            return Ok(pdf);
        }
    }
}

/// The HTML document the browser renders, `title` kept in it (Markdown and text).
fn document(content: &str, format: DocumentFormat, title: &str) -> Result<String, ToolError> {
    let body = match format {
        DocumentFormat::Html => return Ok(content.to_owned()),
        DocumentFormat::Text => format!("<pre class=\"text\">{}</pre>", escape(content)),
        DocumentFormat::Markdown => {
            use pulldown_cmark::{Options, Parser, html};
            let options = Options::ENABLE_TABLES
                | Options::ENABLE_FOOTNOTES
                | Options::ENABLE_STRIKETHROUGH
                | Options::ENABLE_TASKLISTS;
            // A little Markdown can make a lot of HTML (a table's missing cells are filled
            // in): what it makes is bounded.
            let mut body = Bounded(String::with_capacity(content.len() * 3 / 2));
            html::write_html_fmt(&mut body, Parser::new_ext(content, options)).map_err(|_| {
                ToolError::execution(format!(
                    "the document makes more than {} MiB of HTML (tables with many empty cells?); shorten it or split it",
                    MAX_HTML >> 20
                ))
            })?;
            body.0
        }
    };
    Ok(format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>{}</title><style>{STYLE}</style></head><body>{body}</body></html>",
        escape(title)
    ))
}

/// A string that refuses to grow past [`MAX_HTML`] bytes.
struct Bounded(String);

impl std::fmt::Write for Bounded {
    fn write_str(&mut self, text: &str) -> std::fmt::Result {
        if self.0.len() + text.len() > MAX_HTML {
            return Err(std::fmt::Error);
        }
        self.0.push_str(text);
        Ok(())
    }
}

/// `text` as HTML text or an attribute's value.
fn escape(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => escaped.push_str("&amp;"),
            '<' => escaped.push_str("&lt;"),
            '>' => escaped.push_str("&gt;"),
            '"' => escaped.push_str("&quot;"),
            _ => escaped.push(c),
        }
    }
    escaped
}

/// Checks that `path` may take the PDF: inside the allowed directories, not a link, and not
/// an existing file unless `overwrite`.
async fn target(ctx: &ToolContext, path: &str, overwrite: bool) -> Result<(), ToolError> {
    let ctx = ctx.clone();
    let path = path.to_owned();
    blocking(move || place(&ctx, &path, overwrite).map(drop)).await
}

/// Writes `pdf` to `path`, whole or not at all; gives the path as the model should read it.
async fn write(
    ctx: &ToolContext,
    path: &str,
    overwrite: bool,
    pdf: Vec<u8>,
) -> Result<String, ToolError> {
    let ctx = ctx.clone();
    let path = path.to_owned();
    blocking(move || {
        let place = place(&ctx, &path, overwrite)?;
        place.make_parent()?;
        let (dir, name) = place.parent_and_name()?;
        let written = if overwrite {
            atomic::write(&dir, &name, &pdf)
        } else {
            atomic::write_new(&dir, &name, &pdf)
        };
        written.map_err(|e| {
            if e.kind() == std::io::ErrorKind::AlreadyExists {
                exists(&place)
            } else {
                place.error(&e)
            }
        })?;
        Ok(place.shown)
    })
    .await
}

/// Locates `path` for writing.
fn place(ctx: &ToolContext, path: &str, overwrite: bool) -> Result<Place, ToolError> {
    let place = workspace::locate_entry(ctx, path)?;
    if place.is_root() {
        return Err(ToolError::execution(format!(
            "`{}` is an allowed directory, not a file",
            place.shown
        )));
    }
    match place.root.symlink_metadata(&place.rel) {
        Ok(meta) if meta.is_symlink() => Err(ToolError::execution(format!(
            "`{}` is a symbolic link; a PDF is never written through a link: name the file itself",
            place.shown
        ))),
        Ok(meta) if meta.is_dir() => Err(ToolError::execution(format!(
            "`{}` is a directory; name a file in it",
            place.shown
        ))),
        Ok(_) if !overwrite => Err(exists(&place)),
        _ => Ok(place),
    }
}

fn exists(place: &Place) -> ToolError {
    ToolError::execution(format!(
        "`{}` exists; set `overwrite` to replace it, or choose another name",
        place.shown
    ))
}

async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, ToolError> + Send + 'static,
) -> Result<T, ToolError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|error| ToolError::execution(format!("the file could not be written: {error}")))?
}

#[allow(clippy::cast_precision_loss)]
fn mib(bytes: usize) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

#[allow(clippy::cast_precision_loss)]
fn size(bytes: usize) -> String {
    if bytes < 1024 * 1024 {
        format!("{:.1} KiB", bytes as f64 / 1024.0)
    } else {
        format!("{:.1} MiB", mib(bytes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_and_text_are_wrapped_in_a_styled_document_and_html_is_kept() {
        let markdown = document(
            "# Report\n\n| a | b |\n|---|---|\n| 1 | 2 |\n",
            DocumentFormat::Markdown,
            "q3 report",
        )
        .unwrap();
        assert!(markdown.contains("<title>q3 report</title>"), "{markdown}");
        assert!(markdown.contains("<h1>Report</h1>"), "{markdown}");
        assert!(markdown.contains("<table>"), "{markdown}");
        let text = document("a < b & c", DocumentFormat::Text, "<T>").unwrap();
        assert!(text.contains("<title>&lt;T&gt;</title>"), "{text}");
        assert!(text.contains("a &lt; b &amp; c"), "{text}");
        let html = "<p>as given</p>";
        assert_eq!(document(html, DocumentFormat::Html, "x").unwrap(), html);
    }

    #[test]
    fn markdown_that_would_make_too_much_html_is_refused() {
        // 256 columns and 1,024 rows of one cell each: every missing cell is filled in.
        let mut table = format!("|{}\n|{}\n", "h|".repeat(256), ":-:|".repeat(256));
        table.push_str(&"|a\n".repeat(1024));
        let tables = table.repeat(10);
        assert!(tables.len() < MAX_CONTENT);
        let error = document(&tables.repeat(2), DocumentFormat::Markdown, "t").unwrap_err();
        assert!(
            error.to_string().contains("more than 40 MiB of HTML"),
            "{error}"
        );
    }
}
