//! [`ModelTurn`]: what a model answered, read out of a provider's response, with the
//! assistant turn as the provider wants it back in the conversation.

use serde_json::{Map, Value, json};

use crate::provider::{Provider, ProviderCall, ProviderError};

/// Tokens a request used, as the provider counted them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Usage {
    /// Tokens read: the conversation, the tools, the instructions.
    pub input_tokens: u64,
    /// Tokens written.
    pub output_tokens: u64,
}

impl std::ops::AddAssign for Usage {
    fn add_assign(&mut self, other: Self) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
    }
}

/// The model's next turn: what it said, the tools it called, and the turn itself in the
/// provider's format, to append to the conversation.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ModelTurn {
    /// The assistant turn as the provider's conversation items: one assistant message
    /// (OpenAI chat, Anthropic, Gemini), or every output item (OpenAI responses).
    pub items: Vec<Value>,
    /// The text it wrote, joined; empty when it only called tools.
    pub text: String,
    /// The tool calls it made, in order; none means its answer is final.
    pub tool_calls: Vec<ProviderCall>,
    /// Tokens used, when the provider said.
    pub usage: Option<Usage>,
    /// Why it stopped, in the provider's words (`stop`, `tool_calls`, `end_turn`,
    /// `STOP`, …).
    pub stop_reason: Option<String>,
}

impl ModelTurn {
    /// Reads a whole (not streamed) response of `provider`:
    ///
    /// | provider | the turn appended | text |
    /// | --- | --- | --- |
    /// | OpenAI chat | `choices[0].message`: `role`, `content`, `tool_calls`, `refusal` | `content` |
    /// | OpenAI responses | every item of `output` | `output_text` parts of `message` items |
    /// | Anthropic | `{ "role": "assistant", "content": content }` | `text` blocks |
    /// | Gemini | `candidates[0].content` | `text` parts (not thoughts) |
    ///
    /// # Errors
    ///
    /// [`ProviderError`] when the response has not the provider's shape: no choices, no
    /// candidates (with the block reason when Gemini gives one), a tool call without its id,
    /// or MCP, which is not a model API.
    pub fn from_response(provider: Provider, response: &Value) -> Result<Self, ProviderError> {
        let fail = |problem: String| ProviderError { provider, problem };
        match provider {
            Provider::OpenAiChat => openai_chat(response, fail),
            Provider::OpenAiResponses => openai_responses(response, fail),
            Provider::Anthropic => anthropic(response, fail),
            Provider::Gemini => gemini(response, fail),
            _ => Err(fail(
                "MCP is a tool protocol, not a model API: no model turn to read".to_owned(),
            )),
        }
    }
}

fn openai_chat(
    response: &Value,
    fail: impl Fn(String) -> ProviderError,
) -> Result<ModelTurn, ProviderError> {
    let choice = response
        .get("choices")
        .and_then(Value::as_array)
        .ok_or_else(|| fail(format!("no `choices` array in {}", start_of(response))))?
        .first()
        .ok_or_else(|| fail("`choices` is empty: the model gave no answer".to_owned()))?;
    let message = choice
        .get("message")
        .filter(|m| m.is_object())
        .ok_or_else(|| fail("`choices[0]` has no `message` object".to_owned()))?;
    let tool_calls = Provider::OpenAiChat.parse_calls(message)?;
    let text = match message.get("content") {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect(),
        _ => String::new(),
    };
    let mut turn = Map::new();
    turn.insert("role".into(), json!("assistant"));
    turn.insert(
        "content".into(),
        message.get("content").cloned().unwrap_or(Value::Null),
    );
    for key in ["tool_calls", "refusal"] {
        if let Some(value) = message.get(key).filter(|v| !v.is_null()) {
            turn.insert(key.into(), value.clone());
        }
    }
    Ok(ModelTurn {
        items: vec![Value::Object(turn)],
        text,
        tool_calls,
        usage: usage(response, "prompt_tokens", "completion_tokens"),
        stop_reason: string_at(choice, "finish_reason"),
    })
}

fn openai_responses(
    response: &Value,
    fail: impl Fn(String) -> ProviderError,
) -> Result<ModelTurn, ProviderError> {
    let output = response
        .get("output")
        .and_then(Value::as_array)
        .ok_or_else(|| fail(format!("no `output` array in {}", start_of(response))))?;
    let tool_calls = Provider::OpenAiResponses.parse_calls(response)?;
    let text = output
        .iter()
        .filter(|item| item.get("type").and_then(Value::as_str) == Some("message"))
        .filter_map(|item| item.get("content").and_then(Value::as_array))
        .flatten()
        .filter(|part| part.get("type").and_then(Value::as_str) == Some("output_text"))
        .filter_map(|part| part.get("text").and_then(Value::as_str))
        .collect();
    let stop_reason = response
        .pointer("/incomplete_details/reason")
        .and_then(Value::as_str)
        .or_else(|| response.get("status").and_then(Value::as_str))
        .map(str::to_owned);
    Ok(ModelTurn {
        items: output.clone(),
        text,
        tool_calls,
        usage: usage(response, "input_tokens", "output_tokens"),
        stop_reason,
    })
}

fn anthropic(
    response: &Value,
    fail: impl Fn(String) -> ProviderError,
) -> Result<ModelTurn, ProviderError> {
    let content = response
        .get("content")
        .and_then(Value::as_array)
        .ok_or_else(|| fail(format!("no `content` array in {}", start_of(response))))?;
    let tool_calls = Provider::Anthropic.parse_calls(response)?;
    let text = content
        .iter()
        .filter(|block| block.get("type").and_then(Value::as_str) == Some("text"))
        .filter_map(|block| block.get("text").and_then(Value::as_str))
        .collect();
    Ok(ModelTurn {
        items: vec![json!({ "role": "assistant", "content": content })],
        text,
        tool_calls,
        usage: usage(response, "input_tokens", "output_tokens"),
        stop_reason: string_at(response, "stop_reason"),
    })
}

fn gemini(
    response: &Value,
    fail: impl Fn(String) -> ProviderError,
) -> Result<ModelTurn, ProviderError> {
    let candidate = response
        .get("candidates")
        .and_then(Value::as_array)
        .and_then(|c| c.first())
        .ok_or_else(|| {
            let blocked = response
                .pointer("/promptFeedback/blockReason")
                .and_then(Value::as_str);
            fail(match blocked {
                Some(reason) => format!("no candidates: the prompt was blocked ({reason})"),
                None => format!("no candidates in {}", start_of(response)),
            })
        })?;
    let content = candidate
        .get("content")
        .cloned()
        .unwrap_or_else(|| json!({ "role": "model", "parts": [] }));
    let tool_calls = Provider::Gemini.parse_calls(&content)?;
    let text = content
        .get("parts")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|part| part.get("thought").and_then(Value::as_bool) != Some(true))
        .filter_map(|part| part.get("text").and_then(Value::as_str))
        .collect();
    let usage = response.get("usageMetadata").map(|meta| Usage {
        input_tokens: meta
            .get("promptTokenCount")
            .and_then(Value::as_u64)
            .unwrap_or(0),
        output_tokens: meta
            .get("candidatesTokenCount")
            .and_then(Value::as_u64)
            .unwrap_or(0),
    });
    Ok(ModelTurn {
        items: vec![content],
        text,
        tool_calls,
        usage,
        stop_reason: string_at(candidate, "finishReason"),
    })
}

/// `usage.{input}` and `usage.{output}`, when there is a `usage` object.
fn usage(response: &Value, input: &str, output: &str) -> Option<Usage> {
    let usage = response.get("usage").filter(|u| u.is_object())?;
    let count = |key: &str| usage.get(key).and_then(Value::as_u64).unwrap_or(0);
    Some(Usage {
        input_tokens: count(input),
        output_tokens: count(output),
    })
}

fn string_at(value: &Value, key: &str) -> Option<String> {
    value.get(key).and_then(Value::as_str).map(str::to_owned)
}

/// The start of `value` as JSON, for messages.
fn start_of(value: &Value) -> String {
    let text = value.to_string();
    match text.char_indices().nth(120) {
        Some((cut, _)) => format!("`{}…`", &text[..cut]),
        None => format!("`{text}`"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turn(provider: Provider, response: &Value) -> ModelTurn {
        ModelTurn::from_response(provider, response).unwrap()
    }

    #[test]
    fn openai_responses_turns_are_every_output_item() {
        let output = json!([
            { "type": "reasoning", "id": "rs_1", "summary": [] },
            { "type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "add", "arguments": "{\"a\":1,\"b\":2}", "status": "completed" },
            { "type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
              "content": [{ "type": "output_text", "text": "Adding.", "annotations": [] }] }
        ]);
        let response = json!({ "id": "resp_1", "object": "response", "status": "completed", "output": output,
            "usage": { "input_tokens": 10, "output_tokens": 5, "total_tokens": 15 } });
        let turn = turn(Provider::OpenAiResponses, &response);
        assert_eq!(Value::Array(turn.items), output);
        assert_eq!(turn.text, "Adding.");
        assert_eq!(turn.tool_calls.len(), 1);
        assert_eq!(turn.tool_calls[0].id.as_deref(), Some("call_1"));
        assert_eq!(
            turn.usage,
            Some(Usage {
                input_tokens: 10,
                output_tokens: 5
            })
        );
        assert_eq!(turn.stop_reason.as_deref(), Some("completed"));
        let cut = json!({ "status": "incomplete", "incomplete_details": { "reason": "max_output_tokens" }, "output": [] });
        assert_eq!(
            ModelTurn::from_response(Provider::OpenAiResponses, &cut)
                .unwrap()
                .stop_reason
                .as_deref(),
            Some("max_output_tokens")
        );
    }

    #[test]
    fn anthropic_turns_are_the_content_as_an_assistant_message() {
        let content = json!([
            { "type": "thinking", "thinking": "…", "signature": "sig" },
            { "type": "text", "text": "Let me add." },
            { "type": "tool_use", "id": "toolu_1", "name": "add", "input": { "a": 1, "b": 2 } }
        ]);
        let response = json!({ "id": "msg_1", "type": "message", "role": "assistant", "model": "claude",
            "content": content, "stop_reason": "tool_use", "usage": { "input_tokens": 20, "output_tokens": 10 } });
        let turn = turn(Provider::Anthropic, &response);
        assert_eq!(
            turn.items,
            vec![json!({ "role": "assistant", "content": content })]
        );
        assert_eq!(turn.text, "Let me add.");
        assert_eq!(turn.tool_calls[0].arguments, Ok(json!({ "a": 1, "b": 2 })));
        assert_eq!(turn.stop_reason.as_deref(), Some("tool_use"));
        assert_eq!(turn.usage.map(|u| u.output_tokens), Some(10));
    }

    #[test]
    fn gemini_turns_are_the_candidate_content_and_thoughts_are_not_text() {
        let content = json!({ "role": "model", "parts": [
            { "text": "planning", "thought": true },
            { "text": "Sum: " },
            { "functionCall": { "name": "add", "args": { "a": 1, "b": 2 } } }
        ] });
        let response = json!({ "candidates": [{ "content": content, "finishReason": "STOP" }],
            "usageMetadata": { "promptTokenCount": 7, "candidatesTokenCount": 3, "totalTokenCount": 10 } });
        let turn = turn(Provider::Gemini, &response);
        assert_eq!(turn.items, vec![content]);
        assert_eq!(turn.text, "Sum: ");
        assert_eq!(turn.tool_calls[0].name, "add");
        assert_eq!(
            turn.usage,
            Some(Usage {
                input_tokens: 7,
                output_tokens: 3
            })
        );
        let blocked = json!({ "promptFeedback": { "blockReason": "SAFETY" } });
        let error = ModelTurn::from_response(Provider::Gemini, &blocked).unwrap_err();
        assert!(error.to_string().contains("blocked (SAFETY)"), "{error}");
    }

    #[test]
    fn openai_chat_turns_keep_only_what_a_request_takes_back() {
        let response = json!({ "choices": [{ "index": 0, "finish_reason": "stop", "logprobs": null,
            "message": { "role": "assistant", "content": "Hi", "refusal": null, "annotations": [] } }],
            "usage": { "prompt_tokens": 3, "completion_tokens": 1 } });
        let turn = turn(Provider::OpenAiChat, &response);
        assert_eq!(
            turn.items,
            vec![json!({ "role": "assistant", "content": "Hi" })]
        );
        assert_eq!(turn.stop_reason.as_deref(), Some("stop"));
        let mcp = ModelTurn::from_response(Provider::Mcp, &response).unwrap_err();
        assert!(mcp.to_string().contains("not a model API"), "{mcp}");
    }
}
