//! WebAssembly plugins' HTTP under the library's one host rule.
//!
//! A plugin sends HTTP through Extism's `extism:host/env::http_request`. Extism's own function
//! matches only the first URL's host and lets its client follow redirects and resolve names
//! unchecked. Extism links user functions after its own and lets them shadow, so each instance
//! is built with these three in their place (`http_request`, `http_status_code`,
//! `http_headers`, whose state is private to Extism): every hop's URL is checked against the
//! plugin's [`HostRule`], redirects are followed here (ten at most, each checked), and a name
//! is resolved by a resolver that keeps only the addresses the rule admits, so the connection
//! goes to an address that was checked. The response size limit and the call's remaining time
//! are kept; what the guest sees is otherwise Extism's.

use std::collections::BTreeMap;
use std::io::Read as _;
use std::time::{Duration, Instant};

use serde::Deserialize;
use ureq::http::{self, Method, StatusCode, header};
use ureq::unversioned::resolver::{DefaultResolver, ResolvedSocketAddrs, Resolver};
use ureq::unversioned::transport::{DefaultConnector, NextTimeout};
use url::Url;

use crate::util::hosts::{HostRule, Refusal};

mod guest;
#[cfg(test)]
mod tests;

/// The most redirects one request follows.
const MAX_REDIRECTS: usize = 10;

/// How the message of a refused request starts;
/// [`WasmCallError`](crate::plugin::WasmCallError) reads it back.
pub(super) const REFUSED: &str = "HTTP request refused: ";

/// How the message of a request that failed otherwise starts.
pub(super) const FAILED: &str = "HTTP request failed: ";

/// What every instance of one plugin sends requests with: its host rule, and one client whose
/// every connection goes through the rule's resolver.
pub(super) struct PluginHttp {
    rule: HostRule,
    agent: ureq::Agent,
    /// Whether the guest may read response headers (Extism's `http_response_headers`).
    headers: bool,
}

/// An `HttpRequest` as the guest sends it (Extism's manifest type, which Extism does not
/// export). Fields a newer PDK adds are ignored, as Extism's own reader ignores them.
#[derive(Debug, Deserialize)]
struct GuestRequest {
    url: String,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    method: Option<String>,
}

/// A response as the guest receives it.
#[derive(Debug)]
struct Answer {
    status: u16,
    headers: BTreeMap<String, String>,
    body: Vec<u8>,
}

/// Why a request got no answer.
#[derive(Debug, PartialEq, Eq)]
enum Failure {
    /// The host rule refused a hop.
    Refused(String),
    /// The call's time ran out.
    Timeout,
    /// Anything else: no such host, no connection, too many redirects, too large an answer.
    Failed(String),
}

impl Failure {
    fn into_error(self) -> extism::Error {
        match self {
            // Extism's own word for a call past its time, which the runtime reads as such.
            Self::Timeout => extism::Error::msg("timeout"),
            Self::Refused(why) => extism::Error::msg(format!("{REFUSED}{why}")),
            Self::Failed(why) => extism::Error::msg(format!("{FAILED}{why}")),
        }
    }
}

impl PluginHttp {
    /// A client for a plugin granted these host patterns (as
    /// [`Permissions::allowed_hosts`](crate::plugin::Permissions::allowed_hosts) reads them).
    pub(super) fn new(patterns: Vec<String>, headers: bool) -> Self {
        let rule = HostRule::new(patterns);
        let config = ureq::Agent::config_builder()
            // A proxy from the environment would resolve and connect where the rule never
            // looked.
            .proxy(None)
            .max_redirects(0)
            .http_status_as_error(false)
            .build();
        let agent = ureq::Agent::with_parts(config, DefaultConnector::new(), Guarded(rule.clone()));
        Self {
            rule,
            agent,
            headers,
        }
    }

    /// Sends `request`, following redirects by hand with every hop checked, within
    /// `time_left`, reading at most `max_bytes` of the final body.
    fn send(
        &self,
        request: GuestRequest,
        mut body: Option<Vec<u8>>,
        time_left: Option<Duration>,
        max_bytes: u64,
    ) -> Result<Answer, Failure> {
        let deadline = time_left.map(|left| Instant::now() + left);
        let mut url = Url::parse(&request.url)
            .map_err(|e| Failure::Failed(format!("`{}` is not a URL: {e}", request.url)))?;
        let first = url.clone();
        let method = request.method.as_deref().unwrap_or("GET").to_uppercase();
        let mut method = Method::from_bytes(method.as_bytes())
            .map_err(|_| Failure::Failed(format!("`{method}` is not an HTTP method")))?;
        let mut headers = request.headers;
        let mut hops = 0;
        loop {
            self.rule
                .check(url.scheme(), url.host_str())
                .map_err(|refusal| Failure::Refused(hop(hops, &url, &refusal)))?;
            let remaining = match deadline {
                Some(deadline) => {
                    let left = deadline.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return Err(Failure::Timeout);
                    }
                    Some(left)
                }
                None => None,
            };
            let response = self
                .exchange(&method, &url, &headers, body.as_deref(), remaining)
                .map_err(|error| failure(error, &url, hops, deadline))?;
            let Some(location) = redirect(&response, &method) else {
                return self.read(response, &url, max_bytes, deadline);
            };
            if hops == MAX_REDIRECTS {
                return Err(Failure::Failed(format!(
                    "`{first}` redirected more than {MAX_REDIRECTS} times"
                )));
            }
            let location = location?;
            let next = url.join(&location).map_err(|e| {
                Failure::Failed(format!(
                    "`{url}` redirected to `{location}`, which is not a URL: {e}"
                ))
            })?;
            // As ureq does: 301, 302 and 303 turn what is not GET or HEAD into a GET without
            // a body, 307 and 308 keep both; credentials and cookies are not carried over.
            if !retains_method(response.status()) && method != Method::GET && method != Method::HEAD
            {
                method = Method::GET;
                body = None;
            }
            drop(response);
            headers.retain(|name, _| {
                ![
                    header::AUTHORIZATION,
                    header::COOKIE,
                    header::CONTENT_LENGTH,
                ]
                .iter()
                .any(|dropped| name.eq_ignore_ascii_case(dropped.as_str()))
            });
            url = next;
            hops += 1;
        }
    }

    fn exchange(
        &self,
        method: &Method,
        url: &Url,
        headers: &BTreeMap<String, String>,
        body: Option<&[u8]>,
        timeout: Option<Duration>,
    ) -> Result<http::Response<ureq::Body>, ureq::Error> {
        let mut builder = http::Request::builder()
            .method(method.clone())
            .uri(url.as_str());
        for (name, value) in headers {
            builder = builder.header(name, value);
        }
        // Without a body the request is sent as one without (no `Content-Length: 0`).
        if let Some(body) = body {
            let request = self
                .agent
                .configure_request(builder.body(body)?)
                .timeout_global(timeout)
                .build();
            return self.agent.run(request);
        }
        let request = self
            .agent
            .configure_request(builder.body(())?)
            .timeout_global(timeout)
            .build();
        self.agent.run(request)
    }

    fn read(
        &self,
        response: http::Response<ureq::Body>,
        url: &Url,
        max_bytes: u64,
        deadline: Option<Instant>,
    ) -> Result<Answer, Failure> {
        let status = response.status().as_u16();
        let headers = if self.headers {
            response
                .headers()
                .iter()
                .filter_map(|(name, value)| {
                    Some((name.as_str().to_owned(), value.to_str().ok()?.to_owned()))
                })
                .collect()
        } else {
            BTreeMap::new()
        };
        let mut body = Vec::new();
        response
            .into_body()
            .into_reader()
            .take(max_bytes.saturating_add(1))
            .read_to_end(&mut body)
            .map_err(|e| {
                if passed(deadline) {
                    Failure::Timeout
                } else {
                    Failure::Failed(format!("reading the answer of `{url}` failed: {e}"))
                }
            })?;
        if body.len() as u64 > max_bytes {
            return Err(Failure::Failed(format!(
                "the answer of `{url}` is larger than the {max_bytes} bytes a plugin may receive"
            )));
        }
        Ok(Answer {
            status,
            headers,
            body,
        })
    }
}

/// The `Location` of a redirect that is to be followed, or `None` for an answer to keep: not
/// a redirect, no `Location`, or a 307/308 of a method with a body or of `DELETE` (which
/// ureq does not follow either).
fn redirect(
    response: &http::Response<ureq::Body>,
    method: &Method,
) -> Option<Result<String, Failure>> {
    let status = response.status();
    if !status.is_redirection() || status == StatusCode::NOT_MODIFIED {
        return None;
    }
    let location = response.headers().get(header::LOCATION)?;
    if retains_method(status)
        && matches!(
            *method,
            Method::POST | Method::PUT | Method::PATCH | Method::DELETE
        )
    {
        return None;
    }
    Some(location.to_str().map(str::to_owned).map_err(|_| {
        Failure::Failed(format!(
            "a {status} redirect's `Location` is not text: {:?}",
            String::from_utf8_lossy(location.as_bytes())
        ))
    }))
}

fn retains_method(status: StatusCode) -> bool {
    status == StatusCode::TEMPORARY_REDIRECT || status == StatusCode::PERMANENT_REDIRECT
}

/// A refusal, saying when a redirect led to it.
fn hop(hops: usize, url: &Url, refusal: &Refusal) -> String {
    if hops > 0 {
        format!("redirected to `{url}`: {refusal}")
    } else {
        refusal.to_string()
    }
}

fn passed(deadline: Option<Instant>) -> bool {
    deadline.is_some_and(|deadline| Instant::now() >= deadline)
}

/// What a client error means for the guest: a refusal by the resolver, the call's time run
/// out, or a failure with its cause.
fn failure(error: ureq::Error, url: &Url, hops: usize, deadline: Option<Instant>) -> Failure {
    if let ureq::Error::Other(inner) = &error
        && let Some(refusal) = inner.downcast_ref::<Refusal>()
    {
        return Failure::Refused(hop(hops, url, refusal));
    }
    if passed(deadline) {
        return Failure::Timeout;
    }
    match error {
        ureq::Error::HostNotFound => Failure::Failed(format!(
            "`{}` resolves to no address",
            url.host_str().unwrap_or_default()
        )),
        ureq::Error::Timeout(_) => Failure::Failed(format!("`{url}` did not answer in time")),
        ureq::Error::Http(error) => {
            Failure::Failed(format!("the request to `{url}` cannot be made: {error}"))
        }
        error => Failure::Failed(format!("`{url}` could not be reached: {error}")),
    }
}

/// Resolves names with the system resolver and keeps only the addresses the rule admits; the
/// client connects to nothing else.
#[derive(Debug)]
struct Guarded(HostRule);

impl Resolver for Guarded {
    fn resolve(
        &self,
        uri: &http::Uri,
        config: &ureq::config::Config,
        timeout: NextTimeout,
    ) -> Result<ResolvedSocketAddrs, ureq::Error> {
        let host = uri.host().unwrap_or_default();
        let found = DefaultResolver::default().resolve(uri, config, timeout)?;
        let kept = self
            .0
            .admit(host, found.iter().copied())
            .map_err(|refusal| ureq::Error::Other(Box::new(refusal)))?;
        let mut addrs = self.empty();
        for addr in kept {
            addrs.push(addr);
        }
        Ok(addrs)
    }
}
