//! [`Anthropic`]: Anthropic's Messages API.

use std::collections::HashMap;

use reqwest::header::{HeaderMap, HeaderValue};
use serde_json::{Map, Value, json};

use super::http::read_json;
use super::sse::read_events;
use super::{Settings, append, client, parse_event, stream_error};
use crate::agent::{ModelError, ModelRequest, ModelTurn, StreamDelta};
use crate::provider::{Provider, arguments_text};

const PROVIDER: Provider = Provider::Anthropic;

/// The beta a request with deferred tools names in `anthropic-beta`: tool search, whose
/// results refer to the deferred tools the model may now call.
const DEFERRED_TOOLS_BETA: &str = "advanced-tool-use-2025-11-20";

/// Whether a tools array holds a tool marked `defer_loading`.
fn defers_tools(tools: &Value) -> bool {
    tools.as_array().is_some_and(|tools| {
        tools
            .iter()
            .any(|tool| tool.get("defer_loading") == Some(&Value::Bool(true)))
    })
}

/// The API version sent in `anthropic-version`.
const API_VERSION: &str = "2023-06-01";

/// `max_tokens` when the client sets none (the API requires one).
const DEFAULT_MAX_TOKENS: u64 = 8192;

/// A Claude model behind Anthropic's Messages API (`POST {base_url}/v1/messages`).
///
/// The base URL is `ANTHROPIC_BASE_URL` when set, else `https://api.anthropic.com`; the key
/// is `ANTHROPIC_API_KEY`. `max_tokens`, which the API requires, is 8192 unless
/// `param("max_tokens", n)` says otherwise. Streams by default (text and tool-input pieces
/// reach [`AgentEvent::Delta`](crate::agent::AgentEvent::Delta)); thinking blocks are kept,
/// signatures included, so they go back to the model as it requires. Retries 429, 5xx and
/// 529 (overloaded) answers as `retry-after` says.
///
/// ```no_run
/// use aleph_tools::agent::clients::Anthropic;
/// use aleph_tools::agent::{Agent, ChatModel, Conversation};
/// use aleph_tools::prelude::*;
///
/// # async fn run(server: AlephToolServer) -> Result<(), Box<dyn std::error::Error>> {
/// let model = Anthropic::new("claude-sonnet-4-5").param("max_tokens", 2048);
/// let mut conversation = Conversation::new(model.provider());
/// conversation.push_user("What is in notes.md?");
/// let outcome = Agent::new().run(&server, &model, &mut conversation).await?;
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct Anthropic {
    settings: Settings,
}

client!(Anthropic, PROVIDER);

impl Anthropic {
    /// The model `model` (`claude-sonnet-4-5`, …), with the base URL and key from the
    /// environment.
    pub fn new(model: impl Into<String>) -> Self {
        Self {
            settings: Settings::from_env(
                model.into(),
                "ANTHROPIC_BASE_URL",
                "https://api.anthropic.com",
                "ANTHROPIC_API_KEY",
            ),
        }
    }

    fn body(&self, request: &ModelRequest<'_>) -> Value {
        let mut body = self.settings.body(request, true);
        body.entry("max_tokens")
            .or_insert_with(|| json!(DEFAULT_MAX_TOKENS));
        self.settings.streamed(body)
    }

    async fn turn(&self, request: ModelRequest<'_>) -> Result<ModelTurn, ModelError> {
        let url = self.settings.url("v1/messages");
        let mut headers = HeaderMap::new();
        headers.insert("anthropic-version", HeaderValue::from_static(API_VERSION));
        if let Some(value) = self.settings.key_header("")? {
            headers.insert("x-api-key", value);
        }
        if defers_tools(request.tools) {
            headers.insert(
                "anthropic-beta",
                HeaderValue::from_static(DEFERRED_TOOLS_BETA),
            );
        }
        let body = self.body(&request);
        let response = self.settings.post(PROVIDER, &url, headers, &body).await?;
        let response = if self.settings.stream {
            let mut message = Assembled::default();
            let done = read_events(
                response,
                &url,
                PROVIDER,
                self.settings.transport.limits,
                |event| message.take(&event.data, &request),
            )
            .await?;
            if !done {
                return Err(stream_error(PROVIDER, "broke off before `message_stop`"));
            }
            message.into_response()
        } else {
            read_json(response, &url, PROVIDER, self.settings.transport.limits).await?
        };
        let mut turn = ModelTurn::from_response(PROVIDER, &response)?;
        // Tool input that was cut short is an error for the model on its call (read as the
        // text it is); the turn that goes back must still hold an object, as the API
        // requires.
        let mut by_id: HashMap<String, usize> = HashMap::new();
        for (index, call) in turn.tool_calls.iter().enumerate() {
            if let Some(id) = &call.id {
                by_id.entry(id.clone()).or_insert(index);
            }
        }
        for item in &mut turn.items {
            for block in item["content"].as_array_mut().into_iter().flatten() {
                if block["type"] != "tool_use" || block["input"].is_object() {
                    continue;
                }
                let raw = std::mem::replace(&mut block["input"], json!({}));
                if let Some(&index) = block["id"].as_str().and_then(|id| by_id.get(id)) {
                    turn.tool_calls[index].arguments = arguments_text(Some(&raw));
                }
            }
        }
        Ok(turn)
    }
}

/// A streamed message, as far as it came.
#[derive(Default)]
struct Assembled {
    message: Map<String, Value>,
    blocks: Vec<Value>,
    /// The input JSON text of each `tool_use` block, by block index.
    inputs: Vec<Option<String>>,
    /// The call number of each block, by block index (`None`: not a tool-use block).
    calls: Vec<Option<usize>>,
    /// Tool-use blocks seen, to number their deltas as calls.
    tool_uses: usize,
}

impl Assembled {
    /// Takes one event's data; `Ok(true)` once the message is complete.
    fn take(&mut self, data: &str, request: &ModelRequest<'_>) -> Result<bool, ModelError> {
        let event = parse_event(PROVIDER, data)?;
        match event["type"].as_str().unwrap_or_default() {
            "message_start" => {
                if let Some(message) = event["message"].as_object() {
                    self.message.clone_from(message);
                }
            }
            "content_block_start" => {
                let index = self.index(&event)?;
                if index != self.blocks.len() {
                    return Err(stream_error(
                        PROVIDER,
                        format!("started block {index} after {} blocks", self.blocks.len()),
                    ));
                }
                let block = event["content_block"].clone();
                let tool_use = block["type"] == "tool_use";
                if tool_use {
                    request.delta(StreamDelta::ToolCall {
                        index: self.tool_uses,
                        id: block["id"].as_str().map(str::to_owned),
                        name: block["name"].as_str().map(str::to_owned),
                        arguments: String::new(),
                    });
                    self.calls.push(Some(self.tool_uses));
                    self.tool_uses += 1;
                } else {
                    self.calls.push(None);
                }
                self.blocks.push(block);
                self.inputs.push(tool_use.then(String::new));
            }
            "content_block_delta" => self.delta(&event, request)?,
            "content_block_stop" => {
                let index = self.index(&event)?;
                if let Some(Some(input)) = self.inputs.get(index) {
                    let input = if input.trim().is_empty() {
                        json!({})
                    } else {
                        // Cut short or not JSON: kept as text, which the call reports.
                        serde_json::from_str(input).unwrap_or_else(|_| json!(input))
                    };
                    self.blocks[index]["input"] = input;
                }
            }
            "message_delta" => {
                for (key, value) in event["delta"].as_object().into_iter().flatten() {
                    self.message.insert(key.clone(), value.clone());
                }
                if let Some(output) = event.pointer("/usage/output_tokens") {
                    let usage = self.message.entry("usage").or_insert_with(|| json!({}));
                    usage["output_tokens"] = output.clone();
                }
            }
            "message_stop" => return Ok(true),
            "error" => {
                let message = event
                    .pointer("/error/message")
                    .and_then(Value::as_str)
                    .unwrap_or("no message");
                return Err(stream_error(PROVIDER, format!("sent an error: {message}")));
            }
            _ => {} // `ping`, and events added later
        }
        Ok(false)
    }

    fn delta(&mut self, event: &Value, request: &ModelRequest<'_>) -> Result<(), ModelError> {
        let index = self.index(event)?;
        let delta = &event["delta"];
        let block = &mut self.blocks[index];
        let piece = |key: &str| delta[key].as_str().unwrap_or_default();
        match delta["type"].as_str().unwrap_or_default() {
            "text_delta" => {
                append(&mut block["text"], piece("text"));
                request.delta(StreamDelta::Text(piece("text").to_owned()));
            }
            "input_json_delta" => {
                if let Some(Some(input)) = self.inputs.get_mut(index) {
                    input.push_str(piece("partial_json"));
                }
                let call = self.calls.get(index).copied().flatten().unwrap_or(0);
                request.delta(StreamDelta::ToolCall {
                    index: call,
                    id: None,
                    name: None,
                    arguments: piece("partial_json").to_owned(),
                });
            }
            "thinking_delta" => append(&mut block["thinking"], piece("thinking")),
            "signature_delta" => append(&mut block["signature"], piece("signature")),
            "citations_delta" => {
                let citations = block
                    .as_object_mut()
                    .map(|b| b.entry("citations").or_insert_with(|| json!([])));
                if let Some(Value::Array(list)) = citations {
                    list.push(delta["citation"].clone());
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// The block index an event names, which must be a block started.
    fn index(&self, event: &Value) -> Result<usize, ModelError> {
        let index = event["index"]
            .as_u64()
            .and_then(|i| usize::try_from(i).ok())
            .ok_or_else(|| {
                stream_error(
                    PROVIDER,
                    format!("sent `{}` without an index", event["type"]),
                )
            })?;
        if event["type"] != "content_block_start" && index >= self.blocks.len() {
            return Err(stream_error(
                PROVIDER,
                format!(
                    "sent `{}` for block {index}, which never started",
                    event["type"].as_str().unwrap_or_default()
                ),
            ));
        }
        Ok(index)
    }

    /// The message as a whole (not streamed) response.
    fn into_response(mut self) -> Value {
        self.message
            .insert("content".into(), Value::Array(self.blocks));
        Value::Object(self.message)
    }
}
