//! HTTP clients for the model APIs (feature `clients`): each is a [`ChatModel`] the agent
//! loop drives, with streaming, retries and time limits.
//!
//! A model server is an outside party: what it sends is read in linear time and within
//! limits (one event, one answer), its `retry-after` is obeyed only within bounds, and an API
//! key read from the environment goes only where the environment says, never to a base URL
//! set in code.
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

use std::fmt;

use reqwest::header::{HeaderMap, HeaderValue, IntoHeaderName};
use serde_json::{Map, Value, json};

use self::http::Transport;
use super::{ModelError, ModelRequest};
use crate::provider::Provider;

/// What every client is configured with.
#[derive(Clone)]
struct Settings {
    model: String,
    base_url: String,
    api_key: Option<ApiKey>,
    params: Map<String, Value>,
    stream: bool,
    transport: Transport,
}

impl fmt::Debug for Settings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Settings")
            .field("model", &self.model)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key)
            .field("params", &self.params)
            .field("stream", &self.stream)
            .field("transport", &self.transport)
            .finish()
    }
}

/// An API key, and where it may be sent.
#[derive(Clone)]
struct ApiKey {
    value: String,
    /// Read from this environment variable: sent only to [`origin`](Self::origin).
    /// `None`: given in code, sent to whatever base URL the client uses.
    variable: Option<&'static str>,
    /// The origin (`https://api.openai.com`) a key from the environment may go to: the
    /// provider's own, or the base URL the environment names beside the key.
    origin: Option<String>,
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("\"<redacted>\"")
    }
}

impl ApiKey {
    /// A key given in code.
    fn given(value: String) -> Self {
        Self {
            value,
            variable: None,
            origin: None,
        }
    }
}

/// The origin (scheme, host, port) of `url`, when it has one.
fn origin(url: &str) -> Option<String> {
    let origin = reqwest::Url::parse(url).ok()?.origin();
    origin.is_tuple().then(|| origin.ascii_serialization())
}

impl Settings {
    /// `model`, with the base URL from `base_env` (else `default_base`) and the key from
    /// `key_env`, streaming. The key is bound to that base URL's origin: moved elsewhere
    /// with `base_url`, the client sends no key until one is given with `api_key`.
    fn from_env(model: String, base_env: &str, default_base: &str, key_env: &'static str) -> Self {
        let env = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        let base_url = env(base_env).unwrap_or_else(|| default_base.to_owned());
        let api_key = env(key_env).map(|value| ApiKey {
            value,
            variable: Some(key_env),
            origin: origin(&base_url),
        });
        Self {
            model,
            base_url,
            api_key,
            params: Map::new(),
            stream: true,
            transport: Transport::default(),
        }
    }

    /// `model`, with the base URL from `OPENAI_BASE_URL` (else OpenAI's) and `OPENAI_API_KEY`.
    fn openai(model: String) -> Self {
        Self::from_env(
            model,
            "OPENAI_BASE_URL",
            "https://api.openai.com/v1",
            "OPENAI_API_KEY",
        )
    }

    /// The key to send to the base URL: one given in code, or one from the environment
    /// when the base URL is where the environment meant it for.
    fn key(&self) -> Option<&str> {
        let key = self.api_key.as_ref()?;
        match key.variable {
            None => Some(&key.value),
            Some(_) => (key.origin.is_some() && key.origin == origin(&self.base_url))
                .then_some(key.value.as_str()),
        }
    }

    /// POSTs `body` to `url` (see [`Transport::post`]); a refusal for want of a key says
    /// which key was held back and why.
    async fn post(
        &self,
        provider: Provider,
        url: &str,
        headers: HeaderMap,
        body: &Value,
    ) -> Result<reqwest::Response, ModelError> {
        let error = match self.transport.post(provider, url, headers, body).await {
            Ok(response) => return Ok(response),
            Err(error) => error,
        };
        let held_back = self
            .api_key
            .as_ref()
            .filter(|_| self.key().is_none())
            .and_then(|key| Some((key.variable?, key.origin.as_deref()?)));
        match (error, held_back) {
            (
                ModelError::Status {
                    provider,
                    status: status @ (401 | 403),
                    message,
                },
                Some((variable, origin)),
            ) => Err(ModelError::Status {
                provider,
                status,
                message: format!(
                    "{message} (no key was sent: `{variable}` goes only to {origin}, where \
                     the environment meant it for; give a key for this server with `api_key`)"
                ),
            }),
            (error, _) => Err(error),
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

    /// `body` as a JSON object, with `"stream": true` when the answer is streamed.
    fn streamed(&self, mut body: Map<String, Value>) -> Value {
        if self.stream {
            body.insert("stream".into(), json!(true));
        }
        Value::Object(body)
    }

    /// Headers holding the API key as `name`, `prefix` first; empty when there is no key to send.
    fn key_headers(
        &self,
        name: impl IntoHeaderName,
        prefix: &str,
    ) -> Result<HeaderMap, ModelError> {
        let mut headers = HeaderMap::new();
        if let Some(value) = self.key_header(prefix)? {
            headers.insert(name, value);
        }
        Ok(headers)
    }

    /// The API key as a header value, `prefix` first (`Bearer `); `None` without a key, or
    /// when the key from the environment is not meant for this base URL.
    fn key_header(&self, prefix: &str) -> Result<Option<HeaderValue>, ModelError> {
        let Some(key) = self.key() else {
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

/// One streamed chunk's `data:`, as [`parse_event`] reads it; a chunk holding an `error` fails.
fn parse_chunk(provider: Provider, data: &str) -> Result<Value, ModelError> {
    let chunk = parse_event(provider, data)?;
    if let Some(error) = chunk.get("error") {
        let message = error
            .get("message")
            .and_then(Value::as_str)
            .map_or_else(|| error.to_string(), str::to_owned);
        return Err(stream_error(provider, format!("sent an error: {message}")));
    }
    Ok(chunk)
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
            ///
            /// A key the client read from the environment is not sent to a URL set here,
            /// unless it has the same origin (scheme, host and port) as the one the key was
            /// meant for: the provider's own, or the base URL the environment names beside
            /// it. A local server needs no key; any other server gets one given with
            /// [`api_key`](Self::api_key).
            #[must_use]
            pub fn base_url(mut self, url: impl Into<String>) -> Self {
                self.settings.base_url = url.into();
                self
            }

            /// Sends `key` as the API key, to whatever base URL the client uses. It never
            /// appears in `Debug` output.
            #[must_use]
            pub fn api_key(mut self, key: impl Into<String>) -> Self {
                self.settings.api_key = Some(crate::agent::clients::ApiKey::given(key.into()));
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
            /// it doubles each time, up to 60 s (0.5 s by default). A `retry-after` over
            /// 60 s fails the request at once; one that is negative or not a number is
            /// ignored.
            #[must_use]
            pub fn backoff(mut self, first: std::time::Duration) -> Self {
                self.settings.transport.backoff = first;
                self
            }

            /// The most one streamed event (or one line of the stream) may hold, in bytes
            /// (16 MiB by default). A longer one fails the request with an error naming
            /// this limit.
            #[must_use]
            pub fn max_event_bytes(mut self, bytes: usize) -> Self {
                self.settings.transport.limits.event = bytes;
                self
            }

            /// The most one answer may hold, in bytes, streamed or not (64 MiB by
            /// default): text, tool calls and everything around them. A longer answer fails
            /// the request with an error naming this limit, so a server that never stops
            /// costs this much memory at most.
            #[must_use]
            pub fn max_response_bytes(mut self, bytes: usize) -> Self {
                self.settings.transport.limits.response = bytes;
                self
            }
        }
    };
}
use client;
