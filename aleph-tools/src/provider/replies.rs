//! The messages that carry tool results back to a provider.

use serde_json::{Map, Value, json};

use super::Provider;
use super::calls::ProviderCall;
use crate::result::ToolResult;

impl Provider {
    /// The messages that answer `calls` with `results` (the same length, in call order),
    /// to append to the conversation:
    ///
    /// - OpenAI chat: one `{ "role": "tool", "tool_call_id", "content" }` per call;
    /// - OpenAI responses: one `{ "type": "function_call_output", "call_id", "output" }`
    ///   per call;
    /// - Anthropic: one user message of `tool_result` blocks, `is_error` on failures;
    /// - Gemini: one user content of `functionResponse` parts, the result under
    ///   `response.output` (structured data as is) or the message under `response.error`;
    /// - MCP: one `CallToolResult` per call (see [`ToolResult::to_mcp`]), with structured
    ///   content for object outputs only: the results alone do not say which tools list a
    ///   wrapped output schema. [`run_tool_calls`](crate::AlephToolServer::run_tool_calls)
    ///   knows, and wraps those.
    ///
    /// The text is [`ToolResult::model_text`]: the error message on failure, else the
    /// tool's text (shortened to the server's output limit), else its output as JSON.
    pub fn result_messages(self, calls: &[ProviderCall], results: &[ToolResult]) -> Vec<Value> {
        let pairs = calls.iter().zip(results);
        match self {
            Self::OpenAiChat => pairs
                .map(|(call, result)| {
                    json!({
                        "role": "tool",
                        "tool_call_id": call.id.as_deref().unwrap_or_default(),
                        "content": result.model_text(),
                    })
                })
                .collect(),
            Self::OpenAiResponses => pairs
                .map(|(call, result)| {
                    json!({
                        "type": "function_call_output",
                        "call_id": call.id.as_deref().unwrap_or_default(),
                        "output": result.model_text(),
                    })
                })
                .collect(),
            Self::Anthropic | Self::Gemini if calls.is_empty() => Vec::new(),
            Self::Anthropic => {
                let blocks: Vec<Value> = pairs
                    .map(|(call, result)| {
                        let mut block = json!({
                            "type": "tool_result",
                            "tool_use_id": call.id.as_deref().unwrap_or_default(),
                            "content": result.model_text(),
                        });
                        if !result.success {
                            block["is_error"] = Value::Bool(true);
                        }
                        block
                    })
                    .collect();
                vec![json!({ "role": "user", "content": blocks })]
            }
            Self::Gemini => {
                let parts: Vec<Value> = pairs
                    .map(|(call, result)| {
                        let mut response = Map::new();
                        match (&result.error, &result.text) {
                            (Some(error), _) => {
                                response.insert("error".into(), error.clone().into());
                            }
                            (None, Some(text)) => {
                                response.insert("output".into(), text.clone().into());
                            }
                            (None, None) => {
                                response.insert("output".into(), result.output.clone());
                            }
                        }
                        let mut function_response = Map::new();
                        function_response.insert("name".into(), call.name.clone().into());
                        if let Some(id) = &call.id {
                            function_response.insert("id".into(), id.clone().into());
                        }
                        function_response.insert("response".into(), Value::Object(response));
                        json!({ "functionResponse": function_response })
                    })
                    .collect();
                vec![json!({ "role": "user", "parts": parts })]
            }
            Self::Mcp => pairs.map(|(_, result)| result.to_mcp(false)).collect(),
        }
    }
}

impl ToolResult {
    /// The result as an MCP `CallToolResult`: `content` with one text block (the
    /// [`model_text`](Self::model_text)), `isError`, and `structuredContent` when the output
    /// is a JSON object, or always as `{ "result": output }` when `wrap_output` says the
    /// tool's output schema was wrapped that way (its root is not an object).
    pub fn to_mcp(&self, wrap_output: bool) -> Value {
        let mut out = Map::new();
        out.insert(
            "content".into(),
            json!([{ "type": "text", "text": self.model_text() }]),
        );
        if self.success {
            if wrap_output {
                out.insert("structuredContent".into(), json!({ "result": self.output }));
            } else if self.output.is_object() {
                out.insert("structuredContent".into(), self.output.clone());
            }
        }
        out.insert("isError".into(), Value::Bool(!self.success));
        Value::Object(out)
    }
}
