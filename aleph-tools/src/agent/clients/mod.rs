//! HTTP clients for the model APIs (feature `clients`): each is a [`ChatModel`] the agent
//! loop drives, with streaming, retries and time limits.
//!
//! [`ChatModel`]: super::ChatModel

mod anthropic;
mod gemini;
mod http;
mod openai_chat;
mod openai_responses;
mod sse;

pub use anthropic::Anthropic;
pub use gemini::Gemini;
pub use openai_chat::OpenAiChat;
pub use openai_responses::OpenAiResponses;

use reqwest::header::HeaderValue;
use serde_json::{Map, Value, json};

use self::http::Transport;
use super::{ModelError, ModelRequest};
use crate::provider::Provider;

/// What every client is configured with.
#[derive(Debug, Clone)]
struct Settings {
    model: String,
    base_url: String,
    api_key: Option<String>,
    params: Map<String, Value>,
    stream: bool,
    transport: Transport,
}

impl Settings {
    /// `model`, with the base URL from `base_env` (else `default_base`) and the key from
    /// `key_env`, streaming.
    fn from_env(model: String, base_env: &str, default_base: &str, key_env: &str) -> Self {
        let env = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        Self {
            model,
            base_url: env(base_env).unwrap_or_else(|| default_base.to_owned()),
            api_key: env(key_env),
            params: Map::new(),
            stream: true,
            transport: Transport::default(),
        }
    }

    /// `path` under the base URL.
    fn url(&self, path: &str) -> String {
        format!("{}/{path}", self.base_url.trim_end_matches('/'))
    }

    /// A request body: the params, then `model` (unless the API takes it in the URL), the
    /// conversation's fields, and the tools when there are any.
    fn body(&self, request: &ModelRequest<'_>, with_model: bool) -> Map<String, Value> {
        let mut body = self.params.clone();
        if with_model {
            body.insert("model".into(), json!(self.model));
        }
        if let Value::Object(fields) = request.conversation.request_fields() {
            body.extend(fields);
        }
        if request.tools.as_array().is_some_and(|t| !t.is_empty()) {
            body.insert("tools".into(), request.tools.clone());
        }
        body
    }

    /// The API key as a header value, `prefix` first (`Bearer `); `None` without a key.
    fn key_header(&self, prefix: &str) -> Result<Option<HeaderValue>, ModelError> {
        let Some(key) = &self.api_key else {
            return Ok(None);
        };
        HeaderValue::from_str(&format!("{prefix}{key}"))
            .map(Some)
            .map_err(|_| ModelError::Other("the API key holds characters a header cannot".into()))
    }
}

/// Appends a streamed `piece` to the string at `slot` in place (a string is started when
/// there is none), so a long argument arrives in linear time.
fn append(slot: &mut Value, piece: &str) {
    match slot {
        Value::String(text) => text.push_str(piece),
        other => *other = Value::String(piece.to_owned()),
    }
}

/// One streamed event's `data:`, which must be JSON.
fn parse_event(provider: Provider, data: &str) -> Result<Value, ModelError> {
    serde_json::from_str(data).map_err(|e| {
        let start: String = data.chars().take(120).collect();
        stream_error(
            provider,
            format!("sent an event that is not JSON ({e}): `{start}`"),
        )
    })
}

/// A stream that went wrong.
fn stream_error(provider: Provider, problem: impl Into<String>) -> ModelError {
    ModelError::Stream {
        provider,
        problem: problem.into(),
    }
}

/// What every client has: the builder methods of its [`Settings`], and the [`ChatModel`]
/// impl that answers with its `turn` method.
///
/// [`ChatModel`]: super::ChatModel
macro_rules! client {
    ($client:ty, $provider:expr) => {
        impl crate::agent::ChatModel for $client {
            fn provider(&self) -> crate::provider::Provider {
                $provider
            }

            fn respond<'a>(
                &'a self,
                request: crate::agent::ModelRequest<'a>,
            ) -> crate::tool::BoxFuture<'a, Result<crate::agent::ModelTurn, crate::agent::ModelError>>
            {
                Box::pin(self.turn(request))
            }
        }

        impl $client {
            /// Sends requests to `url` (the client adds the API's path to it).
            #[must_use]
            pub fn base_url(mut self, url: impl Into<String>) -> Self {
                self.settings.base_url = url.into();
                self
            }

            /// Sends `key` as the API key.
            #[must_use]
            pub fn api_key(mut self, key: impl Into<String>) -> Self {
                self.settings.api_key = Some(key.into());
                self
            }

            /// Sets a field of every request body (`temperature`, a token limit, …).
            #[must_use]
            pub fn param(
                mut self,
                key: impl Into<String>,
                value: impl Into<serde_json::Value>,
            ) -> Self {
                self.settings.params.insert(key.into(), value.into());
                self
            }

            /// Whether to stream the answer (on by default).
            #[must_use]
            pub fn streaming(mut self, stream: bool) -> Self {
                self.settings.stream = stream;
                self
            }

            /// The time limit of one request, the whole answer included (300 s by default).
            #[must_use]
            pub fn timeout(mut self, timeout: std::time::Duration) -> Self {
                self.settings.transport.timeout = timeout;
                self
            }

            /// How many times a busy or failing answer (429, 5xx) is retried (3 by default).
            #[must_use]
            pub fn max_retries(mut self, retries: u32) -> Self {
                self.settings.transport.max_retries = retries;
                self
            }

            /// The first wait between retries when the API does not say (`retry-after`);
            /// it doubles each time (0.5 s by default).
            #[must_use]
            pub fn backoff(mut self, first: std::time::Duration) -> Self {
                self.settings.transport.backoff = first;
                self
            }
        }
    };
}
use client;
