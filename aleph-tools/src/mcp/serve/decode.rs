//! Reading a client's message from its JSON text, with a short way for `tools/call`.
//!
//! rmcp's message types are untagged enums over internally tagged ones, which serde reads
//! by buffering the whole message and trying each variant in turn: about four times what
//! reading a `tools/call` directly into its parameters costs. A line that is a
//! `tools/call` request is read directly; anything the short way cannot read exactly
//! (another method, escapes in the method's name, a field of the wrong type, an array where
//! an object belongs) is read the general way, so both give the same message and the same
//! errors.

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, ClientJsonRpcMessage, ClientRequest, JsonRpcRequest,
    JsonRpcVersion2_0, RequestId,
};
use serde::Deserialize;

/// A `tools/call` request as it is written; read before its method is looked at (which
/// may come after its params), so a request of another method fails here or is set aside
/// below.
#[derive(Deserialize)]
struct ToolCall<'a> {
    jsonrpc: JsonRpcVersion2_0,
    id: RequestId,
    #[serde(borrow)]
    method: &'a str,
    #[serde(deserialize_with = "object")]
    params: CallToolRequestParams,
    /// rmcp refuses a message that is a request and an answer at once.
    #[serde(default)]
    result: Present,
    #[serde(default)]
    error: Present,
}

/// Whether a key was there, whatever it held (`null` too).
#[derive(Default)]
struct Present(bool);

impl<'de> Deserialize<'de> for Present {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        serde::de::IgnoredAny::deserialize(deserializer)?;
        Ok(Self(true))
    }
}

/// A `T` read from a JSON object only. serde fills a derived struct from an array too,
/// element by element, which rmcp's messages (read by their keys) never are.
fn object<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    struct Object<T>(std::marker::PhantomData<T>);

    impl<'de, T: Deserialize<'de>> serde::de::Visitor<'de> for Object<T> {
        type Value = T;

        fn expecting(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            formatter.write_str("a JSON object")
        }

        fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
            T::deserialize(serde::de::value::MapAccessDeserializer::new(map))
        }
    }

    deserializer.deserialize_map(Object(std::marker::PhantomData))
}

/// The message `text` holds.
pub(super) fn client_message(text: &[u8]) -> serde_json::Result<ClientJsonRpcMessage> {
    match tool_call(text) {
        Some(message) => Ok(message),
        None => serde_json::from_slice(text),
    }
}

/// `text` as a `tools/call` request, read the short way; `None` when it is not one or the
/// short way cannot read it.
pub(in crate::mcp) fn tool_call(text: &[u8]) -> Option<ClientJsonRpcMessage> {
    // Any other message is read once, the general way.
    const METHOD: &[u8] = b"\"tools/call\"";
    if !text.windows(METHOD.len()).any(|window| window == METHOD) {
        return None;
    }
    let mut reader = serde_json::Deserializer::from_slice(text);
    let ToolCall {
        jsonrpc,
        id,
        method,
        mut params,
        result,
        error,
    } = object(&mut reader).ok()?;
    reader.end().ok()?;
    if method != "tools/call" || result.0 || error.0 {
        return None;
    }
    // As rmcp reads a request: its `_meta` goes to the request's extensions.
    let meta = params.meta.take();
    let mut request = CallToolRequest::new(params);
    if let Some(meta) = meta {
        request.extensions.insert(meta);
    }
    Some(ClientJsonRpcMessage::Request(JsonRpcRequest {
        jsonrpc,
        id,
        request: ClientRequest::CallToolRequest(request),
    }))
}

#[cfg(test)]
mod tests {
    use rmcp::model::{GetExtensions as _, RequestMetaObject};

    use super::*;

    /// Both ways read `text` alike: the same message, written back the same, with the same
    /// `_meta` in its extensions; or both refuse it.
    fn same_both_ways(text: &str) -> bool {
        let general = serde_json::from_str::<ClientJsonRpcMessage>(text);
        let short = client_message(text.as_bytes());
        match (general, short) {
            (Ok(general), Ok(short)) => {
                assert_eq!(
                    serde_json::to_string(&general).unwrap(),
                    serde_json::to_string(&short).unwrap(),
                    "{text}"
                );
                let meta = |message: &ClientJsonRpcMessage| match message {
                    ClientJsonRpcMessage::Request(request) => request
                        .request
                        .extensions()
                        .get::<RequestMetaObject>()
                        .cloned(),
                    _ => None,
                };
                assert_eq!(meta(&general), meta(&short), "{text}");
                tool_call(text.as_bytes()).is_some()
            }
            (Err(_), Err(_)) => false,
            (general, short) => panic!("{text}: {general:?} but {short:?}"),
        }
    }

    #[test]
    fn tool_calls_read_the_short_way_as_the_general_way_reads_them() {
        for text in [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add","arguments":{"a":2,"b":3}}}"#,
            r#"{"jsonrpc":"2.0","id":"x-1","method":"tools/call","params":{"name":"add","_meta":{"progressToken":"p"}}}"#,
            r#"{"id":7,"params":{"arguments":{},"name":"n","requestState":"s","inputResponses":{"k":{"action":"accept"}}},"method":"tools/call","jsonrpc":"2.0","extra":true}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add","_meta":null,"task":{"ttl":5}}}"#,
        ] {
            assert!(same_both_ways(text), "read the short way: {text}");
        }
    }

    #[test]
    fn what_the_short_way_cannot_read_exactly_is_read_the_general_way() {
        for text in [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools\/call","params":{"name":"add"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
            // serde would fill the parameters from an array; rmcp reads them by their keys.
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":[null,"add",{},null,null]}"#,
        ] {
            assert!(!same_both_ways(text), "read the short way: {text}");
        }
        for refused in [
            r#"{"jsonrpc":"1.0","id":1,"method":"tools/call","params":{"name":"add"}}"#,
            r#"{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"add"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":[1]}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":7}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","_meta":3}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","method":"tools/call","params":{"name":"a"}}"#,
            r#"[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"}}]"#,
            r#"["2.0",1,"tools/call",{"name":"add","arguments":{}}]"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"}} trailing"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"},"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"},"error":null}"#,
            "not json",
        ] {
            assert!(!same_both_ways(refused), "{refused}");
        }
    }
}
