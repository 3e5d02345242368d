//! What a message that cannot be read still says: its top-level `id`, and whether it is an
//! answer (`result` or `error`, no `method`). Found by one pass over the bytes, with no
//! recursion and a few bytes of memory, so it works on a message too deep for serde and on
//! one too long to keep (fed piece by piece as it is skipped).

use rmcp::model::RequestId;

/// The longest `id` text kept; a longer one is no id this client gave.
const MAX_ID: usize = 64;

/// Which top-level field the scan is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    Id,
    Other,
}

/// A scan of one JSON-RPC message, fed its bytes in order.
#[derive(Debug)]
#[allow(
    clippy::struct_excessive_bools,
    reason = "one flag per thing the scan is in or has seen"
)]
pub(super) struct Envelope {
    /// How many objects and arrays are open.
    depth: usize,
    in_string: bool,
    escaped: bool,
    /// At depth 1, the next string is a key.
    expect_key: bool,
    /// Reading a top-level key into `key`.
    in_key: bool,
    key: Vec<u8>,
    field: Field,
    id: Vec<u8>,
    id_unusable: bool,
    answer: bool,
    method: bool,
    /// The message is not an object, or went on after it closed.
    not_an_object: bool,
    closed: bool,
}

impl Envelope {
    pub(super) fn new() -> Self {
        Self {
            depth: 0,
            in_string: false,
            escaped: false,
            expect_key: false,
            in_key: false,
            key: Vec::new(),
            field: Field::Other,
            id: Vec::new(),
            id_unusable: false,
            answer: false,
            method: false,
            not_an_object: false,
            closed: false,
        }
    }

    /// The envelope of a whole message.
    pub(super) fn of(message: &[u8]) -> Self {
        let mut envelope = Self::new();
        envelope.feed(message);
        envelope
    }

    /// Scans the next bytes of the message.
    pub(super) fn feed(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.byte(byte);
        }
    }

    /// The id of the request this message answers, when it is an answer whose id could be
    /// read.
    pub(super) fn answer_id(&self) -> Option<RequestId> {
        if !self.answer || self.method || self.not_an_object || self.id_unusable {
            return None;
        }
        serde_json::from_slice(&self.id).ok()
    }

    fn byte(&mut self, byte: u8) {
        if self.in_string {
            self.string_byte(byte);
            return;
        }
        match byte {
            b' ' | b'\t' | b'\r' | b'\n' => {}
            b'"' => {
                self.in_string = true;
                if self.depth == 1 && self.expect_key {
                    self.expect_key = false;
                    self.in_key = true;
                    self.key.clear();
                } else {
                    self.keep(byte);
                }
            }
            b'{' | b'[' => {
                if self.closed || (self.depth == 0 && byte == b'[') {
                    self.not_an_object = true;
                }
                if self.depth == 1 && self.field == Field::Id {
                    self.id_unusable = true;
                }
                self.depth += 1;
                self.expect_key = self.depth == 1;
            }
            b'}' | b']' => {
                self.depth = self.depth.saturating_sub(1);
                if self.depth == 0 {
                    self.closed = true;
                }
            }
            b':' if self.depth == 1 => {
                self.field = match self.key.as_slice() {
                    b"id" => Field::Id,
                    b"result" | b"error" => {
                        self.answer = true;
                        Field::Other
                    }
                    b"method" => {
                        self.method = true;
                        Field::Other
                    }
                    _ => Field::Other,
                };
                if self.field == Field::Id && !self.id.is_empty() {
                    self.id_unusable = true; // two ids
                }
            }
            b',' if self.depth == 1 => {
                self.expect_key = true;
                self.field = Field::Other;
            }
            _ => {
                if self.depth == 0 {
                    self.not_an_object = true;
                }
                self.keep(byte);
            }
        }
    }

    fn string_byte(&mut self, byte: u8) {
        let end = !self.escaped && byte == b'"';
        self.escaped = !self.escaped && byte == b'\\';
        if self.in_key {
            if end {
                self.in_key = false;
            } else if self.key.len() < 8 {
                self.key.push(byte);
            } else {
                self.key.clear();
                self.key.extend_from_slice(b"(long)");
            }
        } else {
            self.keep(byte);
        }
        if end {
            self.in_string = false;
        }
    }

    /// Keeps a byte of the top-level `id` value.
    fn keep(&mut self, byte: u8) {
        if self.depth == 1 && self.field == Field::Id && !self.in_key {
            if self.id.len() < MAX_ID {
                self.id.push(byte);
            } else {
                self.id_unusable = true;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use rmcp::model::NumberOrString;

    use super::*;

    fn id(message: &str) -> Option<RequestId> {
        let whole = Envelope::of(message.as_bytes()).answer_id();
        // Fed a byte at a time, the scan finds the same.
        let mut pieces = Envelope::new();
        for byte in message.as_bytes() {
            pieces.feed(&[*byte]);
        }
        assert_eq!(pieces.answer_id(), whole, "{message}");
        whole
    }

    #[test]
    fn the_id_of_an_answer_is_found_wherever_it_is() {
        let deep = format!("{}{}", "[".repeat(500), "]".repeat(500));
        for message in [
            r#"{"jsonrpc":"2.0","id":7,"result":{}}"#.to_owned(),
            format!(
                r#"{{"result":{{"tools":[{{"inputSchema":{deep}}}]}},"jsonrpc":"2.0","id":7}}"#
            ),
            r#" { "error" : {"code":1,"message":"a \"quoted\" }"} , "id" : 7 } "#.to_owned(),
            r#"{"result":{"id":99,"s":"\"id\":5"},"id":7}"#.to_owned(),
        ] {
            assert_eq!(id(&message), Some(NumberOrString::Number(7)), "{message}");
        }
        assert_eq!(
            id(r#"{"id":"req-1","result":null}"#),
            Some(NumberOrString::String("req-1".into()))
        );
    }

    #[test]
    fn requests_notifications_and_odd_ids_have_none() {
        for message in [
            r#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/progress"}"#,
            r#"{"id":7,"result":{},"method":"x"}"#,
            r#"{"id":{"a":1},"result":{}}"#,
            r#"{"id":[7],"result":{}}"#,
            r#"{"id":7,"id":8,"result":{}}"#,
            r#"[{"id":7,"result":{}}]"#,
            r#"{"id":7}{"result":1}"#,
            r#"{"result":{}}"#,
            "not json at all",
        ] {
            assert_eq!(id(message), None, "{message}");
        }
        let long = format!(r#"{{"id":"{}","result":{{}}}}"#, "x".repeat(100));
        assert_eq!(id(&long), None);
    }
}
