//! Where `web_fetch` may connect: host rules in the plugin permission syntax, and no private,
//! loopback or link-local address unless allowed, checked on the addresses a name resolves
//! to (the connection goes to a checked address, so a name cannot change its answer between
//! the check and the connection).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use reqwest::Url;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};

/// The rules one `web_fetch` server follows.
#[derive(Debug, Clone)]
pub(super) struct Rules {
    /// Host patterns (`*`, `*.example.com`, `api.example.com`, `127.0.0.1`).
    pub hosts: Vec<String>,
    pub allow_private: bool,
}

impl Rules {
    /// Why `url` may not be fetched, or `None`.
    pub fn refuse(&self, url: &Url) -> Option<String> {
        if !matches!(url.scheme(), "http" | "https") {
            return Some(format!(
                "`{}:` URLs cannot be fetched; only http and https",
                url.scheme()
            ));
        }
        let Some(host) = url.host_str() else {
            return Some(format!("`{url}` names no host"));
        };
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        if !self
            .hosts
            .iter()
            .any(|rule| crate::hosts::covers(rule, bare))
        {
            let allowed: Vec<String> = self.hosts.iter().map(|h| format!("`{h}`")).collect();
            return Some(format!(
                "the host `{bare}` is not among the allowed hosts ({})",
                if allowed.is_empty() {
                    "none".to_owned()
                } else {
                    allowed.join(", ")
                }
            ));
        }
        if let Ok(ip) = bare.parse::<IpAddr>()
            && !self.allow_private
            && !public(ip)
        {
            return Some(private_refusal(bare, ip));
        }
        None
    }
}

fn private_refusal(host: &str, ip: IpAddr) -> String {
    format!(
        "`{host}` is {}, which web_fetch does not reach unless the server allows private addresses",
        if ip.is_loopback() {
            format!("the loopback address {ip}")
        } else {
            format!("the private or reserved address {ip}")
        }
    )
}

/// Whether `ip` is an address on the public internet: not loopback, private, link-local
/// (cloud metadata services live there), shared, unspecified, broadcast, multicast or
/// documentation space; IPv4 inside IPv6 is judged as IPv4.
pub(super) fn public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(ip) => public_v4(ip),
        IpAddr::V6(ip) => match ip.to_ipv4_mapped() {
            Some(v4) => public_v4(v4),
            None => public_v6(ip),
        },
    }
}

fn public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, ..] = ip.octets();
    !(ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_unspecified()
        || ip.is_broadcast()
        || ip.is_multicast()
        || ip.is_documentation()
        || a == 0
        || (a == 100 && (64..128).contains(&b))
        || (a == 192 && b == 0 && ip.octets()[2] == 0)
        || (a == 198 && (18..20).contains(&b))
        || a >= 240)
}

fn public_v6(ip: Ipv6Addr) -> bool {
    let first = ip.segments()[0];
    !(ip.is_loopback()
        || ip.is_unspecified()
        || ip.is_multicast()
        || (first & 0xfe00) == 0xfc00 // unique local
        || (first & 0xffc0) == 0xfe80 // link-local
        || (first == 0x2001 && ip.segments()[1] == 0x0db8) // documentation
        || (first == 0x64 && ip.segments()[1] == 0xff9b)) // NAT64, reaches IPv4 space
}

/// A name refused because of where it leads.
#[derive(Debug)]
pub(super) struct Refused(pub String);

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Refused {}

/// Resolves names with the system resolver and keeps only the addresses the rules allow.
pub(super) struct GuardedResolver {
    pub allow_private: bool,
}

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let allow_private = self.allow_private;
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let found: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let kept: Vec<SocketAddr> = found
                .iter()
                .copied()
                .filter(|addr| allow_private || public(addr.ip()))
                .collect();
            if kept.is_empty() {
                let reason = match found.first() {
                    Some(addr) => private_refusal(&host, addr.ip()),
                    None => format!("`{host}` resolves to no address"),
                };
                return Err(Box::new(Refused(reason)) as _);
            }
            let addrs: Addrs = Box::new(kept.into_iter());
            Ok(addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_are_judged() {
        for private in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "255.255.255.255",
            "::1",
            "::",
            "fd00::1",
            "fe80::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "64:ff9b::7f00:1",
        ] {
            assert!(!public(private.parse().unwrap()), "{private}");
        }
        for open in ["93.184.216.34", "1.1.1.1", "2606:4700::1111"] {
            assert!(public(open.parse().unwrap()), "{open}");
        }
    }

    #[test]
    fn urls_are_checked_against_the_rules() {
        let rules = Rules {
            hosts: vec!["*.example.com".into(), "127.0.0.1".into()],
            allow_private: false,
        };
        let refuse = |url: &str| rules.refuse(&Url::parse(url).unwrap());
        assert_eq!(refuse("https://api.example.com/x"), None);
        assert!(
            refuse("https://example.org/")
                .unwrap()
                .contains("not among")
        );
        assert!(
            refuse("http://127.0.0.1:8080/")
                .unwrap()
                .contains("loopback")
        );
        assert!(refuse("file:///etc/passwd").unwrap().contains("only http"));
        assert!(
            refuse("ftp://api.example.com/")
                .unwrap()
                .contains("only http")
        );
        let open = Rules {
            hosts: vec!["*".into()],
            allow_private: true,
        };
        assert_eq!(open.refuse(&Url::parse("http://[::1]:80/").unwrap()), None);
    }
}
