//! What the proxy is asked: a request's head read, where it goes, and the head rewritten for
//! the origin server.

/// The largest head the proxy reads.
pub(super) const MAX_HEAD: usize = 64 * 1024;

/// The most header lines a head may hold.
const MAX_HEADERS: usize = 128;

/// Header lines that concern this hop alone, never passed on.
const HOP: &[&str] = &[
    "host",
    "connection",
    "keep-alive",
    "proxy-connection",
    "proxy-authorization",
    "proxy-authenticate",
    "te",
    "trailer",
    "upgrade",
];

/// A request the proxy can act on.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Request {
    /// The host asked for: a name, or an address (IPv6 without brackets).
    pub(super) host: String,
    pub(super) port: u16,
    /// The head to send the origin server for a plain `http://` request; `None` for a
    /// `CONNECT` tunnel.
    pub(super) forward: Option<Vec<u8>>,
    /// How many bytes of what was read the head took.
    pub(super) head_len: usize,
}

impl Request {
    /// The scheme the host rule checks: `http` for a plain request, and `https` for a
    /// tunnel (whatever it carries, it is checked as a host and an address).
    pub(super) fn scheme(&self) -> &'static str {
        if self.forward.is_some() {
            "http"
        } else {
            "https"
        }
    }

    /// `host:port`, with brackets around an IPv6 address.
    pub(super) fn target(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }
}

/// Reads the request whose head starts `read`: `Ok(None)` while the head is not all there,
/// and a sentence for the client when it cannot be acted on.
pub(super) fn parse(read: &[u8]) -> Result<Option<Request>, String> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut request = httparse::Request::new(&mut headers);
    let head_len = match request.parse(read) {
        Ok(httparse::Status::Complete(length)) => length,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(httparse::Error::TooManyHeaders) => {
            return Err(format!(
                "the request has more than {MAX_HEADERS} header lines"
            ));
        }
        Err(error) => return Err(format!("the request is not HTTP/1 ({error})")),
    };
    let method = request.method.unwrap_or_default();
    let target = request.path.unwrap_or_default();
    if method.eq_ignore_ascii_case("CONNECT") {
        let (host, port) = authority(target, None)?;
        return Ok(Some(Request {
            host,
            port,
            forward: None,
            head_len,
        }));
    }
    let Some(rest) = strip_scheme(target, "http://") else {
        return Err(if strip_scheme(target, "https://").is_some() {
            "an https:// URL goes through a CONNECT tunnel, not a plain request".to_owned()
        } else {
            format!("the proxy takes `CONNECT host:port` or a whole `http://` URL, not `{target}`")
        });
    };
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (named, path) = rest.split_at(end);
    let (host, port) = authority(named, Some(80))?;
    let mut head = format!("{method} ").into_bytes();
    if !path.starts_with('/') {
        head.push(b'/');
    }
    head.extend_from_slice(path.as_bytes());
    head.extend_from_slice(b" HTTP/1.1\r\nHost: ");
    head.extend_from_slice(named.as_bytes());
    head.extend_from_slice(b"\r\n");
    for header in request.headers.iter() {
        if HOP.iter().any(|hop| header.name.eq_ignore_ascii_case(hop)) {
            continue;
        }
        head.extend_from_slice(header.name.as_bytes());
        head.extend_from_slice(b": ");
        head.extend_from_slice(header.value);
        head.extend_from_slice(b"\r\n");
    }
    head.extend_from_slice(b"Connection: close\r\n\r\n");
    Ok(Some(Request {
        host,
        port,
        forward: Some(head),
        head_len,
    }))
}

fn strip_scheme<'a>(target: &'a str, scheme: &str) -> Option<&'a str> {
    let head = target.get(..scheme.len())?;
    head.eq_ignore_ascii_case(scheme)
        .then(|| &target[scheme.len()..])
}

/// The host and port of `host:port`, `[v6]:port`, or a host alone when a default port is
/// given.
fn authority(text: &str, default_port: Option<u16>) -> Result<(String, u16), String> {
    let bad = || {
        format!(
            "`{text}` is not `host:port`{}",
            if default_port.is_some() {
                " or a host"
            } else {
                ""
            }
        )
    };
    if text.contains('@') {
        return Err(format!(
            "`{text}` carries credentials; the proxy does not pass them on"
        ));
    }
    let (host, port) = if let Some(inside) = text.strip_prefix('[') {
        let (host, rest) = inside.split_once(']').ok_or_else(bad)?;
        (host, rest.strip_prefix(':'))
    } else {
        match text.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (text, None),
        }
    };
    let port = match (port, default_port) {
        (Some(port), _) => port
            .parse()
            .ok()
            .filter(|&port| port != 0)
            .ok_or_else(bad)?,
        (None, Some(port)) => port,
        (None, None) => return Err(bad()),
    };
    if host.is_empty() || host.contains(['/', ' ', '\\', '%']) {
        return Err(bad());
    }
    Ok((host.to_owned(), port))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(text: &str) -> Result<Option<Request>, String> {
        parse(text.as_bytes())
    }

    #[test]
    fn a_tunnel_names_its_host_and_port() {
        let request =
            parsed("CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\nTLS")
                .unwrap()
                .unwrap();
        assert_eq!((request.host.as_str(), request.port), ("example.com", 443));
        assert_eq!(request.forward, None);
        assert_eq!(request.head_len, 59);
        let request = parsed("CONNECT [::1]:8443 HTTP/1.1\r\n\r\n")
            .unwrap()
            .unwrap();
        assert_eq!((request.host.as_str(), request.port), ("::1", 8443));
        assert_eq!(request.target(), "[::1]:8443");
    }

    #[test]
    fn a_plain_request_is_rewritten_for_the_origin_with_its_own_host() {
        let request = parsed(
            "GET http://Example.com/a?b=c HTTP/1.1\r\nHost: elsewhere.example\r\nProxy-Connection: keep-alive\r\nAccept: */*\r\n\r\n",
        )
        .unwrap()
        .unwrap();
        assert_eq!((request.host.as_str(), request.port), ("Example.com", 80));
        let head = String::from_utf8(request.forward.unwrap()).unwrap();
        assert_eq!(
            head,
            "GET /a?b=c HTTP/1.1\r\nHost: Example.com\r\nAccept: */*\r\nConnection: close\r\n\r\n"
        );
        let request = parsed("POST http://127.0.0.1:8080?x HTTP/1.1\r\n\r\n")
            .unwrap()
            .unwrap();
        assert_eq!(request.port, 8080);
        assert!(
            String::from_utf8(request.forward.unwrap())
                .unwrap()
                .starts_with("POST /?x HTTP/1.1\r\n")
        );
    }

    #[test]
    fn an_unfinished_head_asks_for_more() {
        assert_eq!(parsed("CONNECT example.com:443 HTTP/1.1\r\n"), Ok(None));
    }

    #[test]
    fn what_the_proxy_cannot_act_on_is_refused_in_words() {
        for (text, expected) in [
            ("GET /relative HTTP/1.1\r\n\r\n", "whole `http://` URL"),
            (
                "GET https://example.com/ HTTP/1.1\r\n\r\n",
                "CONNECT tunnel",
            ),
            ("CONNECT example.com HTTP/1.1\r\n\r\n", "not `host:port`"),
            ("CONNECT example.com:0 HTTP/1.1\r\n\r\n", "not `host:port`"),
            (
                "CONNECT example.com:99999 HTTP/1.1\r\n\r\n",
                "not `host:port`",
            ),
            ("CONNECT :443 HTTP/1.1\r\n\r\n", "not `host:port`"),
            ("CONNECT [::1 HTTP/1.1\r\n\r\n", "not `host:port`"),
            (
                "GET http://user:pw@example.com/ HTTP/1.1\r\n\r\n",
                "credentials",
            ),
            ("\u{1}\u{2} nonsense\r\n\r\n", "not HTTP/1"),
        ] {
            let error = parsed(text).unwrap_err();
            assert!(error.contains(expected), "{text:?}: {error}");
        }
        let many = format!(
            "GET http://example.com/ HTTP/1.1\r\n{}\r\n",
            "A: b\r\n".repeat(MAX_HEADERS + 1)
        );
        assert!(parsed(&many).unwrap_err().contains("header lines"));
    }
}
