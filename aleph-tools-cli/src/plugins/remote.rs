//! `--server`: a running server's management API, spoken to in JSON-RPC over HTTP.

use aleph_tools::plugin::ADMIN_PATH;
use anyhow::{Context as _, bail};
use serde_json::{Value, json};

/// The variable holding the bearer token sent with `--server`.
pub const TOKEN_VARIABLE: &str = "ALEPH_TOOLS_TOKEN";

/// A running server's management API.
pub struct Remote {
    pub(super) url: String,
    token: Option<String>,
    client: reqwest::Client,
}

impl Remote {
    /// The API of the server at `server` (`http://127.0.0.1:8080`, or the API's own URL
    /// ending in `/admin`), with the token in `ALEPH_TOOLS_TOKEN` when that is set. Plain
    /// http is refused but on loopback: the token would cross the network in clear.
    pub fn new(server: &str) -> anyhow::Result<Self> {
        let base = server.trim_end_matches('/');
        let Some((scheme, rest)) = base.split_once("://") else {
            bail!("--server `{server}` is not an http or https URL, such as http://127.0.0.1:8080");
        };
        let host = rest.split(['/', '?', '#']).next().unwrap_or_default();
        let host = host.rsplit_once('@').map_or(host, |(_, host)| host);
        let host = match host.strip_prefix('[') {
            Some(inside) => inside.split(']').next().unwrap_or_default(),
            None => host.split(':').next().unwrap_or_default(),
        };
        let loopback = host.eq_ignore_ascii_case("localhost")
            || host
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback());
        match scheme {
            "https" => {}
            "http" if loopback => {}
            "http" => bail!(
                "--server `{server}` is plain http to another machine, which would carry the admin token in clear; serve it behind https (a TLS-terminating proxy) and give the https URL"
            ),
            _ => bail!(
                "--server `{server}` is not an http or https URL, such as http://127.0.0.1:8080"
            ),
        }
        let url = if base.ends_with(ADMIN_PATH) {
            base.to_owned()
        } else {
            format!("{base}{ADMIN_PATH}")
        };
        let token = std::env::var(TOKEN_VARIABLE)
            .ok()
            .map(|token| token.trim().to_owned())
            .filter(|token| !token.is_empty());
        // No proxy from the environment sees the token; an install may take its download's
        // minute and a load's time.
        let client = reqwest::Client::builder()
            .no_proxy()
            .connect_timeout(std::time::Duration::from_secs(10))
            .timeout(std::time::Duration::from_mins(5))
            .user_agent(concat!("aleph-tools/", env!("CARGO_PKG_VERSION")))
            .build()
            .context("the HTTP client cannot be made")?;
        Ok(Self { url, token, client })
    }

    /// Calls `method` with `params`; its result, or its error's message.
    pub(super) async fn call(&self, method: &str, params: Value) -> anyhow::Result<Value> {
        let body = json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params });
        let mut request = self
            .client
            .post(&self.url)
            .header("content-type", "application/json");
        if let Some(token) = &self.token {
            request = request.bearer_auth(token);
        }
        let response = request
            .body(body.to_string())
            .send()
            .await
            .map_err(|error| {
                anyhow::anyhow!(
                    "cannot reach the server at `{}`: {}",
                    self.url,
                    deepest(&error)
                )
            })?;
        let status = response.status();
        let text = response
            .text()
            .await
            .with_context(|| format!("`{}` broke off its answer", self.url))?;
        let answer: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        if let Some(message) = answer["error"]["message"].as_str() {
            if status.as_u16() == 401 && self.token.is_none() {
                bail!("{message}; set {TOKEN_VARIABLE} to a token with the scope `admin`");
            }
            bail!("{message}");
        }
        if !status.is_success() {
            let said = answer["error_description"].as_str().unwrap_or(text.trim());
            let hint = if status.as_u16() == 401 && self.token.is_none() {
                format!("; set {TOKEN_VARIABLE} to a token with the scope `admin`")
            } else {
                String::new()
            };
            bail!("`{}` answered {status}: {said}{hint}", self.url);
        }
        match answer.get("result") {
            Some(result) => Ok(result.clone()),
            None => bail!(
                "`{}` did not answer as a management API does: {text}",
                self.url
            ),
        }
    }
}

/// The innermost cause of `error`, which says what happened in the fewest words
/// (`Connection refused (os error 111)`).
fn deepest(error: &(dyn std::error::Error + 'static)) -> String {
    let mut current = error;
    while let Some(source) = current.source() {
        current = source;
    }
    current.to_string()
}
