//! Host rules in the plugin permission syntax (`connect:https://api.example.com`,
//! `connect:*.example.com`, `connect:*`): read, and matched against hosts. Plugins' network
//! grants, the host policy, the built-in `web_fetch` and WebAssembly plugins' HTTP share them,
//! and where something connects, one [`HostRule`] decides, with the address ranges of
//! [`address`].

use std::net::{IpAddr, Ipv6Addr};

#[cfg(any(feature = "wasm", feature = "builtin", feature = "sandbox"))]
mod address;
#[cfg(any(feature = "builtin", feature = "admin"))]
mod resolver;
#[cfg(any(feature = "wasm", feature = "builtin", feature = "sandbox"))]
mod rule;

#[cfg(any(feature = "builtin", feature = "admin"))]
pub(crate) use resolver::{GuardedResolver, why_failed};

#[cfg(any(feature = "wasm", feature = "builtin", feature = "sandbox"))]
pub(crate) use rule::HostRule;
#[cfg(any(feature = "wasm", feature = "builtin", feature = "admin"))]
pub(crate) use rule::Refusal;

/// The host a `connect:` rule names (`api.example.com`, `*.example.com`, `*`, `127.0.0.1`,
/// `::1`), or what is wrong with the rule. Names come back in lower case, IPv6 addresses
/// without brackets.
pub(crate) fn parse_rule(rule: &str) -> Result<String, String> {
    let Some(target) = rule.strip_prefix("connect:") else {
        return Err(format!(
            "`{rule}` must start with `connect:`, as in `connect:https://api.example.com`"
        ));
    };
    let authority = authority(target);
    let no_host = || {
        format!(
            "`{rule}` names no host; write `connect:https://api.example.com`, \
             `connect:*.example.com` or `connect:[::1]`"
        )
    };
    let port = |rest: &str| rest.is_empty() || rest.strip_prefix(':').is_some_and(digits);
    if let Some(inside) = authority.strip_prefix('[') {
        // `[::1]`, `[::1]:8080`: an IPv6 address.
        let (address, rest) = inside.split_once(']').ok_or_else(no_host)?;
        return match address.parse::<Ipv6Addr>() {
            Ok(ip) if port(rest) => Ok(ip.to_string()),
            _ => Err(no_host()),
        };
    }
    if let Ok(ip) = authority.parse::<Ipv6Addr>() {
        return Ok(ip.to_string());
    }
    let host = match authority.rsplit_once(':') {
        Some((name, port)) if digits(port) => name,
        _ => authority,
    };
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Ok(ip.to_string());
    }
    if host.is_empty()
        || !host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '*'))
    {
        return Err(no_host());
    }
    let named = host.strip_prefix("*.").unwrap_or(host);
    if host != "*" && (named.contains('*') || named.is_empty()) {
        return Err(format!(
            "`{rule}` has a `*` that is not a whole host (`connect:*`) or a leading label \
             (`connect:*.example.com`)"
        ));
    }
    Ok(host.to_ascii_lowercase())
}

/// The authority of a rule's target: what follows a scheme, before a path, without
/// credentials.
fn authority(target: &str) -> &str {
    let authority = target
        .split_once("://")
        .map_or(target, |(_, rest)| rest)
        .split(['/', '?', '#'])
        .next()
        .unwrap_or_default();
    authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host)
}

/// The port a `connect:` rule writes out (`connect:127.0.0.1:8080`, `connect:[::1]:8080`,
/// `connect:http://localhost:3000`), if any; a scheme alone names none.
#[cfg(feature = "sandbox")]
pub(crate) fn rule_port(rule: &str) -> Option<u16> {
    let authority = authority(rule.strip_prefix("connect:").unwrap_or(rule));
    let port = match authority.strip_prefix('[') {
        Some(inside) => inside.split_once("]:")?.1,
        None => match authority.split_once(':') {
            Some((_, port)) if !port.contains(':') => port,
            _ => return None,
        },
    };
    port.parse().ok()
}

fn digits(text: &str) -> bool {
    !text.is_empty() && text.chars().all(|c| c.is_ascii_digit())
}

/// Whether the host pattern `cap` (`*`, `*.example.com`, `api.example.com`, `127.0.0.1`)
/// covers the host or host pattern `asked`; case does not matter, and two addresses are
/// compared as addresses (`::ffff:127.0.0.1` is `127.0.0.1`). `*` and `*.example.com` cover
/// names and addresses alike: whether an address may be reached is [`HostRule`]'s to say.
pub(crate) fn covers(cap: &str, asked: &str) -> bool {
    if cap == "*" {
        return true;
    }
    if let (Ok(cap), Ok(asked)) = (cap.parse::<IpAddr>(), asked.parse::<IpAddr>()) {
        return cap.to_canonical() == asked.to_canonical();
    }
    let asked = asked.to_ascii_lowercase();
    let cap = cap.to_ascii_lowercase();
    match cap.strip_prefix("*.") {
        Some(domain) => asked
            .strip_suffix(domain)
            .is_some_and(|head| head.ends_with('.')),
        None => asked == cap,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn network_rules_become_hosts() {
        for (rule, host) in [
            ("connect:https://api.example.com/v1", "api.example.com"),
            ("connect:https://*", "*"),
            ("connect:*.example.com", "*.example.com"),
            ("connect:http://127.0.0.1:8080", "127.0.0.1"),
            ("connect:https://user@host.io", "host.io"),
            ("connect:HTTPS://API.Example.com", "api.example.com"),
            ("connect:[::1]", "::1"),
            ("connect:http://[::1]:8080/x", "::1"),
            ("connect:::1", "::1"),
            ("connect:[::FFFF:127.0.0.1]", "::ffff:127.0.0.1"),
            ("connect:localhost:3000", "localhost"),
        ] {
            assert_eq!(parse_rule(rule).as_deref(), Ok(host), "{rule}");
        }
        assert!(
            parse_rule("https://x.com")
                .unwrap_err()
                .contains("connect:")
        );
        assert!(parse_rule("connect:https://").is_err());
        assert!(parse_rule("connect:a b").is_err());
        for bad in [
            "connect:[::1",
            "connect:[not-v6]",
            "connect:[::1]x",
            "connect:api.*.com",
            "connect:*api.com",
            "connect:*.",
            "connect:**",
        ] {
            assert!(parse_rule(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn host_patterns_cover_their_hosts_only() {
        assert!(covers("*", "*"));
        assert!(covers("*.example.com", "api.example.com"));
        assert!(covers("*.example.com", "*.api.example.com"));
        assert!(covers("*.example.com", "*.example.com"));
        assert!(!covers("*.example.com", "example.com"));
        assert!(!covers("*.example.com", "evilexample.com"));
        assert!(!covers("*.example.com", "*"));
        assert!(covers("API.example.com", "api.EXAMPLE.com"));
        assert!(!covers("api.example.com", "*.example.com"));
        assert!(covers("127.0.0.1", "::ffff:127.0.0.1"));
        assert!(covers("::1", "0:0:0:0:0:0:0:1"));
        assert!(!covers("127.0.0.1", "127.0.0.2"));
        assert!(covers("*", "10.0.0.1"));
    }
}
