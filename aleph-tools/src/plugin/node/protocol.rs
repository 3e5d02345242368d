//! The messages host and plugin exchange: JSON-RPC 2.0, one message per line.
//!
//! The host sends requests (`initialize`, `tools/call`, `commands/execute`, `shutdown`) and
//! the `cancel` notification; the plugin answers each request once, in any order, and may
//! send `progress` and `log` notifications. The book's "Plugins" chapter documents every
//! message; this module is the host's side of that page.

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

/// The protocol version this host speaks. `initialize` carries it, and a plugin answering
/// with another version does not load.
pub const PROTOCOL_VERSION: u32 = 1;

/// JSON-RPC error codes the protocol uses beyond the standard ones.
pub(super) mod code {
    /// The handler threw or returned a rejected promise: the message is the tool's error.
    pub(in crate::plugin::node) const HANDLER_FAILED: i64 = -32000;
    /// The call was cancelled by the host.
    pub(in crate::plugin::node) const CANCELLED: i64 = -32001;
}

/// A request, as the host writes it.
#[derive(Serialize)]
pub(super) struct Request<'a, P> {
    pub(super) jsonrpc: &'static str,
    pub(super) id: u64,
    pub(super) method: &'a str,
    pub(super) params: P,
}

/// A notification, as the host writes it.
#[derive(Serialize)]
pub(super) struct Notification<'a, P> {
    pub(super) jsonrpc: &'static str,
    pub(super) method: &'a str,
    pub(super) params: P,
}

/// Any message the plugin writes, before it is told apart.
#[derive(Deserialize)]
pub(super) struct Incoming {
    #[serde(default)]
    pub(super) id: Option<Value>,
    #[serde(default)]
    pub(super) method: Option<String>,
    #[serde(default)]
    pub(super) params: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    pub(super) result: Option<Value>,
    #[serde(default)]
    pub(super) error: Option<RpcError>,
}

/// A JSON-RPC error object.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct RpcError {
    pub(super) code: i64,
    pub(super) message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) data: Option<Value>,
}

/// `result: null` is a result; only a missing key is none.
fn present<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(deserializer).map(Some)
}

/// What a plugin's message is.
pub(super) enum Message {
    /// The answer to the host's request `id`.
    Response {
        id: u64,
        outcome: Result<Value, RpcError>,
    },
    /// A notification from the plugin.
    Notification { method: String, params: Value },
    /// A request from the plugin; the host serves none and answers each with an error.
    Request { id: Value, method: String },
}

impl Incoming {
    /// Tells the message apart, or says why it breaks the protocol.
    pub(super) fn classify(self) -> Result<Message, String> {
        match (self.method, self.id) {
            (Some(method), None) => Ok(Message::Notification {
                method,
                params: self.params.unwrap_or(Value::Null),
            }),
            (Some(method), Some(id)) => Ok(Message::Request { id, method }),
            (None, Some(id)) => {
                let id = id.as_u64().ok_or_else(|| {
                    format!("a response has the id {id}, which the host never sent")
                })?;
                let outcome = match (self.result, self.error) {
                    (Some(result), None) => Ok(result),
                    (None, Some(error)) => Err(error),
                    _ => {
                        return Err(format!(
                            "the response to request {id} must have exactly one of `result` and `error`"
                        ));
                    }
                };
                Ok(Message::Response { id, outcome })
            }
            (None, None) => Err("a message has neither `method` nor `id`".into()),
        }
    }
}

/// `initialize`'s parameters: who the plugin is and what its manifest declares.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct InitializeParams<'a> {
    pub(super) protocol_version: u32,
    pub(super) plugin: PluginRef<'a>,
    pub(super) tools: Vec<Declared<'a>>,
    pub(super) commands: Vec<Declared<'a>>,
    pub(super) hooks: Vec<DeclaredHook<'a>>,
    pub(super) services: Vec<DeclaredService<'a>>,
    pub(super) routes: Vec<DeclaredRoute<'a>>,
    pub(super) channels: Vec<DeclaredAdapter<'a>>,
    pub(super) providers: Vec<DeclaredAdapter<'a>>,
    pub(super) limits: Limits,
}

#[derive(Serialize)]
pub(super) struct PluginRef<'a> {
    pub(super) id: &'a str,
    pub(super) version: String,
}

/// A tool or command: its name and the handler the manifest names for it.
#[derive(Serialize)]
pub(super) struct Declared<'a> {
    pub(super) name: &'a str,
    pub(super) handler: &'a str,
}

#[derive(Serialize)]
pub(super) struct DeclaredHook<'a> {
    pub(super) event: String,
    pub(super) kind: String,
    pub(super) handler: &'a str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct DeclaredService<'a> {
    pub(super) name: &'a str,
    pub(super) start_handler: &'a str,
    pub(super) stop_handler: &'a str,
}

/// An HTTP route: what it answers and its handler.
#[derive(Serialize)]
pub(super) struct DeclaredRoute<'a> {
    pub(super) method: &'a str,
    pub(super) path: &'a str,
    pub(super) handler: &'a str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Limits {
    /// The largest message, in bytes, either side may write.
    pub(super) max_message: u64,
}

/// `initialize`'s result.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct InitializeResult {
    pub(super) protocol_version: u32,
    /// The declared handlers the plugin does not have, by manifest key name.
    #[serde(default)]
    pub(super) missing: Vec<String>,
    /// Input schemas for tools whose manifest gives none, by tool name.
    #[serde(default)]
    pub(super) schemas: serde_json::Map<String, Value>,
    /// What the plugin is written with, for the log.
    #[serde(default)]
    pub(super) sdk: Option<String>,
}

/// `tools/call`'s parameters.
#[derive(Serialize)]
pub(super) struct CallParams<'a> {
    pub(super) tool: &'a str,
    pub(super) handler: &'a str,
    pub(super) arguments: &'a Value,
}

/// `commands/execute`'s parameters.
#[derive(Serialize)]
pub(super) struct CommandParams<'a> {
    pub(super) command: &'a str,
    pub(super) handler: &'a str,
    pub(super) input: &'a Value,
}

/// `hooks/run`'s parameters.
#[derive(Serialize)]
pub(super) struct HookParams<'a> {
    pub(super) event: &'a str,
    pub(super) handler: &'a str,
    pub(super) context: &'a Value,
}

/// `routes/handle`'s parameters.
#[derive(Serialize)]
pub(super) struct RouteParams<'a> {
    pub(super) handler: &'a str,
    pub(super) request: &'a Value,
}

/// `chunk`'s parameters: a piece of a streaming request's answer.
#[derive(Deserialize)]
pub(super) struct ChunkParams {
    pub(super) id: u64,
    pub(super) chunk: Value,
}

/// `channels/receive`'s parameters: a message that arrived on one of the plugin's channels.
#[derive(Deserialize)]
pub(super) struct ReceiveParams {
    pub(super) channel: String,
    pub(super) message: Value,
}

/// A channel or provider: its name and its handlers, by role.
#[derive(Serialize)]
pub(super) struct DeclaredAdapter<'a> {
    pub(super) name: &'a str,
    pub(super) handlers: Vec<&'a str>,
}

/// `cancel`'s parameters: the request to give up.
#[derive(Serialize)]
pub(super) struct CancelParams {
    pub(super) id: u64,
}

/// `progress`'s parameters, from the plugin.
#[derive(Deserialize)]
pub(super) struct ProgressParams {
    pub(super) id: u64,
    pub(super) progress: f64,
    #[serde(default)]
    pub(super) total: Option<f64>,
    #[serde(default)]
    pub(super) message: Option<String>,
}

/// `log`'s parameters, from the plugin.
#[derive(Deserialize)]
pub(super) struct LogParams {
    #[serde(default)]
    pub(super) level: Option<String>,
    pub(super) message: String,
}

/// The id at the start of a message too long to read whole, so the call it answers can be
/// failed: the SDK writes `{"jsonrpc":"2.0","id":N,` first.
pub(super) fn leading_id(head: &[u8]) -> Option<u64> {
    let text = std::str::from_utf8(head).ok().or_else(|| {
        // The head was cut inside a character; the id comes before that.
        let valid = std::str::from_utf8(head).err()?.valid_up_to();
        std::str::from_utf8(&head[..valid]).ok()
    })?;
    let start = text.find("\"id\"")? + 4;
    let rest = text[start..].trim_start().strip_prefix(':')?.trim_start();
    let end = rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len());
    if end == rest.len() {
        return None;
    }
    rest[..end].parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn responses_notifications_and_requests_are_told_apart() {
        let read = |text: &str| serde_json::from_str::<Incoming>(text).unwrap().classify();
        assert!(matches!(
            read(r#"{"jsonrpc":"2.0","id":3,"result":null}"#),
            Ok(Message::Response {
                id: 3,
                outcome: Ok(Value::Null)
            })
        ));
        assert!(matches!(
            read(r#"{"jsonrpc":"2.0","id":4,"error":{"code":-32000,"message":"no"}}"#),
            Ok(Message::Response {
                id: 4,
                outcome: Err(RpcError { code: -32000, .. })
            })
        ));
        assert!(matches!(
            read(r#"{"jsonrpc":"2.0","method":"log","params":{"message":"hi"}}"#),
            Ok(Message::Notification { .. })
        ));
        assert!(matches!(
            read(r#"{"jsonrpc":"2.0","id":"x","method":"sampling"}"#),
            Ok(Message::Request { .. })
        ));
        assert!(read(r#"{"jsonrpc":"2.0","id":4}"#).is_err());
        assert!(
            read(r#"{"jsonrpc":"2.0","id":4,"result":1,"error":{"code":1,"message":""}}"#).is_err()
        );
        assert!(read(r#"{"jsonrpc":"2.0","id":-1,"result":1}"#).is_err());
        assert!(read(r"{}").is_err());
    }

    #[test]
    fn the_id_is_read_from_the_head_of_a_long_message() {
        assert_eq!(
            leading_id(br#"{"jsonrpc":"2.0","id":42,"result":"aaaa"#),
            Some(42)
        );
        assert_eq!(leading_id(br#"{"id" : 7 ,"#), Some(7));
        assert_eq!(leading_id(br#"{"jsonrpc":"2.0","result":"aaaa"#), None);
        assert_eq!(
            leading_id(br#"{"id":12"#),
            None,
            "the id may go on past the head"
        );
        let mut cut = br#"{"id":5,"result":""#.to_vec();
        cut.extend_from_slice(&"é".as_bytes()[..1]);
        assert_eq!(leading_id(&cut), Some(5));
    }
}
