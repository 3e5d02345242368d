//! Host rules in the plugin permission syntax (`connect:https://api.example.com`,
//! `connect:*.example.com`, `connect:*`): read, and matched against hosts. Plugins' network
//! grants, the host policy and the built-in `web_fetch` share them.

/// The host a `connect:` rule names (`api.example.com`, `*.example.com`, `*`), or what is
/// wrong with the rule.
pub(crate) fn parse_rule(rule: &str) -> Result<String, String> {
    let Some(target) = rule.strip_prefix("connect:") else {
        return Err(format!(
            "`{rule}` must start with `connect:`, as in `connect:https://api.example.com`"
        ));
    };
    let host = target
        .split_once("://")
        .map_or(target, |(_, rest)| rest)
        .split(['/', '?', '#'])
        .next()
        .unwrap_or_default();
    let host = host.rsplit_once('@').map_or(host, |(_, host)| host);
    let host = match host.rsplit_once(':') {
        Some((name, port)) if port.chars().all(|c| c.is_ascii_digit()) => name,
        _ => host,
    };
    if host.is_empty()
        || !host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '*' | '[' | ']' | ':'))
    {
        return Err(format!(
            "`{rule}` names no host; write `connect:https://api.example.com` or `connect:*.example.com`"
        ));
    }
    Ok(host.to_owned())
}

/// Whether the host pattern `cap` (`*`, `*.example.com`, `api.example.com`) covers the host
/// or host pattern `asked`; case does not matter.
pub(crate) fn covers(cap: &str, asked: &str) -> bool {
    if cap == "*" {
        return true;
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
    }
}
