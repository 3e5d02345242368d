//! Sending a request to a model API: time limit, retries with backoff on 429 and 5xx
//! (honouring `retry-after`, within bounds), and the provider's error message when it fails.
//! Nothing the server sends is read without a limit.

use std::time::{Duration, SystemTime};

use reqwest::header::HeaderMap;
use serde_json::Value;

use super::sse::Limits;
use crate::agent::ModelError;
use crate::provider::Provider;

/// The longest wait between two tries: a longer `retry-after` fails the request at once,
/// and the doubling backoff stops growing here.
const MAX_WAIT: Duration = Duration::from_mins(1);

/// How much of an error answer's body is read for its message.
const MAX_ERROR_BODY: usize = 64 << 10;

/// How a client sends its requests.
#[derive(Debug, Clone)]
pub(crate) struct Transport {
    pub(crate) client: reqwest::Client,
    pub(crate) timeout: Duration,
    pub(crate) max_retries: u32,
    pub(crate) backoff: Duration,
    pub(crate) limits: Limits,
}

impl Default for Transport {
    fn default() -> Self {
        Self {
            client: reqwest::Client::builder()
                // Model APIs answer where they are asked: a redirect could carry a key in
                // `x-api-key` or `x-goog-api-key` (headers reqwest keeps across hosts) to
                // another host, so none is followed.
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .expect("the TLS backend initializes, as `reqwest::Client::new` assumes"),
            timeout: Duration::from_mins(5),
            max_retries: 3,
            backoff: Duration::from_millis(500),
            limits: Limits::default(),
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
                    let retry_after = retry_after(response.headers(), SystemTime::now());
                    let message = error_message(response).await;
                    let error = |message| ModelError::Status {
                        provider,
                        status,
                        message,
                    };
                    if !matches!(status, 429 | 500 | 502 | 503 | 504 | 529)
                        || attempt >= self.max_retries
                    {
                        return Err(error(message));
                    }
                    match retry_after {
                        Some(wait) if wait > MAX_WAIT => {
                            return Err(error(format!(
                                "{message} (it asks to retry after {}, longer than the {} s \
                                 this client waits)",
                                seconds(wait),
                                MAX_WAIT.as_secs()
                            )));
                        }
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

    /// The wait before try `attempt + 1`: the first backoff, doubled each time, at most
    /// [`MAX_WAIT`].
    fn backoff(&self, attempt: u32) -> Duration {
        self.backoff
            .saturating_mul(2u32.saturating_pow(attempt))
            .min(MAX_WAIT)
    }
}

/// A whole (not streamed) answer's JSON body, refused past the answer limit.
pub(crate) async fn read_json(
    mut response: reqwest::Response,
    url: &str,
    provider: Provider,
    limits: Limits,
) -> Result<Value, ModelError> {
    let too_large = || limits.response_error(provider);
    if response
        .content_length()
        .is_some_and(|length| length > limits.response as u64)
    {
        return Err(too_large());
    }
    let mut bytes = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| ModelError::Connection {
        url: url.to_owned(),
        message: describe(&e),
    })? {
        if bytes.len() + chunk.len() > limits.response {
            return Err(too_large());
        }
        bytes.extend_from_slice(&chunk);
    }
    serde_json::from_slice(&bytes).map_err(|e| {
        let start: String = String::from_utf8_lossy(&bytes).chars().take(120).collect();
        ModelError::Stream {
            provider,
            problem: format!("answered with a body that is not JSON ({e}): `{start}`"),
        }
    })
}

/// How long the server asks to be left alone: `retry-after-ms` (OpenAI), else
/// `retry-after` in seconds or as an HTTP date (`now` is the clock it is read against).
///
/// Whatever the server sends, this never panics: a wait too long for a [`Duration`]
/// (`1e300`, `inf`) is [`Duration::MAX`], which is over any limit; a negative one, `NaN` or
/// one that cannot be read is no advice at all (`None`: the client's own backoff), and a
/// date in the past is no wait.
fn retry_after(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    let text = |name: &str| headers.get(name)?.to_str().ok().map(str::trim);
    let seconds = |text: &str, scale: f64| {
        let number = text.parse::<f64>().ok()? / scale;
        if number.is_nan() || number < 0.0 {
            return None;
        }
        Some(Duration::try_from_secs_f64(number).unwrap_or(Duration::MAX))
    };
    if let Some(wait) = text("retry-after-ms").and_then(|ms| seconds(ms, 1000.0)) {
        return Some(wait);
    }
    let value = text("retry-after")?;
    seconds(value, 1.0).or_else(|| {
        let date = httpdate::parse_http_date(value).ok()?;
        Some(date.duration_since(now).unwrap_or(Duration::ZERO))
    })
}

/// `wait` in seconds, for a message (`3600 s`, `more than 10^9 s`).
fn seconds(wait: Duration) -> String {
    if wait.as_secs() >= 1_000_000_000 {
        "more than 10^9 s".to_owned()
    } else {
        format!("{} s", wait.as_secs())
    }
}

/// The provider's message from an error body (`{"error": {"message"}}`, as OpenAI,
/// Anthropic and Gemini all send), else the body's start. At most [`MAX_ERROR_BODY`]
/// bytes are read.
async fn error_message(mut response: reqwest::Response) -> String {
    let mut body = Vec::new();
    while let Ok(Some(chunk)) = response.chunk().await {
        let room = MAX_ERROR_BODY - body.len();
        body.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if body.len() == MAX_ERROR_BODY {
            break;
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        pairs
            .iter()
            .map(|(name, value)| {
                (
                    reqwest::header::HeaderName::from_bytes(name.as_bytes()).unwrap(),
                    value.parse().unwrap(),
                )
            })
            .collect()
    }

    #[test]
    #[expect(
        clippy::duration_suboptimal_units,
        reason = "a Unix time, in the seconds it is counted in"
    )]
    fn any_retry_after_is_read_without_a_panic() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_445_412_480);
        let wait = |pairs: &[(&str, &str)]| retry_after(&headers(pairs), now);
        assert_eq!(wait(&[("retry-after", "2")]), Some(Duration::from_secs(2)));
        assert_eq!(
            wait(&[("retry-after-ms", "250"), ("retry-after", "9")]),
            Some(Duration::from_millis(250))
        );
        for huge in ["1e300", "inf", "+Infinity", "18446744073709551616"] {
            assert_eq!(
                wait(&[("retry-after", huge)]),
                Some(Duration::MAX),
                "{huge}"
            );
            let ms = wait(&[("retry-after-ms", huge)]).unwrap();
            assert!(ms > Duration::from_secs(1 << 40), "{huge}: {ms:?}");
        }
        for nothing in ["-1", "NaN", "-inf", "soon", ""] {
            assert_eq!(wait(&[("retry-after", nothing)]), None, "{nothing}");
        }
        // An HTTP date: the wait until then, none once it has passed.
        assert_eq!(
            wait(&[("retry-after", "Wed, 21 Oct 2015 07:28:30 GMT")]),
            Some(Duration::from_secs(30))
        );
        assert_eq!(
            wait(&[("retry-after", "Wed, 21 Oct 2015 07:00:00 GMT")]),
            Some(Duration::ZERO)
        );
        assert_eq!(seconds(Duration::MAX), "more than 10^9 s");
    }

    #[test]
    fn the_backoff_stops_growing() {
        let transport = Transport {
            max_retries: 100,
            ..Transport::default()
        };
        assert_eq!(transport.backoff(0), Duration::from_millis(500));
        assert_eq!(transport.backoff(2), Duration::from_secs(2));
        assert_eq!(transport.backoff(99), MAX_WAIT);
    }
}
