//! The checks every HTTP request passes first, against DNS rebinding and other sites' pages:
//! its `Host` must be one the server answers to, and its `Origin`, when a browser sent one,
//! a page the server trusts: its own origins (`http://` a loopback name or the bound address,
//! with its port), the CORS origins it was given, and the hosts it was told to accept.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::Request;
use axum::http::{HeaderMap, HeaderValue, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;

/// The names the server answers to unless told others.
pub(super) const LOOPBACK: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

/// What a request's `Host` and `Origin` are checked against.
pub(super) struct Guard {
    /// Names, or `name:port`, a request's `Host` may be.
    hosts: Arc<[String]>,
    /// Whether `hosts` were given (then a page of one of them is trusted too).
    hosts_given: bool,
    /// The CORS origins given (`*` for any).
    cors: Arc<[String]>,
    /// Where the server listens.
    local: SocketAddr,
}

impl Guard {
    pub(super) fn new(
        hosts: Option<Arc<[String]>>,
        cors: Option<Arc<[String]>>,
        local: SocketAddr,
    ) -> Arc<Self> {
        Arc::new(Self {
            hosts_given: hosts.is_some(),
            hosts: hosts.unwrap_or_else(|| LOOPBACK.map(String::from).into()),
            cors: cors.unwrap_or_else(|| Arc::new([])),
            local,
        })
    }

    /// Whether the request's `Host` is one of the hosts (a name, matched with any port, or
    /// a `name:port`). A `Host` that is not an authority (an IPv6 address without its
    /// brackets, a bracket left open) is none of them.
    fn host_allowed(&self, headers: &HeaderMap) -> bool {
        let Some(host) = headers.get(header::HOST).and_then(|h| h.to_str().ok()) else {
            return false;
        };
        let name = match host.rsplit_once(':') {
            Some((name, port)) if port.chars().all(|c| c.is_ascii_digit()) => name,
            _ => host,
        };
        let well_formed = match name.strip_prefix('[') {
            Some(address) => address.len() > 1 && address.ends_with(']'),
            None => !name.contains([':', '[', ']']),
        };
        if !well_formed {
            return false;
        }
        let name = unbracketed(name);
        self.hosts.iter().any(|entry| {
            entry.eq_ignore_ascii_case(host) || unbracketed(entry).eq_ignore_ascii_case(name)
        })
    }

    /// Whether a page of `origin` (an `Origin` header's value) may call the server.
    fn origin_allowed(&self, origin: &str) -> bool {
        let origin = origin.trim();
        if self.cors.iter().any(|allowed| {
            allowed == "*" || allowed.trim_end_matches('/').eq_ignore_ascii_case(origin)
        }) {
            return true;
        }
        let Some((scheme, host, port)) = parse_origin(origin) else {
            return false;
        };
        let own = scheme == "http"
            && port == Some(self.local.port())
            && (LOOPBACK.contains(&host.as_str()) || host == self.local.ip().to_string());
        own || (self.hosts_given && self.names_host(&scheme, &host, port))
    }

    /// Whether one of the hosts given names `host` (with `port`, when the entry has one).
    fn names_host(&self, scheme: &str, host: &str, port: Option<u16>) -> bool {
        let port = port.or(match scheme {
            "http" => Some(80),
            "https" => Some(443),
            _ => None,
        });
        self.hosts.iter().any(|entry| {
            let Ok(authority) = entry.parse::<axum::http::uri::Authority>() else {
                return false;
            };
            unbracketed(&authority.host().to_ascii_lowercase()) == host
                && authority
                    .port_u16()
                    .is_none_or(|wanted| Some(wanted) == port)
        })
    }
}

fn unbracketed(host: &str) -> &str {
    host.trim_start_matches('[').trim_end_matches(']')
}

/// An origin's scheme, host (lowercase, without brackets) and port, when it is a
/// `scheme://host[:port]` of `http` or `https`.
fn parse_origin(origin: &str) -> Option<(String, String, Option<u16>)> {
    let uri: Uri = origin.parse().ok()?;
    let scheme = uri.scheme_str()?.to_ascii_lowercase();
    if scheme != "http" && scheme != "https" {
        return None;
    }
    if uri
        .path_and_query()
        .is_some_and(|path| path.as_str() != "/")
    {
        return None;
    }
    let authority = uri.authority()?;
    let host = unbracketed(&authority.host().to_ascii_lowercase()).to_owned();
    Some((scheme, host, authority.port_u16()))
}

/// The answer to a request this server refuses before any route: one for another `Host`,
/// or from a page of an origin not trusted. A request without `Origin` (any client but a
/// browser) passes that check.
pub(super) fn refusal(guard: &Guard, request: &Request) -> Option<Response> {
    if !guard.host_allowed(request.headers()) {
        return Some((StatusCode::FORBIDDEN, "this Host is not allowed").into_response());
    }
    let origin = request.headers().get(header::ORIGIN)?;
    let text = origin.to_str().unwrap_or_default();
    (!guard.origin_allowed(text)).then(|| refuse_origin(text, guard.local))
}

/// `403 Forbidden` for a page of `origin`, with a JSON-RPC error saying what is trusted.
fn refuse_origin(origin: &str, local: SocketAddr) -> Response {
    let shown: String = origin
        .chars()
        .filter(|c| !c.is_control())
        .take(200)
        .collect();
    let message = format!(
        "requests from web pages of `{shown}` are not allowed (the MCP transport checks `Origin` against DNS rebinding): this server accepts pages of its own origin (http://localhost:{port}), of the CORS origins it was given (`with_cors_origins`, `cors_origins` in the command's config) and of the hosts it was told to accept (`with_allowed_hosts`, `allowed_hosts`)",
        port = local.port(),
    );
    let body = json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": { "code": -32600, "message": message },
    });
    let mut response = (StatusCode::FORBIDDEN, body.to_string()).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guard(hosts: Option<&[&str]>, cors: Option<&[&str]>) -> Arc<Guard> {
        let list =
            |items: &[&str]| -> Arc<[String]> { items.iter().map(|s| (*s).to_owned()).collect() };
        Guard::new(
            hosts.map(list),
            cors.map(list),
            "127.0.0.1:8123".parse().unwrap(),
        )
    }

    #[test]
    fn own_origins_pass_and_others_do_not() {
        let plain = guard(None, None);
        for ok in [
            "http://127.0.0.1:8123",
            "http://localhost:8123",
            "http://[::1]:8123",
            "HTTP://LOCALHOST:8123",
        ] {
            assert!(plain.origin_allowed(ok), "{ok}");
        }
        for bad in [
            "http://evil.example",
            "http://localhost:3000",
            "https://127.0.0.1:8123",
            "null",
            "http://127.0.0.1:8123.evil.example",
            "file://",
            "",
        ] {
            assert!(!plain.origin_allowed(bad), "{bad}");
        }
    }

    #[test]
    fn a_host_is_matched_only_when_it_is_an_authority() {
        let plain = guard(None, None);
        let allowed = |host: &'static str| {
            let mut headers = HeaderMap::new();
            headers.insert(header::HOST, HeaderValue::from_static(host));
            plain.host_allowed(&headers)
        };
        for ok in [
            "localhost",
            "localhost:8123",
            "127.0.0.1:80",
            "[::1]",
            "[::1]:8123",
        ] {
            assert!(allowed(ok), "{ok}");
        }
        for bad in [
            "::1",
            "::1:8123",
            "[localhost",
            "localhost]",
            "[]",
            "[::1",
            "localhost:80:80",
            "evil.example",
            "",
        ] {
            assert!(!allowed(bad), "{bad}");
        }
    }

    #[test]
    fn cors_origins_and_allowed_hosts_are_trusted() {
        let given = guard(
            Some(&["tools.example.com", "other.example:8443"]),
            Some(&["https://app.example.com/"]),
        );
        assert!(given.origin_allowed("https://app.example.com"));
        assert!(given.origin_allowed("https://tools.example.com"));
        assert!(given.origin_allowed("http://tools.example.com:9000"));
        assert!(given.origin_allowed("https://other.example:8443"));
        assert!(!given.origin_allowed("https://other.example"));
        assert!(!given.origin_allowed("https://app.example.com.evil.example"));
        assert!(guard(None, Some(&["*"])).origin_allowed("http://evil.example"));
    }
}
