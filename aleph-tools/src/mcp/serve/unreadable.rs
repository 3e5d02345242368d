//! Messages a transport cannot read, and the JSON-RPC error that says why: not JSON
//! (`-32700`), nested too deep or too large (`-32600`, naming the limit), JSON that is not a
//! JSON-RPC message (`-32600`). The error carries the request's `id` when it can be found in
//! what was read, `null` otherwise, as JSON-RPC asks.

use serde_json::{Value, json};

/// The largest request read unless [`McpServer::with_max_request_size`] says otherwise.
///
/// [`McpServer::with_max_request_size`]: crate::mcp::McpServer::with_max_request_size
pub(in crate::mcp) const DEFAULT_MAX_REQUEST: usize = 8 * 1024 * 1024;

/// The deepest nesting of objects and arrays a message may have: `serde_json`'s recursion
/// limit, which rmcp reads every message with.
pub(in crate::mcp) const MAX_DEPTH: usize = 127;

/// How much of a message too large to read is searched for its `id`.
pub(in crate::mcp) const ID_SEARCHED: usize = 64 * 1024;

/// Why a message cannot be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(in crate::mcp) enum Why {
    /// It is not JSON; `serde_json`'s words for where.
    NotJson(String),
    /// Its objects and arrays nest deeper than [`MAX_DEPTH`].
    TooDeep,
    /// It is longer than this many bytes.
    TooLarge(usize),
    /// It is JSON, but not a JSON-RPC message; `serde_json`'s words for what does not fit.
    NotAMessage(String),
}

/// A message that cannot be read: why, and what it said its `id` was.
#[derive(Debug, Clone)]
pub(in crate::mcp) struct Unreadable {
    pub(in crate::mcp) why: Why,
    /// The request's `id` (a number or a string) when one was found.
    pub(in crate::mcp) id: Option<Value>,
    /// It is a notification: a whole JSON object without an `id`, which JSON-RPC says gets
    /// no answer, not even an error.
    pub(in crate::mcp) notification: bool,
}

impl Unreadable {
    /// Why `message`, which `serde_json` refused with `error`, cannot be read.
    pub(in crate::mcp) fn of(message: &[u8], error: &serde_json::Error) -> Self {
        let why = if nests_deeper_than(message, MAX_DEPTH) {
            Why::TooDeep
        } else {
            match error.classify() {
                serde_json::error::Category::Data => Why::NotAMessage(error.to_string()),
                _ => Why::NotJson(error.to_string()),
            }
        };
        Self::with_top_level(why, message)
    }

    /// `message` is longer than `limit`; `start` is what was read of it.
    pub(in crate::mcp) fn too_large(start: &[u8], limit: usize) -> Self {
        let mut unreadable = Self::with_top_level(Why::TooLarge(limit), start);
        unreadable.notification = false;
        unreadable
    }

    fn with_top_level(why: Why, message: &[u8]) -> Self {
        let top = TopLevel::scan(message);
        Self {
            why,
            id: top.id,
            notification: top.complete && !top.has_id,
        }
    }

    /// The JSON-RPC error code.
    pub(in crate::mcp) fn code(&self) -> i32 {
        match self.why {
            Why::NotJson(_) => -32700,
            Why::TooDeep | Why::TooLarge(_) | Why::NotAMessage(_) => -32600,
        }
    }

    /// What the client is told.
    pub(in crate::mcp) fn message(&self) -> String {
        match &self.why {
            Why::NotJson(error) => format!(
                "Parse error: the message is not valid JSON ({error}); send one JSON-RPC 2.0 message as a JSON object"
            ),
            Why::TooDeep => format!(
                "Invalid request: the message nests objects and arrays more than {MAX_DEPTH} levels deep, the most this server reads; flatten the arguments"
            ),
            Why::TooLarge(limit) => format!(
                "Invalid request: the message is larger than {limit} bytes ({}), the most this server reads; send less, such as a path or a URL instead of the content",
                human_bytes(*limit)
            ),
            Why::NotAMessage(error) => format!(
                "Invalid request: the message is JSON but not a JSON-RPC 2.0 request ({error})"
            ),
        }
    }

    /// The limit the message broke, for the error's `data`.
    fn data(&self) -> Option<Value> {
        match self.why {
            Why::TooDeep => Some(json!({ "maxDepth": MAX_DEPTH })),
            Why::TooLarge(limit) => Some(json!({ "maxBytes": limit })),
            Why::NotJson(_) | Why::NotAMessage(_) => None,
        }
    }

    /// The JSON-RPC error response.
    pub(in crate::mcp) fn to_response(&self) -> Value {
        let mut error = json!({ "code": self.code(), "message": self.message() });
        if let Some(data) = self.data() {
            error["data"] = data;
        }
        json!({ "jsonrpc": "2.0", "id": self.id, "error": error })
    }
}

/// `bytes` in the largest whole unit: `8 MiB`, `512 KiB`, `100 bytes`.
fn human_bytes(bytes: usize) -> String {
    const KIB: usize = 1024;
    const MIB: usize = KIB * KIB;
    if bytes >= MIB && bytes.is_multiple_of(MIB) {
        format!("{} MiB", bytes / MIB)
    } else if bytes >= KIB && bytes.is_multiple_of(KIB) {
        format!("{} KiB", bytes / KIB)
    } else {
        format!("{bytes} bytes")
    }
}

/// Whether `json`'s objects and arrays nest deeper than `limit` (brackets in strings do not
/// count). Reads the bytes once, without parsing.
pub(in crate::mcp) fn nests_deeper_than(json: &[u8], limit: usize) -> bool {
    let (mut depth, mut in_string, mut escaped) = (0_usize, false, false);
    for &byte in json {
        if in_string {
            match byte {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match byte {
            b'"' => in_string = true,
            b'{' | b'[' => {
                depth += 1;
                if depth > limit {
                    return true;
                }
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    false
}

/// What the top level of a message says, read leniently from as much of it as there is:
/// its `id`, and whether it is a whole object.
#[derive(Debug, Default, PartialEq)]
struct TopLevel {
    /// The `id`, when it is a number or a string.
    id: Option<Value>,
    /// An `id` member was there (a `null` or odd one included).
    has_id: bool,
    /// The object's closing brace was reached.
    complete: bool,
}

impl TopLevel {
    fn scan(message: &[u8]) -> Self {
        let message = message.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(message);
        let mut top = Self::default();
        let mut at = skip_space(message, 0);
        if message.get(at) != Some(&b'{') {
            return top;
        }
        at += 1;
        loop {
            at = skip_space(message, at);
            match message.get(at) {
                Some(b'}') => {
                    top.complete = true;
                    return top;
                }
                Some(b'"') => {}
                _ => return top,
            }
            let Some(key_end) = skip_string(message, at) else {
                return top;
            };
            let key = &message[at + 1..key_end - 1];
            at = skip_space(message, key_end);
            if message.get(at) != Some(&b':') {
                return top;
            }
            let start = skip_space(message, at + 1);
            let Some(end) = skip_value(message, start) else {
                return top;
            };
            if key == b"id" {
                top.has_id = true;
                top.id = serde_json::from_slice::<Value>(&message[start..end])
                    .ok()
                    .filter(|id| id.is_number() || id.is_string());
            }
            at = skip_space(message, end);
            match message.get(at) {
                Some(b',') => at += 1,
                Some(b'}') => {
                    top.complete = true;
                    return top;
                }
                _ => return top,
            }
        }
    }
}

fn skip_space(bytes: &[u8], mut at: usize) -> usize {
    while bytes
        .get(at)
        .is_some_and(|byte| matches!(byte, b' ' | b'\t' | b'\r' | b'\n'))
    {
        at += 1;
    }
    at
}

/// The end (one past the closing quote) of the string starting at `at`, if it ends.
fn skip_string(bytes: &[u8], at: usize) -> Option<usize> {
    let mut escaped = false;
    for (offset, &byte) in bytes.get(at + 1..)?.iter().enumerate() {
        match byte {
            _ if escaped => escaped = false,
            b'\\' => escaped = true,
            b'"' => return Some(at + 1 + offset + 1),
            _ => {}
        }
    }
    None
}

/// The end of the value starting at `at`, if it ends within `bytes`: strings, objects and
/// arrays to their closing mark (any depth, without recursion), anything else to the next
/// delimiter.
fn skip_value(bytes: &[u8], at: usize) -> Option<usize> {
    match bytes.get(at)? {
        b'"' => skip_string(bytes, at),
        b'{' | b'[' => {
            let mut depth = 0_usize;
            let mut next = at;
            while let Some(&byte) = bytes.get(next) {
                match byte {
                    b'"' => {
                        next = skip_string(bytes, next)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(next + 1);
                        }
                    }
                    _ => {}
                }
                next += 1;
            }
            None
        }
        _ => {
            let end = bytes[at..].iter().position(|byte| {
                matches!(byte, b',' | b'}' | b']' | b' ' | b'\t' | b'\r' | b'\n')
            })?;
            Some(at + end)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nested(depth: usize) -> String {
        format!("{}{}", "[".repeat(depth), "]".repeat(depth))
    }

    #[test]
    fn the_depth_limit_is_serde_json_s() {
        assert!(serde_json::from_str::<Value>(&nested(MAX_DEPTH)).is_ok());
        assert!(serde_json::from_str::<Value>(&nested(MAX_DEPTH + 1)).is_err());
        assert!(!nests_deeper_than(nested(MAX_DEPTH).as_bytes(), MAX_DEPTH));
        assert!(nests_deeper_than(
            nested(MAX_DEPTH + 1).as_bytes(),
            MAX_DEPTH
        ));
        assert!(!nests_deeper_than(br#"{"a": "[[[[[[[[\"[["}"#, 1));
    }

    #[test]
    fn ids_are_found_before_what_breaks() {
        let cases: &[(&[u8], Option<Value>, bool)] = &[
            (
                br#"{"jsonrpc":"2.0","id":7,"method":"x","params":{"a":[1,"}"]}}"#,
                Some(json!(7)),
                true,
            ),
            (
                br#"{"params":{"a":{"b":[{}]}},"id":"abc","#,
                Some(json!("abc")),
                false,
            ),
            (
                br#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"x":tru"#,
                Some(json!(3)),
                false,
            ),
            (
                br#"{"jsonrpc":"2.0","method":"notifications/x"}"#,
                None,
                true,
            ),
            (br#"{"id":{"nested":1}}"#, None, true),
            (b"not json", None, false),
            (br#"{"id": 12"#, None, false),
        ];
        for (message, id, complete) in cases {
            let top = TopLevel::scan(message);
            assert_eq!(&top.id, id, "{}", String::from_utf8_lossy(message));
            assert_eq!(
                top.complete,
                *complete,
                "{}",
                String::from_utf8_lossy(message)
            );
        }
    }

    #[test]
    fn errors_say_why_with_the_id() {
        let deep = format!(
            r#"{{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{{"name":"x","arguments":{{"a":{}}}}}}}"#,
            nested(300)
        );
        let error = serde_json::from_str::<Value>(&deep).unwrap_err();
        let unreadable = Unreadable::of(deep.as_bytes(), &error);
        assert_eq!(unreadable.why, Why::TooDeep);
        let response = unreadable.to_response();
        assert_eq!(response["id"], 9);
        assert_eq!(response["error"]["code"], -32600);
        assert_eq!(response["error"]["data"]["maxDepth"], MAX_DEPTH);

        let garbage = b"{\"id\": 4, oops";
        let error = serde_json::from_slice::<Value>(garbage).unwrap_err();
        let response = Unreadable::of(garbage, &error).to_response();
        assert_eq!(response["id"], 4);
        assert_eq!(response["error"]["code"], -32700);

        let large =
            Unreadable::too_large(br#"{"jsonrpc":"2.0","id":"big","params":"aaaa"#, 8 << 20);
        let response = large.to_response();
        assert_eq!(response["id"], "big");
        assert!(
            response["error"]["message"]
                .as_str()
                .unwrap()
                .contains("8 MiB")
        );
        assert_eq!(
            Value::Null,
            Unreadable::too_large(b"aaaa", 10).to_response()["id"]
        );
    }
}
