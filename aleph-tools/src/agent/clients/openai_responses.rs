//! [`OpenAiResponses`]: OpenAI's Responses API.

use std::collections::HashMap;

use reqwest::header::AUTHORIZATION;
use serde_json::Value;

use super::http::read_json;
use super::sse::read_events;
use super::{Settings, client, parse_event, stream_error};
use crate::agent::{ModelError, ModelRequest, ModelTurn, StreamDelta};
use crate::provider::Provider;

const PROVIDER: Provider = Provider::OpenAiResponses;

/// A model behind OpenAI's Responses API (`POST {base_url}/responses`).
///
/// The base URL is `OPENAI_BASE_URL` when set, else `https://api.openai.com/v1`; the key is
/// `OPENAI_API_KEY`. Each round sends the whole conversation as `input` (output items,
/// reasoning included, go back as they came), so nothing depends on state kept by the API.
/// Streams by default: text and function-call argument pieces reach
/// [`AgentEvent::Delta`](crate::agent::AgentEvent::Delta), and the turn is the response
/// `response.completed` carries. Retries 429 and 5xx answers as `retry-after` says.
///
/// ```no_run
/// use aleph_tools::agent::clients::OpenAiResponses;
/// use aleph_tools::agent::{Agent, ChatModel, Conversation};
/// use aleph_tools::prelude::*;
///
/// # async fn run(server: AlephToolServer) -> Result<(), Box<dyn std::error::Error>> {
/// let model = OpenAiResponses::new("gpt-5-mini");
/// let mut conversation = Conversation::new(model.provider());
/// conversation.push_user("What is in notes.md?");
/// let outcome = Agent::new().run(&server, &model, &mut conversation).await?;
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct OpenAiResponses {
    settings: Settings,
}

client!(OpenAiResponses, PROVIDER);

impl OpenAiResponses {
    /// The model `model` (`gpt-5-mini`, …), with the base URL and key from the environment.
    pub fn new(model: impl Into<String>) -> Self {
        Self {
            settings: Settings::openai(model.into()),
        }
    }

    async fn turn(&self, request: ModelRequest<'_>) -> Result<ModelTurn, ModelError> {
        let url = self.settings.url("responses");
        let headers = self.settings.key_headers(AUTHORIZATION, "Bearer ")?;
        let body = self.settings.streamed(self.settings.body(&request, true));
        let response = self.settings.post(PROVIDER, &url, headers, &body).await?;
        let response = if self.settings.stream {
            let mut finished = None;
            let mut calls: HashMap<String, usize> = HashMap::new();
            let done = read_events(
                response,
                &url,
                PROVIDER,
                self.settings.transport.limits,
                |event| take(&event.data, &request, &mut calls, &mut finished),
            )
            .await?;
            match finished {
                Some(response) if done => response,
                _ => {
                    return Err(stream_error(
                        PROVIDER,
                        "broke off before `response.completed`",
                    ));
                }
            }
        } else {
            read_json(response, &url, PROVIDER, self.settings.transport.limits).await?
        };
        Ok(ModelTurn::from_response(PROVIDER, &response)?)
    }
}

/// Takes one event: passes deltas on, keeps the response a terminal event carries;
/// `Ok(true)` at the end. `calls` numbers the function-call items by their item id.
fn take(
    data: &str,
    request: &ModelRequest<'_>,
    calls: &mut HashMap<String, usize>,
    finished: &mut Option<Value>,
) -> Result<bool, ModelError> {
    let event = parse_event(PROVIDER, data)?;
    let text = |key: &str| event[key].as_str().unwrap_or_default().to_owned();
    match event["type"].as_str().unwrap_or_default() {
        "response.output_text.delta" => request.delta(StreamDelta::Text(text("delta"))),
        "response.output_item.added" if event["item"]["type"] == "function_call" => {
            let item = &event["item"];
            let index = calls.len();
            calls
                .entry(item["id"].as_str().unwrap_or_default().to_owned())
                .or_insert(index);
            request.delta(StreamDelta::ToolCall {
                index,
                id: item["call_id"].as_str().map(str::to_owned),
                name: item["name"].as_str().map(str::to_owned),
                arguments: String::new(),
            });
        }
        "response.function_call_arguments.delta" => {
            let item = text("item_id");
            let index = calls.get(&item).copied().unwrap_or(0);
            request.delta(StreamDelta::ToolCall {
                index,
                id: None,
                name: None,
                arguments: text("delta"),
            });
        }
        "response.completed" | "response.incomplete" => {
            *finished = Some(event["response"].clone());
            return Ok(true);
        }
        "response.failed" => {
            let message = event
                .pointer("/response/error/message")
                .and_then(Value::as_str)
                .unwrap_or("no message");
            return Err(stream_error(PROVIDER, format!("failed: {message}")));
        }
        "error" => {
            let message = event
                .get("message")
                .or_else(|| event.pointer("/error/message"))
                .and_then(Value::as_str)
                .unwrap_or("no message");
            return Err(stream_error(PROVIDER, format!("sent an error: {message}")));
        }
        _ => {}
    }
    Ok(false)
}
