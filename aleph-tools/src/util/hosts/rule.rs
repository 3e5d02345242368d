//! [`HostRule`]: where one client of the library (`web_fetch`, a WebAssembly plugin) may
//! connect. A URL is checked before each request, every redirect hop included, and the
//! addresses a name resolves to are checked before the connection, which goes only to an
//! address that passed.

use std::net::{IpAddr, SocketAddr};

use super::address::{Special, judge};
use super::covers;

/// The hosts granted (patterns as [`parse_rule`](super::parse_rule) reads them) and whether
/// private and special addresses may be reached by any of them.
///
/// An address that is not on the public internet ([`judge`]) is reached only when the host
/// asked for and a pattern both name it: the address itself in the URL and in a pattern
/// (`127.0.0.1`, `::1`), or `localhost` in both for loopback addresses. `*` and
/// `*.example.com` never reach such an address, and no name but `localhost` does, whatever it
/// resolves to: a name's answers are its owner's to change.
#[derive(Debug, Clone, Default)]
pub(crate) struct HostRule {
    patterns: Vec<String>,
    allow_private: bool,
}

/// Why a connection is refused. `Display` is written for the model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Refusal {
    /// A scheme other than http and https.
    #[error("`{0}:` URLs cannot be fetched; only http and https")]
    Scheme(String),
    /// A URL without a host.
    #[error("the URL names no host")]
    NoHost,
    /// No pattern covers the host.
    #[error("the host `{host}` is not among the allowed hosts ({allowed})")]
    NotGranted {
        /// The host asked for.
        host: String,
        /// The patterns, listed.
        allowed: String,
    },
    /// The host is, or resolves to, an address no pattern names.
    #[error("{}", private(host, special))]
    Private {
        /// The host asked for.
        host: String,
        /// The address and why it is not public.
        special: Special,
    },
    /// The name resolves to nothing.
    #[error("`{0}` resolves to no address")]
    Unresolved(String),
}

fn private(host: &str, special: &Special) -> String {
    let rule = match special.ip {
        IpAddr::V4(ip) => format!("connect:{ip}"),
        IpAddr::V6(ip) => format!("connect:[{ip}]"),
    };
    if host.parse::<IpAddr>().ok() == Some(special.ip) {
        let what = match special.carried {
            None => format!("`{host}` is {}", special.what()),
            Some(_) => format!("`{host}` {}", special.what()),
        };
        return format!(
            "{what}; such an address is reached only through a rule that names it (`{rule}`)"
        );
    }
    format!(
        "`{host}` resolves to {special}; no name but `localhost` reaches such an address: \
         write the address in the URL, with a rule that names it (`{rule}`)"
    )
}

impl HostRule {
    /// A rule granting these host patterns.
    pub(crate) fn new(patterns: impl IntoIterator<Item = String>) -> Self {
        Self {
            patterns: patterns.into_iter().collect(),
            allow_private: false,
        }
    }

    /// Lets every granted host reach private and special addresses too.
    #[cfg(feature = "builtin")]
    #[must_use]
    pub(crate) fn allowing_private(mut self, allow: bool) -> Self {
        self.allow_private = allow;
        self
    }

    /// Checks one request before it is sent: the scheme (http, https), the host (`host_str` of
    /// a URL; IPv6 in brackets or not) against the patterns, and an address written in the
    /// URL against the address ranges.
    pub(crate) fn check(&self, scheme: &str, host: Option<&str>) -> Result<(), Refusal> {
        if !scheme.eq_ignore_ascii_case("http") && !scheme.eq_ignore_ascii_case("https") {
            return Err(Refusal::Scheme(scheme.to_owned()));
        }
        let host = bare(host.unwrap_or_default());
        if host.is_empty() {
            return Err(Refusal::NoHost);
        }
        self.grant(host)?;
        match host.parse::<IpAddr>() {
            Ok(ip) => self.reach(host, ip),
            Err(_) => Ok(()),
        }
    }

    /// The addresses among `found` (what `host` resolved to) that a connection may go to,
    /// in their order; an error saying why when none may.
    pub(crate) fn admit(
        &self,
        host: &str,
        found: impl IntoIterator<Item = SocketAddr>,
    ) -> Result<Vec<SocketAddr>, Refusal> {
        let host = bare(host);
        self.grant(host)?;
        let mut kept = Vec::new();
        let mut refused = None;
        for addr in found {
            match self.reach(host, addr.ip()) {
                Ok(()) => kept.push(addr),
                Err(refusal) => {
                    refused.get_or_insert(refusal);
                }
            }
        }
        match refused {
            Some(refusal) if kept.is_empty() => Err(refusal),
            None if kept.is_empty() => Err(Refusal::Unresolved(host.to_owned())),
            _ => Ok(kept),
        }
    }

    fn grant(&self, host: &str) -> Result<(), Refusal> {
        if self.patterns.iter().any(|pattern| covers(pattern, host)) {
            return Ok(());
        }
        let allowed: Vec<String> = self.patterns.iter().map(|p| format!("`{p}`")).collect();
        Err(Refusal::NotGranted {
            host: host.to_owned(),
            allowed: if allowed.is_empty() {
                "none".to_owned()
            } else {
                allowed.join(", ")
            },
        })
    }

    /// Whether `ip`, reached through the granted `host`, may be connected to.
    fn reach(&self, host: &str, ip: IpAddr) -> Result<(), Refusal> {
        match judge(ip) {
            Ok(()) => Ok(()),
            Err(_) if self.allow_private || self.names(host, ip) => Ok(()),
            Err(special) => Err(Refusal::Private {
                host: host.to_owned(),
                special,
            }),
        }
    }

    /// Whether `host` and a pattern both name `ip`: the address itself, or `localhost` for a
    /// loopback address.
    fn names(&self, host: &str, ip: IpAddr) -> bool {
        let ip = ip.to_canonical();
        if host.eq_ignore_ascii_case("localhost") {
            return ip.is_loopback()
                && self
                    .patterns
                    .iter()
                    .any(|pattern| pattern.eq_ignore_ascii_case("localhost"));
        }
        let same = |text: &str| {
            text.parse::<IpAddr>()
                .is_ok_and(|named| named.to_canonical() == ip)
        };
        same(host) && self.patterns.iter().any(|pattern| same(pattern))
    }
}

/// A host without the brackets of an IPv6 address in a URL.
fn bare(host: &str) -> &str {
    host.strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(patterns: &[&str]) -> HostRule {
        HostRule::new(patterns.iter().map(|p| (*p).to_owned()))
    }

    fn addrs(ips: &[&str]) -> Vec<SocketAddr> {
        ips.iter()
            .map(|ip| SocketAddr::new(ip.parse().unwrap(), 80))
            .collect()
    }

    #[test]
    fn wildcards_never_reach_a_private_address() {
        let any = rule(&["*"]);
        assert_eq!(any.check("https", Some("example.org")), Ok(()));
        for host in [
            "127.0.0.1",
            "[::1]",
            "10.0.0.1",
            "[::ffff:7f00:1]",
            "[fec0::1]",
        ] {
            assert!(
                matches!(any.check("http", Some(host)), Err(Refusal::Private { .. })),
                "{host}"
            );
        }
        let sub = rule(&["*.example.com"]);
        let refused = sub
            .admit("evil.example.com", addrs(&["127.0.0.1"]))
            .unwrap_err();
        assert_eq!(
            refused.to_string(),
            "`evil.example.com` resolves to 127.0.0.1, a loopback address; no name but \
             `localhost` reaches such an address: write the address in the URL, with a rule \
             that names it (`connect:127.0.0.1`)"
        );
        // Public answers are kept, private ones dropped, in their order.
        assert_eq!(
            sub.admit(
                "api.example.com",
                addrs(&["10.0.0.1", "93.184.216.34", "::1"])
            ),
            Ok(addrs(&["93.184.216.34"]))
        );
        assert_eq!(
            sub.admit("api.example.com", []),
            Err(Refusal::Unresolved("api.example.com".into()))
        );
    }

    #[test]
    fn a_rule_that_names_an_address_reaches_it() {
        let named = rule(&["127.0.0.1", "::1", "localhost"]);
        assert_eq!(named.check("http", Some("127.0.0.1")), Ok(()));
        assert_eq!(named.check("http", Some("[::1]")), Ok(()));
        // The same address written as IPv4-mapped IPv6 is the same destination.
        assert_eq!(named.check("http", Some("[::ffff:7f00:1]")), Ok(()));
        assert_eq!(
            named.admit("localhost", addrs(&["127.0.0.1", "::1"])),
            Ok(addrs(&["127.0.0.1", "::1"]))
        );
        // `localhost` names loopback, nothing else private.
        assert!(matches!(
            rule(&["localhost"]).admit("localhost", addrs(&["10.0.0.1"])),
            Err(Refusal::Private { .. })
        ));
        // A name that resolves to a named address does not reach it: the name's owner chooses
        // its answers.
        for patterns in [&["127.0.0.1", "*"][..], &["localhost", "*.example.com"]] {
            assert!(
                matches!(
                    rule(patterns).admit("evil.example.com", addrs(&["127.0.0.1"])),
                    Err(Refusal::Private { .. })
                ),
                "{patterns:?}"
            );
        }
        // A name granted by itself gets no private address from its answers.
        assert!(matches!(
            rule(&["db.example.com"]).admit("db.example.com", addrs(&["10.0.0.5"])),
            Err(Refusal::Private { .. })
        ));
    }

    #[cfg(feature = "builtin")]
    #[test]
    fn allowing_private_opens_every_granted_host() {
        let open = rule(&["*"]).allowing_private(true);
        assert_eq!(open.check("http", Some("[fe80::1]")), Ok(()));
        assert_eq!(
            open.admit("intranet.example", addrs(&["10.0.0.5"])),
            Ok(addrs(&["10.0.0.5"]))
        );
        assert!(matches!(open.check("http", Some("example.org")), Ok(())));
    }

    #[test]
    fn hosts_outside_the_patterns_and_other_schemes_are_refused() {
        let sub = rule(&["*.example.com"]);
        assert_eq!(
            sub.check("https", Some("example.org"))
                .unwrap_err()
                .to_string(),
            "the host `example.org` is not among the allowed hosts (`*.example.com`)"
        );
        assert_eq!(
            rule(&[])
                .check("https", Some("a.io"))
                .unwrap_err()
                .to_string(),
            "the host `a.io` is not among the allowed hosts (none)"
        );
        assert_eq!(
            sub.check("file", Some("")),
            Err(Refusal::Scheme("file".into()))
        );
        assert_eq!(sub.check("http", None), Err(Refusal::NoHost));
        assert!(matches!(
            sub.admit("example.org", addrs(&["93.184.216.34"])),
            Err(Refusal::NotGranted { .. })
        ));
    }

    #[test]
    fn refusals_say_what_the_address_carries() {
        assert_eq!(
            rule(&["*"])
                .check("http", Some("[::7f00:1]"))
                .unwrap_err()
                .to_string(),
            "`::7f00:1` carries 127.0.0.1 (IPv4-compatible), a loopback address; such an \
             address is reached only through a rule that names it (`connect:[::7f00:1]`)"
        );
        assert_eq!(
            rule(&["*"])
                .check("http", Some("169.254.169.254"))
                .unwrap_err()
                .to_string(),
            "`169.254.169.254` is a link-local address (where cloud metadata services answer); \
             such an address is reached only through a rule that names it \
             (`connect:169.254.169.254`)"
        );
    }
}
