//! Doc comments as text for the model.

use syn::{Attribute, Expr, ExprLit, Lit, Meta};

/// Whether `attr` is a doc comment (`///` or `#[doc = "…"]`).
pub(crate) fn is_doc(attr: &Attribute) -> bool {
    attr.path().is_ident("doc")
}

/// The text of the doc comments among `attrs`, one entry per line, with the single space
/// after `///` removed. Docs that are not string literals (`#[doc = include_str!(…)]`) cannot
/// be read at compile time and are skipped.
pub(crate) fn lines(attrs: &[Attribute]) -> Vec<String> {
    attrs
        .iter()
        .filter(|a| is_doc(a))
        .filter_map(|a| match &a.meta {
            Meta::NameValue(nv) => match &nv.value {
                Expr::Lit(ExprLit {
                    lit: Lit::Str(s), ..
                }) => Some(s.value()),
                _ => None,
            },
            _ => None,
        })
        .flat_map(|text| text.split('\n').map(str::to_owned).collect::<Vec<_>>())
        .map(|line| line.strip_prefix(' ').map(str::to_owned).unwrap_or(line))
        .collect()
}

/// The doc comments among `attrs` as schemars' derive reads them, `(title, description)`:
/// each attribute's text without its first space, joined by line breaks and trimmed; a
/// first line starting with `#` is the title. `None` when a doc is not a string literal,
/// which only the derive can read.
pub(crate) fn schemars_doc(attrs: &[Attribute]) -> Option<(String, String)> {
    let mut joined = Vec::new();
    for attr in attrs.iter().filter(|a| is_doc(a)) {
        let Meta::NameValue(nv) = &attr.meta else {
            return None;
        };
        let Expr::Lit(ExprLit {
            lit: Lit::Str(text),
            ..
        }) = &nv.value
        else {
            return None;
        };
        let text = text.value();
        joined.push(text.strip_prefix(' ').map(str::to_owned).unwrap_or(text));
    }
    Some(title_and_description(&joined.join("\n")))
}

/// Splits a doc into schemars' title and description.
pub(crate) fn title_and_description(doc: &str) -> (String, String) {
    let doc = doc.trim_ascii();
    match doc.strip_prefix('#') {
        Some(_) => {
            let (first, rest) = doc.split_once('\n').unwrap_or((doc, ""));
            (
                first.trim_start_matches('#').trim_ascii().to_owned(),
                rest.trim_ascii().to_owned(),
            )
        }
        None => (String::new(), doc.to_owned()),
    }
}

/// Joins doc lines into a description: lines of one paragraph are unwrapped into one line,
/// paragraphs are separated by a blank line, and list items, headings and fenced code keep
/// their own lines.
pub(crate) fn description(lines: &[String]) -> String {
    let mut out = String::new();
    let mut in_fence = false;
    let mut paragraph_open = false;
    for raw in lines {
        let line = raw.trim_end();
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") {
            in_fence = !in_fence;
            push_own_line(&mut out, line);
            paragraph_open = false;
            continue;
        }
        if in_fence {
            push_own_line(&mut out, line);
            continue;
        }
        if trimmed.is_empty() {
            if !out.is_empty() && !out.ends_with("\n\n") {
                out.push_str("\n\n");
            }
            paragraph_open = false;
            continue;
        }
        if paragraph_open && !starts_block(trimmed) {
            out.push(' ');
            out.push_str(trimmed);
        } else {
            push_own_line(&mut out, trimmed);
            paragraph_open = true;
        }
    }
    out.trim().to_owned()
}

fn push_own_line(out: &mut String, line: &str) {
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(line);
}

fn starts_block(line: &str) -> bool {
    line.starts_with("- ")
        || line.starts_with("* ")
        || line.starts_with('#')
        || line.starts_with('>')
        || line
            .split_once(". ")
            .is_some_and(|(n, _)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

#[cfg(test)]
mod tests {
    use super::{description, title_and_description};

    #[test]
    fn a_heading_is_the_title_as_schemars_reads_it() {
        let split = title_and_description;
        assert_eq!(
            split(" Plain text \n"),
            (String::new(), "Plain text".into())
        );
        assert_eq!(
            split("\n## Heading \nBody\n\nMore\n"),
            ("Heading".into(), "Body\n\nMore".into())
        );
        assert_eq!(split("# Only"), ("Only".into(), String::new()));
        assert_eq!(split(""), (String::new(), String::new()));
    }

    fn lines(text: &str) -> Vec<String> {
        text.split('\n').map(str::to_owned).collect()
    }

    #[test]
    fn paragraphs_unwrap_and_stay_apart() {
        assert_eq!(
            description(&lines("One\ntwo.\n\nThree.")),
            "One two.\n\nThree."
        );
    }

    #[test]
    fn lists_headings_and_code_keep_their_lines() {
        let text = "Intro:\n- a\n- b\n1. first\n# Heading\n```\nlet x = 1;\n  indented\n```\nafter";
        assert_eq!(
            description(&lines(text)),
            "Intro:\n- a\n- b\n1. first\n# Heading\n```\nlet x = 1;\n  indented\n```\nafter"
        );
    }

    #[test]
    fn blank_edges_are_trimmed() {
        assert_eq!(description(&lines("\n\n  Text  \n\n")), "Text");
        assert_eq!(description(&lines("")), "");
    }
}
