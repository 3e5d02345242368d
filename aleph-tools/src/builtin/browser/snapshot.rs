//! A page's accessibility tree as compact text: one line per element that means something
//! (its role, name and state), indented by nesting, with a reference (`[ref=e12]`) on each
//! element a call can act on.

use std::collections::HashMap;
use std::fmt::Write as _;

use serde_json::Value;

/// The most text a snapshot holds; the rest is cut, and said to be.
pub(super) const MAX_TEXT: usize = 48 * 1024;

/// The longest name or value shown.
const MAX_NAME: usize = 200;

/// Deeper than this, elements are shown at this depth.
const MAX_DEPTH: usize = 40;

/// Roles a call can act on: each gets a reference.
const ACTIONABLE: &[&str] = &[
    "button",
    "link",
    "textbox",
    "searchbox",
    "combobox",
    "listbox",
    "option",
    "checkbox",
    "radio",
    "switch",
    "slider",
    "spinbutton",
    "menuitem",
    "menuitemcheckbox",
    "menuitemradio",
    "tab",
    "treeitem",
];

/// Roles that add nothing on their own: their children are shown in their place.
const TRANSPARENT: &[&str] = &[
    "none",
    "generic",
    "presentation",
    "LabelText",
    "InlineTextBox",
    "LineBreak",
    "RootWebArea",
    "paragraph",
    "Section",
    "ListMarker",
];

/// Boolean and valued states worth showing.
const STATES: &[&str] = &[
    "checked", "selected", "expanded", "disabled", "pressed", "required", "level",
];

/// A snapshot: the text, and what each reference in it points at (a backend node id).
pub(super) struct Snapshot {
    pub(super) text: String,
    pub(super) refs: HashMap<String, i64>,
}

/// Renders the nodes of `Accessibility.getFullAXTree`.
pub(super) fn render(nodes: &[Value]) -> Snapshot {
    let by_id: HashMap<&str, &Value> = nodes
        .iter()
        .filter_map(|node| Some((node["nodeId"].as_str()?, node)))
        .collect();
    let mut out = Out {
        text: String::new(),
        refs: HashMap::new(),
        cut: 0,
    };
    let Some(root) = nodes.iter().find(|node| node.get("parentId").is_none()) else {
        return Snapshot {
            text: "(the page has no content)".to_owned(),
            refs: HashMap::new(),
        };
    };
    // Depth-first, by hand: a page can nest deeper than a stack should go.
    let mut stack: Vec<(&Value, usize, Option<String>)> = vec![(root, 0, None)];
    while let Some((node, depth, parent_name)) = stack.pop() {
        let shown = out.line(node, depth, parent_name.as_deref());
        // A child's text that repeats its parent's value (a field's) or name is not shown.
        let (next_depth, name) = if shown {
            let value = text_of(&node["value"]).filter(|value| !value.trim().is_empty());
            (
                (depth + 1).min(MAX_DEPTH),
                value.or_else(|| text_of(&node["name"])),
            )
        } else {
            (depth, parent_name)
        };
        let children = node["childIds"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default();
        for child in children.iter().rev() {
            if let Some(child) = child.as_str().and_then(|id| by_id.get(id)) {
                stack.push((child, next_depth, name.clone()));
            }
        }
    }
    if out.cut > 0 {
        let _ = write!(
            out.text,
            "[the snapshot is cut at {} KiB; {} more elements are not shown]",
            MAX_TEXT / 1024,
            out.cut
        );
    }
    if out.text.is_empty() {
        out.text.push_str("(the page has no content)\n");
    }
    Snapshot {
        text: out.text,
        refs: out.refs,
    }
}

/// A snapshot of a page's text alone (of a page too large for its tree), cut at
/// [`MAX_TEXT`] bytes.
pub(super) fn text_only(text: &str) -> Snapshot {
    let mut end = text.len().min(MAX_TEXT);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let mut shown = text[..end].to_owned();
    if end < text.len() || text.chars().count() >= MAX_TEXT {
        let _ = write!(shown, "\n[the text is cut at {} KiB]", MAX_TEXT / 1024);
    }
    Snapshot {
        text: shown,
        refs: HashMap::new(),
    }
}

struct Out {
    text: String,
    refs: HashMap<String, i64>,
    cut: usize,
}

impl Out {
    /// Writes `node`'s line; whether it has one.
    fn line(&mut self, node: &Value, depth: usize, parent_name: Option<&str>) -> bool {
        let role = text_of(&node["role"]).unwrap_or_default();
        let name = text_of(&node["name"]).unwrap_or_default();
        let ignored = node["ignored"].as_bool().unwrap_or(false);
        if ignored || (TRANSPARENT.contains(&role.as_str()) && name.trim().is_empty()) {
            return false;
        }
        if role == "RootWebArea" || role == "LabelText" || role == "InlineTextBox" {
            return false;
        }
        if role == "StaticText" {
            let text = name.trim();
            if text.is_empty() || parent_name.is_some_and(|parent| parent.trim() == text) {
                return false;
            }
            return self.push(depth, &format!("text: {}", quote(text)));
        }
        let mut line = role.clone();
        if !name.trim().is_empty() {
            let _ = write!(line, " {}", quote(name.trim()));
        }
        let backend = node["backendDOMNodeId"].as_i64();
        let focusable =
            properties(node).any(|(key, value)| key == "focusable" && value == &Value::Bool(true));
        if let Some(backend) = backend
            && (ACTIONABLE.contains(&role.as_str()) || focusable)
        {
            let reference = format!("e{backend}");
            let _ = write!(line, " [ref={reference}]");
            self.refs.insert(reference, backend);
        }
        for (key, value) in properties(node) {
            if !STATES.contains(&key) {
                continue;
            }
            match value {
                Value::Bool(true) => {
                    let _ = write!(line, " [{key}]");
                }
                Value::String(text) if text == "true" || text == "mixed" => {
                    let _ = write!(line, " [{key}={text}]");
                }
                Value::Number(number) => {
                    let _ = write!(line, " [{key}={number}]");
                }
                _ => {}
            }
        }
        if let Some(value) = text_of(&node["value"])
            && !value.is_empty()
            && value != name
        {
            let _ = write!(line, ": {}", quote(&value));
        }
        if role == "link"
            && let Some(url) = properties(node)
                .find(|(key, _)| *key == "url")
                .and_then(|(_, value)| value.as_str())
        {
            let _ = write!(line, " -> {}", clip(url));
        }
        self.push(depth, &line)
    }

    fn push(&mut self, depth: usize, line: &str) -> bool {
        if self.text.len() + line.len() > MAX_TEXT {
            self.cut += 1;
            return true;
        }
        let _ = writeln!(self.text, "{:indent$}- {line}", "", indent = depth * 2);
        true
    }
}

/// A node's properties as (name, value) pairs.
fn properties(node: &Value) -> impl Iterator<Item = (&str, &Value)> {
    node["properties"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .filter_map(|property| Some((property["name"].as_str()?, &property["value"]["value"])))
}

/// The text of an accessibility value (`{"type": "string", "value": "…"}`).
fn text_of(value: &Value) -> Option<String> {
    match &value["value"] {
        Value::String(text) => Some(text.clone()),
        Value::Number(number) => Some(number.to_string()),
        Value::Bool(flag) => Some(flag.to_string()),
        _ => None,
    }
}

fn quote(text: &str) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    format!("\"{}\"", clip(&flat).replace('"', "\\\""))
}

fn clip(text: &str) -> String {
    if text.chars().count() <= MAX_NAME {
        return text.to_owned();
    }
    let mut kept: String = text.chars().take(MAX_NAME).collect();
    kept.push('…');
    kept
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn node(id: &str, parent: Option<&str>, role: &str, name: &str, children: &[&str]) -> Value {
        let mut node = json!({
            "nodeId": id,
            "ignored": false,
            "role": { "type": "role", "value": role },
            "name": { "type": "computedString", "value": name },
            "childIds": children,
            "backendDOMNodeId": id.parse::<i64>().unwrap(),
        });
        if let Some(parent) = parent {
            node["parentId"] = json!(parent);
        }
        node
    }

    #[test]
    fn elements_get_lines_and_actionable_ones_references() {
        let mut link = node("4", Some("2"), "link", "Next page", &["5"]);
        link["properties"] =
            json!([{ "name": "url", "value": { "type": "string", "value": "http://x/next" } }]);
        let mut checkbox = node("6", Some("2"), "checkbox", "Agree", &[]);
        checkbox["properties"] =
            json!([{ "name": "checked", "value": { "type": "tristate", "value": "true" } }]);
        let nodes = vec![
            node("1", None, "RootWebArea", "Title", &["2"]),
            node("2", Some("1"), "generic", "", &["3", "4", "6", "7"]),
            node("3", Some("2"), "heading", "Hello", &["8"]),
            link,
            node("5", Some("4"), "StaticText", "Next page", &[]),
            checkbox,
            node("7", Some("2"), "StaticText", "Some \"quoted\"\n text", &[]),
            node("8", Some("3"), "StaticText", "Hello", &[]),
        ];
        let snapshot = render(&nodes);
        assert_eq!(
            snapshot.text,
            "- heading \"Hello\"\n\
             - link \"Next page\" [ref=e4] -> http://x/next\n\
             - checkbox \"Agree\" [ref=e6] [checked=true]\n\
             - text: \"Some \\\"quoted\\\" text\"\n"
        );
        assert_eq!(snapshot.refs.get("e4"), Some(&4));
        assert!(!snapshot.refs.contains_key("e3"));
    }

    #[test]
    fn a_huge_or_deep_page_is_cut_not_overflowed() {
        let count = 20_000;
        let mut nodes = vec![node("1", None, "RootWebArea", "", &["2"])];
        for id in 2..count {
            let child = (id + 1).to_string();
            let children: Vec<&str> = if id + 1 < count {
                vec![child.as_str()]
            } else {
                vec![]
            };
            nodes.push(node(
                &id.to_string(),
                Some(&(id - 1).to_string()),
                "button",
                "Press me",
                &children,
            ));
        }
        let snapshot = render(&nodes);
        assert!(
            snapshot.text.len() <= MAX_TEXT + 200,
            "{}",
            snapshot.text.len()
        );
        assert!(
            snapshot.text.ends_with("more elements are not shown]"),
            "{}",
            &snapshot.text[snapshot.text.len() - 100..]
        );
        assert!(render(&[]).text.contains("no content"));
    }
}
