//! Sending a request to a model API: time limit, retries with backoff on 429 and 5xx
//! (honouring `retry-after`), and the provider's error message when it fails.

use std::time::Duration;

use reqwest::header::HeaderMap;
use serde_json::Value;

use crate::agent::ModelError;
use crate::provider::Provider;

/// The longest `retry-after` waited for; a longer one fails the request at once.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(60);

/// How a client sends its requests.
#[derive(Debug, Clone)]
pub(crate) struct Transport {
    pub(crate) client: reqwest::Client,
    pub(crate) timeout: Duration,
    pub(crate) max_retries: u32,
    pub(crate) backoff: Duration,
}

impl Default for Transport {
    fn default() -> Self {
        Self {
            client: reqwest::Client::new(),
            timeout: Duration::from_secs(300),
            max_retries: 3,
            backoff: Duration::from_millis(500),
        }
    }
}

impl Transport {
    /// POSTs `body` to `url`, retrying while the API is busy or failing (429, 500, 502,
    /// 503, 504, 529) or unreachable; returns the first response with a success status.
    pub(crate) async fn post(
        &self,
        provider: Provider,
        url: &str,
        headers: HeaderMap,
        body: &Value,
    ) -> Result<reqwest::Response, ModelError> {
        let body = serde_json::to_vec(body).map_err(|e| ModelError::Other(e.to_string()))?;
        let mut attempt = 0;
        loop {
            let sent = self
                .client
                .post(url)
                .headers(headers.clone())
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .timeout(self.timeout)
                .body(body.clone())
                .send()
                .await;
            let wait = match sent {
                Ok(response) if response.status().is_success() => return Ok(response),
                Ok(response) => {
                    let status = response.status().as_u16();
                    let retry_after = retry_after(response.headers());
                    let error = ModelError::Status {
                        provider,
                        status,
                        message: error_message(response).await,
                    };
                    if !matches!(status, 429 | 500 | 502 | 503 | 504 | 529)
                        || attempt >= self.max_retries
                    {
                        return Err(error);
                    }
                    match retry_after {
                        Some(wait) if wait > MAX_RETRY_AFTER => return Err(error),
                        Some(wait) => wait,
                        None => self.backoff(attempt),
                    }
                }
                Err(error) if error.is_timeout() => {
                    return Err(ModelError::Timeout {
                        url: url.to_owned(),
                        after: self.timeout,
                    });
                }
                Err(error) => {
                    if attempt >= self.max_retries || !(error.is_connect() || error.is_request()) {
                        return Err(ModelError::Connection {
                            url: url.to_owned(),
                            message: describe(&error),
                        });
                    }
                    self.backoff(attempt)
                }
            };
            tracing::debug!(%url, attempt, ?wait, "model API busy or unreachable; retrying");
            tokio::time::sleep(wait).await;
            attempt += 1;
        }
    }

    fn backoff(&self, attempt: u32) -> Duration {
        self.backoff.saturating_mul(2u32.saturating_pow(attempt))
    }
}

/// A whole (not streamed) answer's JSON body.
pub(crate) async fn read_json(
    response: reqwest::Response,
    url: &str,
    provider: Provider,
) -> Result<Value, ModelError> {
    let bytes = response.bytes().await.map_err(|e| ModelError::Connection {
        url: url.to_owned(),
        message: describe(&e),
    })?;
    serde_json::from_slice(&bytes).map_err(|e| {
        let start: String = String::from_utf8_lossy(&bytes).chars().take(120).collect();
        ModelError::Stream {
            provider,
            problem: format!("answered with a body that is not JSON ({e}): `{start}`"),
        }
    })
}

/// `retry-after-ms` (OpenAI), else `retry-after` in seconds.
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let number = |name: &str| {
        headers
            .get(name)?
            .to_str()
            .ok()?
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|n| n.is_finite() && *n >= 0.0)
    };
    number("retry-after-ms")
        .map(|ms| Duration::from_secs_f64(ms / 1000.0))
        .or_else(|| number("retry-after").map(Duration::from_secs_f64))
}

/// The provider's message from an error body (`{"error": {"message"}}`, as OpenAI,
/// Anthropic and Gemini all send), else the body's start.
async fn error_message(response: reqwest::Response) -> String {
    let body = response.bytes().await.unwrap_or_default();
    let parsed: Option<Value> = serde_json::from_slice(&body).ok();
    let message = parsed.as_ref().and_then(|v| {
        v.pointer("/error/message")
            .or_else(|| v.get("message"))
            .or_else(|| v.get("error"))
            .and_then(Value::as_str)
    });
    if let Some(message) = message {
        return message.to_owned();
    }
    let start: String = String::from_utf8_lossy(&body).chars().take(300).collect();
    if start.is_empty() {
        "no body".to_owned()
    } else {
        start
    }
}

/// The error and its causes, on one line.
pub(crate) fn describe(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
