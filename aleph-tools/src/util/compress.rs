//! Shrinking tool output to fit the model's context: [`compress_snapshot`].

use serde_json::{Map, Value};

/// Shortens `output` to at most `max_chars` characters, keeping what matters most.
///
/// Despite the name, nothing is compressed in the sense of an algorithm that can be undone:
/// the output is truncated, structure-aware, and what is left out is gone (programs keep the
/// whole output in [`ToolResult::output`](crate::ToolResult::output); only the text the model
/// reads is shortened).
///
/// - Output that fits, and empty output, come back unchanged.
/// - A JSON array keeps its leading elements and ends with a string that counts the rest:
///   `[1,2,"… 98 more items (100 in all)"]`. The result is still JSON.
/// - A JSON object keeps its keys in order, shortens long values (long strings are cut,
///   nested arrays and objects are summarized by size), and when even that is too long,
///   ends with a `"…"` key counting the keys left out. The result is still JSON.
/// - Anything else is text, cut at a character boundary with a note of how much was cut.
///
/// Lengths count characters, not bytes, and no character is ever split. When `max_chars`
/// is too small for even the note, the text is cut hard at `max_chars`.
///
/// ```
/// use aleph_tools::compress_snapshot;
///
/// let list = serde_json::to_string(&(1..=100).collect::<Vec<_>>()).unwrap();
/// assert_eq!(compress_snapshot(&list, 40), r#"[1,2,3,4,"… 96 more items (100 in all)"]"#);
///
/// let text = "héllo wörld, ".repeat(10);
/// let short = compress_snapshot(&text, 40);
/// assert!(short.chars().count() <= 40);
/// assert!(short.starts_with("héllo wörld"));
/// ```
pub fn compress_snapshot(output: &str, max_chars: usize) -> String {
    if output.chars().count() <= max_chars {
        return output.to_owned();
    }
    let compressed = match serde_json::from_str::<Value>(output.trim()) {
        Ok(Value::Array(items)) => compress_array(&items, max_chars),
        Ok(Value::Object(map)) => compress_object(&map, max_chars),
        _ => None,
    };
    compressed.unwrap_or_else(|| compress_text(output, max_chars))
}

fn chars(s: &str) -> usize {
    s.chars().count()
}

fn compress_text(text: &str, max_chars: usize) -> String {
    let total = chars(text);
    // The note's length depends on the number in it; size it for the worst case.
    let note = |cut: usize| format!("… [{cut} more characters]");
    let reserve = chars(&note(total));
    if max_chars <= reserve {
        return text.chars().take(max_chars).collect();
    }
    let keep = max_chars - reserve;
    let mut out: String = text.chars().take(keep).collect();
    out.push_str(&note(total - keep));
    out
}

fn compress_array(items: &[Value], max_chars: usize) -> Option<String> {
    let total = items.len();
    let marker =
        |kept: usize| Value::String(format!("… {} more items ({total} in all)", total - kept));
    let mut kept: Vec<String> = Vec::new();
    let mut used = 2; // the brackets
    for item in items {
        let rendered = item.to_string();
        let with_item = used + chars(&rendered) + 1;
        let marker_len = chars(&marker(kept.len() + 1).to_string());
        if with_item + marker_len > max_chars {
            break;
        }
        used = with_item;
        kept.push(rendered);
    }
    kept.push(marker(kept.len()).to_string());
    let out = format!("[{}]", kept.join(","));
    (chars(&out) <= max_chars).then_some(out)
}

fn compress_object(map: &Map<String, Value>, max_chars: usize) -> Option<String> {
    let total = map.len();
    // Give every value an equal share first; long values are summarized to fit it.
    let share = (max_chars / total.max(1)).max(24);
    let mut out = Map::new();
    let mut used = 2;
    for (index, (key, value)) in map.iter().enumerate() {
        let value = summarize(value, share);
        let entry_len =
            chars(&Value::String(key.clone()).to_string()) + 1 + chars(&value.to_string()) + 1;
        let rest = total - index - 1;
        let tail_len = if rest == 0 {
            0
        } else {
            chars(&omitted(rest).to_string()) + 8
        };
        if used + entry_len + tail_len > max_chars {
            out.insert("…".to_owned(), omitted(total - index));
            break;
        }
        used += entry_len;
        out.insert(key.clone(), value);
    }
    let rendered = Value::Object(out).to_string();
    (chars(&rendered) <= max_chars).then_some(rendered)
}

fn omitted(count: usize) -> Value {
    Value::String(format!("{count} more keys"))
}

/// A value that renders in about `budget` characters.
fn summarize(value: &Value, budget: usize) -> Value {
    if chars(&value.to_string()) <= budget {
        return value.clone();
    }
    match value {
        Value::String(s) => {
            let keep = budget.saturating_sub(3);
            Value::String(format!("{}…", s.chars().take(keep).collect::<String>()))
        }
        Value::Array(items) => Value::String(format!("[{} items]", items.len())),
        Value::Object(map) => {
            let mut keys = String::new();
            for key in map.keys() {
                if chars(&keys) + chars(key) + 4 > budget {
                    keys.push_str(", …");
                    break;
                }
                if !keys.is_empty() {
                    keys.push_str(", ");
                }
                keys.push_str(key);
            }
            Value::String(format!("{{{keys}}} ({} keys)", map.len()))
        }
        other => other.clone(),
    }
}
