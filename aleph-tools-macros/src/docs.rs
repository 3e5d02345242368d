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
    use super::description;

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
