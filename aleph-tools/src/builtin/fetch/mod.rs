//! `web_fetch`: an HTTP(S) GET within host rules and size and time limits, every redirect
//! checked again, the body decoded from its charset and HTML turned into readable text.

mod guard;
mod text;

use std::fmt::Write as _;
use std::time::Duration;

use reqwest::Url;
use reqwest::header::{CONTENT_LENGTH, CONTENT_TYPE, LOCATION};
use serde::Serialize;

#[cfg(feature = "browser")]
pub(super) use self::guard::explain as explain_refusal;
use super::Builtin;
use crate::context::State;
use crate::error::{ArgumentProblem, ToolError};
use crate::result::ToolOutput;
use crate::server::RegistryError;
use crate::server::ToolServerBuilder;
use crate::tool;
use crate::util::hosts::{GuardedResolver, HostRule, why_failed};

/// `web_fetch` and its rules, served by
/// [`with_builtin`](ToolServerBuilder::with_builtin).
///
/// Hosts are allowed with the rules plugins are granted the network with
/// (`connect:*.example.com`, `connect:https://api.example.com`, `connect:*`, the default),
/// and follow the same host rule as WebAssembly plugins' HTTP. Redirects are followed (10 at
/// most) and each is checked again. Addresses that are loopback, private, link-local (where
/// cloud metadata services answer) or otherwise not on the public internet are refused,
/// whatever name leads to them, and so is every IPv6 form that carries such an IPv4 address
/// (mapped, compatible, translated, NAT64, 6to4, Teredo, ISATAP), unless a rule names the
/// address (`connect:127.0.0.1`, `connect:[::1]`, `connect:localhost` for loopback) or
/// [`allow_private_addresses`](Self::allow_private_addresses) is set. A body is read up to
/// [`max_bytes`](Self::max_bytes) and the whole fetch, redirects included, within
/// [`timeout`](Self::timeout).
///
/// ```
/// use aleph_tools::builtin::WebFetch;
/// use aleph_tools::prelude::*;
/// use std::time::Duration;
///
/// let server = AlephToolServer::builder()
///     .with_builtin(
///         WebFetch::new()
///             .allow_hosts(["connect:docs.rs", "connect:*.rust-lang.org"])
///             .timeout(Duration::from_secs(10)),
///     )
///     .build()?;
/// assert!(server.contains("web_fetch"));
/// # Ok::<(), aleph_tools::RegistryError>(())
/// ```
#[derive(Debug, Clone)]
pub struct WebFetch {
    hosts: Vec<String>,
    allow_private: bool,
    max_bytes: usize,
    timeout: Duration,
    max_redirects: usize,
    user_agent: String,
}

impl Default for WebFetch {
    fn default() -> Self {
        Self {
            hosts: vec!["connect:*".to_owned()],
            allow_private: false,
            max_bytes: 5 * 1024 * 1024,
            timeout: Duration::from_secs(30),
            max_redirects: 10,
            user_agent: concat!("aleph-tools/", env!("CARGO_PKG_VERSION")).to_owned(),
        }
    }
}

impl WebFetch {
    /// Any public host; 5 MiB and 30 seconds per fetch; 10 redirects.
    pub fn new() -> Self {
        Self::default()
    }

    /// Only these hosts, in the plugin permission syntax: `connect:api.example.com`,
    /// `connect:https://api.example.com/v1` (the host is what counts),
    /// `connect:*.example.com` (its subdomains), `connect:*` (any). A rule that cannot be
    /// read is reported by [`build`](ToolServerBuilder::build).
    #[must_use]
    pub fn allow_hosts(mut self, rules: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.hosts = rules.into_iter().map(Into::into).collect();
        self
    }

    /// Lets fetches reach loopback, private and link-local addresses (a service on the same
    /// machine or network) through every allowed host, names included. Off by default: a
    /// model could otherwise read internal services. To open one address only, name it in a
    /// rule instead (`connect:127.0.0.1`, `connect:localhost`).
    #[must_use]
    pub fn allow_private_addresses(mut self, allow: bool) -> Self {
        self.allow_private = allow;
        self
    }

    /// The most bytes of a body read; the rest is left unread.
    #[must_use]
    pub fn max_bytes(mut self, bytes: usize) -> Self {
        self.max_bytes = bytes.max(1);
        self
    }

    /// The time the whole fetch may take, redirects and body included.
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The most redirects followed.
    #[must_use]
    pub fn max_redirects(mut self, redirects: usize) -> Self {
        self.max_redirects = redirects;
        self
    }

    /// The `User-Agent` sent.
    #[must_use]
    pub fn user_agent(mut self, agent: impl Into<String>) -> Self {
        self.user_agent = agent.into();
        self
    }
}

impl Builtin for WebFetch {
    fn add_to(self, builder: ToolServerBuilder) -> ToolServerBuilder {
        match Fetcher::new(self) {
            Ok(fetcher) => builder.with_state(fetcher).with_tool(WebFetchTool),
            Err(problem) => builder.with_problem(problem),
        }
    }
}

/// What `web_fetch` runs with: the settings, read, and one HTTP client.
pub(crate) struct Fetcher {
    rule: HostRule,
    client: reqwest::Client,
    settings: WebFetch,
}

impl Fetcher {
    fn new(settings: WebFetch) -> Result<Self, RegistryError> {
        let invalid = |reason: String| RegistryError::InvalidSetting {
            setting: "WebFetch".to_owned(),
            reason,
        };
        let hosts = settings
            .hosts
            .iter()
            .map(|rule| crate::util::hosts::parse_rule(rule))
            .collect::<Result<Vec<_>, _>>()
            .map_err(invalid)?;
        let rule = HostRule::new(hosts).allowing_private(settings.allow_private);
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .dns_resolver(GuardedResolver { rule: rule.clone() })
            .connect_timeout(settings.timeout.min(Duration::from_secs(10)))
            .user_agent(settings.user_agent.clone())
            .build()
            .map_err(|e| invalid(format!("the HTTP client cannot be made: {e}")))?;
        Ok(Self {
            rule,
            client,
            settings,
        })
    }
}

/// A fetched page.
#[derive(Debug, Serialize)]
struct Page {
    /// Where the content came from, after redirects.
    url: String,
    status: u16,
    content_type: Option<String>,
    title: Option<String>,
    /// Whether the body was longer than the limit and was cut.
    truncated: bool,
    /// Bytes read.
    bytes: usize,
    text: String,
}

/// Fetch a web page or other text resource over http or https, as readable text.
///
/// HTML comes back as plain text with its title; JSON, XML and other text as they are.
/// Binary content (images, PDFs, archives) is refused.
#[tool(crate = crate, register = false, read_only, open_world)]
pub(crate) async fn web_fetch(
    /// The http or https URL to fetch
    url: String,
    /// Return HTML as it is instead of as readable text
    #[arg(default = false)]
    raw: bool,
    fetcher: State<Fetcher>,
) -> Result<ToolOutput, ToolError> {
    let parsed = Url::parse(&url).map_err(|e| {
        ToolError::invalid_args(
            "web_fetch",
            vec![
                ArgumentProblem::new("/url", "an absolute http or https URL")
                    .received(format!("`{url}` ({e})")),
            ],
        )
    })?;
    let limit = fetcher.settings.timeout;
    let page = tokio::time::timeout(limit, fetch(&fetcher, parsed, raw))
        .await
        .map_err(|_| {
            ToolError::execution(format!(
                "`{url}` did not answer in full within {} s",
                limit.as_secs_f64()
            ))
        })??;
    let mut text = String::new();
    if let Some(title) = &page.title {
        let _ = writeln!(text, "# {title}");
    }
    let _ = write!(text, "{}\n\n{}", page.url, page.text);
    if page.truncated {
        let _ = write!(
            text,
            "\n\n[cut: only the first {} bytes were read]",
            page.bytes
        );
    }
    let data = serde_json::to_value(&page).map_err(ToolError::execution)?;
    Ok(ToolOutput::new(text, data))
}

async fn fetch(fetcher: &Fetcher, mut url: Url, raw: bool) -> Result<Page, ToolError> {
    let mut hops = 0;
    let response = loop {
        if let Some(why) = guard::refuse(&fetcher.rule, &url) {
            let why = if hops > 0 {
                format!("redirected to `{url}`: {why}")
            } else {
                why
            };
            return Err(ToolError::permission_denied("web_fetch", why));
        }
        let response = fetcher
            .client
            .get(url.clone())
            .send()
            .await
            .map_err(|e| request_error(&url, &e, hops > 0))?;
        if !response.status().is_redirection() {
            break response;
        }
        let Some(location) = response
            .headers()
            .get(LOCATION)
            .and_then(|l| l.to_str().ok())
        else {
            break response;
        };
        if hops == fetcher.settings.max_redirects {
            return Err(ToolError::execution(format!(
                "`{url}` redirected more than {} times",
                fetcher.settings.max_redirects
            )));
        }
        url = url.join(location).map_err(|e| {
            ToolError::execution(format!(
                "`{url}` redirected to `{location}`, which is not a URL: {e}"
            ))
        })?;
        hops += 1;
    };
    read(fetcher, response, raw).await
}

async fn read(
    fetcher: &Fetcher,
    mut response: reqwest::Response,
    raw: bool,
) -> Result<Page, ToolError> {
    let url = response.url().to_string();
    let status = response.status();
    let content_type = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let announced = response
        .headers()
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    let max = fetcher.settings.max_bytes;
    let mut body: Vec<u8> = Vec::new();
    let mut truncated = announced.is_some_and(|len| len > max as u64);
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| request_error(&response.url().clone(), &e, false))?
    {
        let room = max - body.len();
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            truncated = true;
            break;
        }
        body.extend_from_slice(&chunk);
        if body.len() == max {
            truncated = truncated || response.chunk().await.ok().flatten().is_some();
            break;
        }
    }
    drop(response);
    let essence = content_type.as_deref().map(|ct| {
        ct.split(';')
            .next()
            .unwrap_or_default()
            .trim()
            .to_ascii_lowercase()
    });
    let html = essence.as_deref().is_some_and(|e| e.contains("html"))
        || (essence.is_none() && looks_like_html(&body));
    if !html && !textual(essence.as_deref(), &body) {
        return Err(ToolError::execution(format!(
            "`{url}` is {} ({} bytes), not text; web_fetch returns text only",
            essence.as_deref().unwrap_or("binary content"),
            body.len()
        )));
    }
    let encoding = text::encoding(content_type.as_deref(), &body, html);
    let bytes = body.len();
    let (text, title) = tokio::task::spawn_blocking(move || {
        let (decoded, _, _) = encoding.decode(&body);
        if html && !raw {
            text::html_to_text(&decoded)
        } else {
            (decoded.into_owned(), None)
        }
    })
    .await
    .map_err(|e| ToolError::execution(format!("the page could not be read as text: {e}")))?;
    if !status.is_success() {
        let snippet: String = text.chars().take(500).collect();
        return Err(ToolError::execution(format!(
            "`{url}` answered {status}{}",
            if snippet.trim().is_empty() {
                String::new()
            } else {
                format!(": {}", snippet.trim())
            }
        )));
    }
    Ok(Page {
        url,
        status: status.as_u16(),
        content_type,
        title,
        truncated,
        bytes,
        text,
    })
}

/// Whether a body with this media type (or none) is text.
fn textual(essence: Option<&str>, body: &[u8]) -> bool {
    match essence {
        Some(e) => {
            e.starts_with("text/")
                || [
                    "json",
                    "xml",
                    "javascript",
                    "ecmascript",
                    "yaml",
                    "toml",
                    "csv",
                    "x-www-form-urlencoded",
                ]
                .iter()
                .any(|kind| e.contains(kind))
        }
        None => !body[..body.len().min(1024)].contains(&0),
    }
}

fn looks_like_html(body: &[u8]) -> bool {
    let head = String::from_utf8_lossy(&body[..body.len().min(512)]).to_ascii_lowercase();
    let head = head.trim_start();
    head.starts_with("<!doctype html") || head.starts_with("<html")
}

/// A failed request as the model should read it: what was refused (and that a redirect led
/// there), or what went wrong.
fn request_error(url: &Url, err: &reqwest::Error, redirected: bool) -> ToolError {
    match why_failed(err) {
        Ok(refused) => {
            let why = guard::explain(refused);
            let why = if redirected {
                format!("redirected to `{url}`: {why}")
            } else {
                why
            };
            ToolError::permission_denied("web_fetch", why)
        }
        Err((what, deepest)) => ToolError::execution(format!("`{url}` {what}: {deepest}")),
    }
}
