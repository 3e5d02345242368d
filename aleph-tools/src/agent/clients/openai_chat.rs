//! [`OpenAiChat`]: OpenAI's Chat Completions API, and every server that speaks it (Ollama,
//! vLLM, llama.cpp's server, OpenRouter, …).

use reqwest::header::AUTHORIZATION;
use serde_json::{Map, Value, json};

use super::http::read_json;
use super::sse::read_events;
use super::{Settings, append, client, parse_chunk, stream_error};
use crate::agent::{ModelError, ModelRequest, ModelTurn, StreamDelta};
use crate::provider::Provider;

const PROVIDER: Provider = Provider::OpenAiChat;

/// A model behind OpenAI's Chat Completions API (`POST {base_url}/chat/completions`), or any
/// server that speaks it: Ollama (`http://localhost:11434/v1`), vLLM, llama.cpp's server
/// (`http://localhost:8080/v1`), OpenRouter.
///
/// The base URL is `OPENAI_BASE_URL` when set, else `https://api.openai.com/v1`; the key is
/// `OPENAI_API_KEY` when set (a local server needs none). Streams by default: text and
/// tool-call pieces reach [`AgentEvent::Delta`](crate::agent::AgentEvent::Delta) as they
/// arrive. Retries 429 and 5xx answers (waiting as `retry-after` says, else 0.5 s, 1 s,
/// 2 s) three times.
///
/// ```no_run
/// use aleph_tools::agent::clients::OpenAiChat;
/// use aleph_tools::agent::{Agent, ChatModel, Conversation};
/// use aleph_tools::prelude::*;
///
/// # async fn run(server: AlephToolServer) -> Result<(), Box<dyn std::error::Error>> {
/// let model = OpenAiChat::new("qwen3:8b")
///     .base_url("http://localhost:11434/v1")
///     .param("temperature", 0.2);
/// let mut conversation = Conversation::new(model.provider());
/// conversation.push_user("What is in notes.md?");
/// let outcome = Agent::new().run(&server, &model, &mut conversation).await?;
/// println!("{}", outcome.text);
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct OpenAiChat {
    settings: Settings,
}

client!(OpenAiChat, PROVIDER);

impl OpenAiChat {
    /// The model `model` (`gpt-4.1`, `qwen3:8b`, …), with the base URL and key from the
    /// environment.
    pub fn new(model: impl Into<String>) -> Self {
        Self {
            settings: Settings::openai(model.into()),
        }
    }

    fn body(&self, request: &ModelRequest<'_>) -> Value {
        let mut body = self.settings.body(request, true);
        if self.settings.stream {
            body.insert("stream_options".into(), json!({ "include_usage": true }));
        }
        self.settings.streamed(body)
    }

    async fn turn(&self, request: ModelRequest<'_>) -> Result<ModelTurn, ModelError> {
        let url = self.settings.url("chat/completions");
        let headers = self.settings.key_headers(AUTHORIZATION, "Bearer ")?;
        let body = self.body(&request);
        let response = self.settings.post(PROVIDER, &url, headers, &body).await?;
        let response = if self.settings.stream {
            read_stream(response, &url, self.settings.transport.limits, &request).await?
        } else {
            read_json(response, &url, PROVIDER, self.settings.transport.limits).await?
        };
        Ok(ModelTurn::from_response(PROVIDER, &response)?)
    }
}

/// Reads a streamed answer into the shape of a whole one, passing each piece on.
async fn read_stream(
    response: reqwest::Response,
    url: &str,
    limits: super::sse::Limits,
    request: &ModelRequest<'_>,
) -> Result<Value, ModelError> {
    let mut answer = Assembled::default();
    let done = read_events(response, url, PROVIDER, limits, |event| {
        if event.data.trim() == "[DONE]" {
            return Ok(true);
        }
        answer.take(&event.data, request)?;
        Ok(false)
    })
    .await?;
    // Some servers end the stream without `[DONE]`: whole once a choice finished.
    if done || answer.finish_reason.is_some() {
        Ok(answer.into_response())
    } else {
        Err(stream_error(
            PROVIDER,
            "broke off before the answer finished",
        ))
    }
}

/// A streamed answer, as far as it came.
#[derive(Default)]
struct Assembled {
    content: Option<String>,
    refusal: Option<String>,
    calls: Vec<Map<String, Value>>,
    finish_reason: Option<Value>,
    usage: Option<Value>,
}

impl Assembled {
    /// Takes one chunk (`data:` of an event).
    fn take(&mut self, data: &str, request: &ModelRequest<'_>) -> Result<(), ModelError> {
        let chunk = parse_chunk(PROVIDER, data)?;
        if let Some(usage) = chunk.get("usage").filter(|u| u.is_object()) {
            self.usage = Some(usage.clone());
        }
        let Some(choice) = chunk.pointer("/choices/0") else {
            return Ok(());
        };
        if let Some(reason) = choice.get("finish_reason").filter(|r| !r.is_null()) {
            self.finish_reason = Some(reason.clone());
        }
        let Some(delta) = choice.get("delta") else {
            return Ok(());
        };
        if let Some(text) = delta.get("content").and_then(Value::as_str) {
            self.content.get_or_insert_default().push_str(text);
            if !text.is_empty() {
                request.delta(StreamDelta::Text(text.to_owned()));
            }
        }
        if let Some(text) = delta.get("refusal").and_then(Value::as_str) {
            self.refusal.get_or_insert_default().push_str(text);
        }
        for call in delta
            .get("tool_calls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            self.take_call(call, request)?;
        }
        Ok(())
    }

    fn take_call(&mut self, call: &Value, request: &ModelRequest<'_>) -> Result<(), ModelError> {
        let index = call
            .get("index")
            .and_then(Value::as_u64)
            .and_then(|i| usize::try_from(i).ok())
            .unwrap_or(self.calls.len().saturating_sub(1));
        if index > self.calls.len() {
            return Err(stream_error(
                PROVIDER,
                format!(
                    "sent a piece of tool call {index} before call {}",
                    self.calls.len()
                ),
            ));
        }
        if index == self.calls.len() {
            self.calls.push(Map::new());
        }
        let slot = &mut self.calls[index];
        let id = call.get("id").and_then(Value::as_str);
        if let Some(id) = id {
            slot.insert("id".into(), json!(id));
        }
        let name = call.pointer("/function/name").and_then(Value::as_str);
        let function = slot
            .entry("function")
            .or_insert_with(|| json!({ "name": "", "arguments": "" }));
        if let Some(name) = name {
            append(&mut function["name"], name);
        }
        let arguments = call
            .pointer("/function/arguments")
            .and_then(Value::as_str)
            .unwrap_or_default();
        append(&mut function["arguments"], arguments);
        request.delta(StreamDelta::ToolCall {
            index,
            id: id.map(str::to_owned),
            name: name.map(str::to_owned),
            arguments: arguments.to_owned(),
        });
        Ok(())
    }

    /// The answer as a whole (not streamed) response.
    fn into_response(self) -> Value {
        let mut message = json!({ "role": "assistant", "content": self.content });
        if !self.calls.is_empty() {
            let calls: Vec<Value> = self
                .calls
                .into_iter()
                .map(|mut call| {
                    call.insert("type".into(), json!("function"));
                    Value::Object(call)
                })
                .collect();
            message["tool_calls"] = Value::Array(calls);
        }
        if let Some(refusal) = self.refusal {
            message["refusal"] = json!(refusal);
        }
        let mut response = json!({
            "choices": [{ "index": 0, "message": message, "finish_reason": self.finish_reason }]
        });
        if let Some(usage) = self.usage {
            response["usage"] = usage;
        }
        response
    }
}
