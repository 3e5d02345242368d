//! What the proxy admits: the policy's host patterns, each with the one port it names or
//! every port, turned into the library's host rule for each request.

use crate::util::hosts::{HostRule, covers};

/// The patterns of [`Network::Proxy`](crate::sandbox::Network::Proxy), read.
pub(super) struct Grants {
    patterns: Vec<(String, Option<u16>)>,
}

impl Grants {
    /// Reads patterns in their one form (`host`, `host:port`, `[v6]:port`, or a bare IPv6
    /// address).
    pub(super) fn new(patterns: &[String]) -> Self {
        Self {
            patterns: patterns.iter().map(|pattern| split(pattern)).collect(),
        }
    }

    /// The host rule for a request to `port` of `host`: the patterns that admit that port.
    /// A host some pattern names, but on other ports alone, is refused here, in words.
    pub(super) fn rule(&self, host: &str, port: u16) -> Result<HostRule, String> {
        let naming: Vec<&(String, Option<u16>)> = self
            .patterns
            .iter()
            .filter(|(pattern, _)| covers(pattern, host))
            .collect();
        let admitting = |allowed: &Option<u16>| allowed.is_none_or(|allowed| allowed == port);
        if !naming.is_empty() && !naming.iter().any(|(_, allowed)| admitting(allowed)) {
            let ports: Vec<String> = naming
                .iter()
                .filter_map(|(_, allowed)| allowed.map(|allowed| allowed.to_string()))
                .collect();
            return Err(format!(
                "port {port} of `{host}` is not granted; its patterns admit port {} alone",
                ports.join(", ")
            ));
        }
        Ok(HostRule::new(
            self.patterns
                .iter()
                .filter(|(_, allowed)| admitting(allowed))
                .map(|(pattern, _)| pattern.clone()),
        ))
    }
}

/// `host:port` and `[v6]:port` into the host and the port; anything else is a host alone.
fn split(pattern: &str) -> (String, Option<u16>) {
    if let Some((host, port)) = pattern
        .strip_prefix('[')
        .and_then(|inside| inside.split_once("]:"))
        && let Ok(port) = port.parse()
    {
        return (host.to_owned(), Some(port));
    }
    match pattern.split_once(':') {
        Some((host, port)) if !port.contains(':') => match port.parse() {
            Ok(port) => (host.to_owned(), Some(port)),
            Err(_) => (pattern.to_owned(), None),
        },
        _ => (pattern.to_owned(), None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grants(patterns: &[&str]) -> Grants {
        Grants::new(&patterns.iter().map(|p| (*p).to_owned()).collect::<Vec<_>>())
    }

    #[test]
    fn a_pattern_with_a_port_admits_that_port_alone() {
        let grants = grants(&["127.0.0.1:8080", "[::1]:9090", "api.example.com", "::2"]);
        assert!(
            grants
                .rule("127.0.0.1", 8080)
                .unwrap()
                .check("https", Some("127.0.0.1"))
                .is_ok()
        );
        let error = grants.rule("127.0.0.1", 6379).err().unwrap();
        assert!(
            error.contains("port 6379 of `127.0.0.1` is not granted"),
            "{error}"
        );
        assert!(error.contains("admit port 8080 alone"), "{error}");
        assert!(
            grants
                .rule("::1", 9090)
                .unwrap()
                .check("https", Some("::1"))
                .is_ok()
        );
        assert!(grants.rule("::1", 22).is_err());
        for port in [80, 443, 8443] {
            let rule = grants.rule("api.example.com", port).unwrap();
            assert!(rule.check("https", Some("api.example.com")).is_ok());
        }
        assert!(
            grants
                .rule("::2", 1)
                .unwrap()
                .check("https", Some("::2"))
                .is_ok()
        );
        // A host no pattern names goes on to the host rule, which says so.
        let rule = grants.rule("other.example.com", 443).unwrap();
        assert!(rule.check("https", Some("other.example.com")).is_err());
    }
}
