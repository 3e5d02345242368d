//! The host rule every request a page makes is checked against before it goes out: the
//! library's one [`HostRule`], as `web_fetch` applies it.

use std::net::SocketAddr;

use url::Url;

use crate::util::hosts::HostRule;

/// Schemes that load nothing from the network: always allowed.
const LOCAL: &[&str] = &["about", "data", "blob"];

/// What requests a page may make.
pub(super) struct Rules {
    rule: HostRule,
    /// Resolve names here and refuse those that lead to addresses the rule refuses (when the
    /// browser is not behind the sandbox's proxy, which does this for every connection).
    resolve: bool,
}

impl Rules {
    pub(super) fn new(rule: HostRule, resolve: bool) -> Self {
        Self { rule, resolve }
    }

    /// Why a request for `url` may not go out, or `Ok`.
    pub(super) async fn check(&self, url: &str) -> Result<(), String> {
        let parsed = Url::parse(url).map_err(|error| format!("`{url}` is not a URL ({error})"))?;
        if LOCAL.contains(&parsed.scheme()) {
            return Ok(());
        }
        self.rule
            .check(parsed.scheme(), parsed.host_str())
            .map_err(|refusal| super::super::fetch::explain_refusal(&refusal))?;
        let Some(url::Host::Domain(name)) = parsed.host() else {
            return Ok(());
        };
        if !self.resolve {
            return Ok(());
        }
        let found: Vec<SocketAddr> = tokio::net::lookup_host((name, 0))
            .await
            .map_err(|error| format!("`{name}` cannot be resolved: {error}"))?
            .collect();
        self.rule
            .admit(name, found)
            .map(|_| ())
            .map_err(|refusal| super::super::fetch::explain_refusal(&refusal))
    }

    /// Why `url` may not be navigated to, checked before the browser is asked: the same
    /// rule, and only http and https (or `about:blank`).
    pub(super) async fn check_navigation(&self, url: &str) -> Result<(), String> {
        let parsed = Url::parse(url).map_err(|error| {
            format!("`{url}` is not an absolute URL ({error}); write it with its scheme, as in https://example.com/")
        })?;
        if parsed.scheme() == "about" && parsed.path() == "blank" {
            return Ok(());
        }
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(format!(
                "only http and https pages can be opened, not `{}:`",
                parsed.scheme()
            ));
        }
        self.check(url).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn requests_follow_the_host_rule() {
        let rules = Rules::new(
            HostRule::new(["*.example.com".to_owned(), "127.0.0.1".to_owned()]),
            false,
        );
        assert!(rules.check("https://docs.example.com/a").await.is_ok());
        assert!(rules.check("http://127.0.0.1:8080/").await.is_ok());
        assert!(rules.check("data:text/html,hi").await.is_ok());
        let refused = rules.check("http://10.0.0.1/").await.unwrap_err();
        assert!(refused.contains("10.0.0.1"), "{refused}");
        let refused = rules.check("file:///etc/passwd").await.unwrap_err();
        assert!(refused.contains("only http"), "{refused}");
        let refused = rules
            .check_navigation("data:text/html,x")
            .await
            .unwrap_err();
        assert!(refused.contains("only http and https"), "{refused}");
        assert!(rules.check_navigation("about:blank").await.is_ok());
        assert!(rules.check_navigation("example.com").await.is_err());
    }
}
