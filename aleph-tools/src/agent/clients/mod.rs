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

use serde_json::{Map, Value};

use self::http::Transport;

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
}

/// The builder methods every client has.
macro_rules! client_settings {
    ($client:ty) => {
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
use client_settings;
