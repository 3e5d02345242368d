//! A fetched body as text: decoded from its charset (the header's, else the document's own
//! declaration, else a byte-order mark, else UTF-8; bytes that do not decode become U+FFFD),
//! and HTML turned into readable text.

use encoding_rs::{Encoding, UTF_8};

/// Deeper nesting than this is not given to the HTML parser, whose cost grows with the
/// square of the depth; such documents are read by stripping their tags.
const MAX_HTML_DEPTH: usize = 256;

/// The width HTML is wrapped to.
const WRAP: usize = 120;

/// The encoding to decode `body` with, and its name.
pub(super) fn encoding(content_type: Option<&str>, body: &[u8], html: bool) -> &'static Encoding {
    if let Some((bom, _)) = Encoding::for_bom(body) {
        return bom;
    }
    let declared = content_type
        .and_then(|ct| param(ct, "charset"))
        .and_then(|label| Encoding::for_label(label.as_bytes()));
    if let Some(encoding) = declared {
        return encoding;
    }
    if html && let Some(encoding) = meta_charset(&body[..body.len().min(1024)]) {
        return encoding;
    }
    UTF_8
}

/// The value of `name=` in a header such as `text/html; charset="utf-8"`.
fn param<'a>(header: &'a str, name: &str) -> Option<&'a str> {
    header.split(';').skip(1).find_map(|part| {
        let (key, value) = part.split_once('=')?;
        key.trim()
            .eq_ignore_ascii_case(name)
            .then(|| value.trim().trim_matches('"'))
    })
}

/// The charset an HTML document declares in its first bytes (`<meta charset="…">` or the
/// `http-equiv` form).
fn meta_charset(head: &[u8]) -> Option<&'static Encoding> {
    let lower: Vec<u8> = head.to_ascii_lowercase();
    let at = find(&lower, b"charset=")?;
    let rest = &head[at + b"charset=".len()..];
    let rest = rest
        .strip_prefix(b"\"")
        .or_else(|| rest.strip_prefix(b"'"))
        .unwrap_or(rest);
    let end = rest
        .iter()
        .position(|b| matches!(b, b'"' | b'\'' | b';' | b'>' | b' ' | b'/'))
        .unwrap_or(rest.len());
    Encoding::for_label(&rest[..end])
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// The text of an HTML document, Markdown-like (headings, emphasis, lists, tables, links as
/// numbered references at the end), and its title when it has one.
pub(super) fn html_to_text(html: &str) -> (String, Option<String>) {
    let title = title(html);
    let text = if nesting_depth(html) > MAX_HTML_DEPTH {
        strip_tags(html)
    } else {
        html2text::config::plain()
            .string_from_read(html.as_bytes(), WRAP)
            .unwrap_or_else(|_| strip_tags(html))
    };
    (tidy(&text), title)
}

/// The document's `<title>`, whitespace collapsed.
fn title(html: &str) -> Option<String> {
    let lower = html.to_ascii_lowercase();
    let start = lower.find("<title")?;
    let open_end = start + lower[start..].find('>')? + 1;
    let close = open_end + lower[open_end..].find("</title")?;
    let title = collapse(&decode_entities(&html[open_end..close]));
    (!title.is_empty()).then_some(title)
}

/// How deeply elements nest, estimated from the tags alone (void elements and
/// self-closing tags do not open anything).
fn nesting_depth(html: &str) -> usize {
    const VOID: [&str; 14] = [
        "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
        "track", "wbr", "!doctype",
    ];
    let (mut depth, mut deepest) = (0usize, 0usize);
    let mut rest = html;
    while let Some(at) = rest.find('<') {
        rest = &rest[at + 1..];
        let end = rest.find('>').unwrap_or(rest.len());
        let tag = &rest[..end];
        if tag.starts_with('/') {
            depth = depth.saturating_sub(1);
        } else if !tag.starts_with('!') && !tag.ends_with('/') {
            let name = &tag[..tag
                .find(|c: char| !c.is_ascii_alphanumeric())
                .unwrap_or(tag.len())];
            if !name.is_empty() && !VOID.iter().any(|v| v.eq_ignore_ascii_case(name)) {
                depth += 1;
                deepest = deepest.max(depth);
            }
        }
        rest = &rest[end.min(rest.len())..];
    }
    deepest
}

/// Text without tags, scripts or styles, for documents the parser is not given.
fn strip_tags(html: &str) -> String {
    let mut out = String::with_capacity(html.len() / 2);
    let lower = html.to_ascii_lowercase();
    let mut at = 0;
    while at < html.len() {
        let Some(open) = html[at..].find('<').map(|i| at + i) else {
            out.push_str(&html[at..]);
            break;
        };
        out.push_str(&html[at..open]);
        let skip_to = ["script", "style"].iter().find_map(|name| {
            lower[open + 1..].starts_with(name).then(|| {
                lower[open..]
                    .find(&format!("</{name}"))
                    .map_or(html.len(), |i| open + i)
            })
        });
        let from = skip_to.unwrap_or(open);
        at = html[from..].find('>').map_or(html.len(), |i| from + i + 1);
        out.push(' ');
    }
    decode_entities(&out)
}

/// The common named entities and numeric references.
fn decode_entities(text: &str) -> String {
    if !text.contains('&') {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('&') {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        let end = rest[..rest.len().min(12)].find(';');
        let decoded = end.and_then(|end| {
            let name = &rest[1..end];
            let c = match name {
                "amp" => Some('&'),
                "lt" => Some('<'),
                "gt" => Some('>'),
                "quot" => Some('"'),
                "apos" | "#39" => Some('\''),
                "nbsp" => Some(' '),
                _ => name.strip_prefix('#').and_then(|num| {
                    let code = match num.strip_prefix(['x', 'X']) {
                        Some(hex) => u32::from_str_radix(hex, 16).ok(),
                        None => num.parse().ok(),
                    };
                    code.and_then(char::from_u32)
                }),
            };
            c.map(|c| (c, end))
        });
        if let Some((c, end)) = decoded {
            out.push(c);
            rest = &rest[end + 1..];
        } else {
            out.push('&');
            rest = &rest[1..];
        }
    }
    out.push_str(rest);
    out
}

fn collapse(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Trailing spaces off every line, and no more than one blank line in a row.
fn tidy(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut blank = 0;
    for line in text.lines() {
        let line = line.trim_end();
        if line.is_empty() {
            blank += 1;
            if blank > 1 {
                continue;
            }
        } else {
            blank = 0;
        }
        out.push_str(line);
        out.push('\n');
    }
    out.trim().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charsets_come_from_the_header_the_document_or_a_bom() {
        assert_eq!(
            encoding(Some("text/html; charset=ISO-8859-1"), b"", true).name(),
            "windows-1252"
        );
        assert_eq!(
            encoding(Some("text/plain; charset=\"Shift_JIS\""), b"", false).name(),
            "Shift_JIS"
        );
        assert_eq!(
            encoding(
                Some("text/html"),
                b"<html><head><meta charset=\"koi8-r\">",
                true
            )
            .name(),
            "KOI8-R"
        );
        assert_eq!(
            encoding(
                None,
                b"<meta http-equiv=Content-Type content='text/html; charset=euc-jp'>",
                true
            )
            .name(),
            "EUC-JP"
        );
        assert_eq!(
            encoding(Some("text/html; charset=utf-8"), b"\xFF\xFEa\0", true).name(),
            "UTF-16LE"
        );
        assert_eq!(encoding(None, b"plain", false).name(), "UTF-8");
    }

    #[test]
    fn html_becomes_text_with_its_title() {
        let (text, title) = html_to_text(
            "<html><head><title> A &amp; B </title><style>p{}</style></head>\
             <body><h1>Head</h1><p>One <b>two</b>, <a href=\"https://example.org/\">three</a></p>\
             <script>var x;</script></body></html>",
        );
        assert_eq!(title.as_deref(), Some("A & B"));
        // Headings, emphasis and links are kept in a Markdown-like form, links as numbered
        // references listed at the end, so the model can follow them.
        assert!(
            text.starts_with("# Head\n\nOne **two**, [three][1]"),
            "{text}"
        );
        assert!(text.ends_with("[1]: https://example.org/"), "{text}");
        assert!(!text.contains("var x") && !text.contains("p{}"), "{text}");
    }

    #[test]
    fn deep_documents_are_stripped_instead_of_parsed() {
        let html = format!(
            "<body>{}deep &lt;text&gt;{}</body>",
            "<div>".repeat(10_000),
            "</div>".repeat(10_000)
        );
        assert_eq!(nesting_depth(&html), 10_001);
        let (text, _) = html_to_text(&html);
        assert_eq!(text, "deep <text>");
    }
}
