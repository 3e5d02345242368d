//! [`Gemini`]: Google's Gemini API, `generateContent` and `streamGenerateContent`.

use serde_json::{Map, Value, json};

use super::http::read_json;
use super::sse::read_events;
use super::{Settings, append, client, parse_chunk, stream_error};
use crate::agent::{ModelError, ModelRequest, ModelTurn, StreamDelta};
use crate::provider::Provider;

const PROVIDER: Provider = Provider::Gemini;

/// A Gemini model behind the Gemini API (`POST {base_url}/v1beta/models/{model}:generateContent`,
/// or `:streamGenerateContent?alt=sse` when streaming).
///
/// The base URL is `GEMINI_BASE_URL` when set, else
/// `https://generativelanguage.googleapis.com`; the key is `GEMINI_API_KEY`, sent as
/// `x-goog-api-key`. Settings go in `param("generationConfig", json!({ … }))`. Streams by
/// default: text reaches [`AgentEvent::Delta`](crate::agent::AgentEvent::Delta) as it
/// arrives; function calls come whole. Retries 429 and 5xx answers as `retry-after` says.
///
/// ```no_run
/// use aleph_tools::agent::clients::Gemini;
/// use aleph_tools::agent::{Agent, ChatModel, Conversation};
/// use aleph_tools::prelude::*;
///
/// # async fn run(server: AlephToolServer) -> Result<(), Box<dyn std::error::Error>> {
/// let model = Gemini::new("gemini-2.5-flash");
/// let mut conversation = Conversation::new(model.provider());
/// conversation.push_user("What is in notes.md?");
/// let outcome = Agent::new().run(&server, &model, &mut conversation).await?;
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct Gemini {
    settings: Settings,
}

client!(Gemini, PROVIDER);

impl Gemini {
    /// The model `model` (`gemini-2.5-flash`, …), with the base URL and key from the
    /// environment.
    pub fn new(model: impl Into<String>) -> Self {
        Self {
            settings: Settings::from_env(
                model.into(),
                "GEMINI_BASE_URL",
                "https://generativelanguage.googleapis.com",
                "GEMINI_API_KEY",
            ),
        }
    }

    async fn turn(&self, request: ModelRequest<'_>) -> Result<ModelTurn, ModelError> {
        let model = &self.settings.model;
        let url = if self.settings.stream {
            self.settings.url(&format!(
                "v1beta/models/{model}:streamGenerateContent?alt=sse"
            ))
        } else {
            self.settings
                .url(&format!("v1beta/models/{model}:generateContent"))
        };
        let headers = self.settings.key_headers("x-goog-api-key", "")?;
        // The model is in the URL.
        let body = Value::Object(self.settings.body(&request, false));
        let response = self.settings.post(PROVIDER, &url, headers, &body).await?;
        let response = if self.settings.stream {
            let mut answer = Assembled::default();
            read_events(
                response,
                &url,
                PROVIDER,
                self.settings.transport.limits,
                |event| {
                    answer.take(&event.data, &request)?;
                    Ok(false)
                },
            )
            .await?;
            answer.into_response()?
        } else {
            read_json(response, &url, PROVIDER, self.settings.transport.limits).await?
        };
        Ok(ModelTurn::from_response(PROVIDER, &response)?)
    }
}

/// A streamed answer, as far as it came: each chunk is a response holding the next parts.
#[derive(Default)]
struct Assembled {
    parts: Vec<Value>,
    finish_reason: Option<Value>,
    usage: Option<Value>,
    blocked: Option<Value>,
    chunks: usize,
    /// The function-call parts so far.
    calls: usize,
}

impl Assembled {
    fn take(&mut self, data: &str, request: &ModelRequest<'_>) -> Result<(), ModelError> {
        let chunk = parse_chunk(PROVIDER, data)?;
        self.chunks += 1;
        if let Some(usage) = chunk.get("usageMetadata") {
            self.usage = Some(usage.clone());
        }
        if let Some(feedback) = chunk.get("promptFeedback") {
            self.blocked = Some(feedback.clone());
        }
        let Some(candidate) = chunk.pointer("/candidates/0") else {
            return Ok(());
        };
        if let Some(reason) = candidate.get("finishReason") {
            self.finish_reason = Some(reason.clone());
        }
        for part in candidate
            .pointer("/content/parts")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            self.push(part, request);
        }
        Ok(())
    }

    /// Adds a part: text continues the text part before it (of the same kind, thought or
    /// not, unless that one carries a signature); anything else is a part of its own.
    fn push(&mut self, part: &Value, request: &ModelRequest<'_>) {
        let Some(text) = part.get("text").and_then(Value::as_str) else {
            if let Some(call) = part.get("functionCall") {
                let index = self.calls;
                self.calls += 1;
                request.delta(StreamDelta::ToolCall {
                    index,
                    id: call.get("id").and_then(Value::as_str).map(str::to_owned),
                    name: call.get("name").and_then(Value::as_str).map(str::to_owned),
                    arguments: call.get("args").map(Value::to_string).unwrap_or_default(),
                });
            }
            self.parts.push(part.clone());
            return;
        };
        let thought = part.get("thought").and_then(Value::as_bool) == Some(true);
        if !thought {
            request.delta(StreamDelta::Text(text.to_owned()));
        }
        if let Some(last) = self.parts.last_mut() {
            let same_kind = last.get("text").is_some()
                && (last.get("thought").and_then(Value::as_bool) == Some(true)) == thought
                && last.get("thoughtSignature").is_none();
            if same_kind {
                append(&mut last["text"], text);
                if let Some(signature) = part.get("thoughtSignature") {
                    last["thoughtSignature"] = signature.clone();
                }
                return;
            }
        }
        self.parts.push(part.clone());
    }

    /// The answer as a whole (not streamed) response; an error when the stream ended
    /// before the answer finished.
    fn into_response(self) -> Result<Value, ModelError> {
        if self.finish_reason.is_none() {
            if let Some(feedback) = self.blocked {
                return Ok(json!({ "promptFeedback": feedback }));
            }
            return Err(stream_error(
                PROVIDER,
                format!(
                    "broke off before the answer finished ({} chunks, none with a `finishReason`)",
                    self.chunks
                ),
            ));
        }
        let mut candidate = Map::new();
        candidate.insert(
            "content".into(),
            json!({ "role": "model", "parts": self.parts }),
        );
        if let Some(reason) = self.finish_reason {
            candidate.insert("finishReason".into(), reason);
        }
        let mut response = json!({ "candidates": [candidate] });
        if let Some(usage) = self.usage {
            response["usageMetadata"] = usage;
        }
        Ok(response)
    }
}
