//! Where `web_fetch` may connect: the library's one host rule ([`HostRule`]), applied to
//! every URL before it is requested, and to the addresses a name resolves to by
//! [`GuardedResolver`](crate::util::hosts::GuardedResolver).

use reqwest::Url;

use crate::util::hosts::{HostRule, Refusal};

/// Why `url` may not be fetched, or `None`.
pub(super) fn refuse(rule: &HostRule, url: &Url) -> Option<String> {
    rule.check(url.scheme(), url.host_str())
        .err()
        .map(|refusal| explain(&refusal))
}

/// A refusal as `web_fetch` reports it: a private address can also be opened to the whole
/// server.
pub(in crate::builtin) fn explain(refusal: &Refusal) -> String {
    match refusal {
        Refusal::Private { .. } => format!(
            "{refusal}, or a server that allows every private or reserved address \
             (`allow_private_addresses`)"
        ),
        _ => refusal.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_checked_against_the_rule() {
        let rule = HostRule::new(["*.example.com".to_owned(), "127.0.0.1".to_owned()]);
        let refuse = |url: &str| refuse(&rule, &Url::parse(url).unwrap());
        assert_eq!(refuse("https://api.example.com/x"), None);
        assert!(
            refuse("https://example.org/")
                .unwrap()
                .contains("not among")
        );
        // Named by the rule: reached.
        assert_eq!(refuse("http://127.0.0.1:8080/"), None);
        assert!(refuse("file:///etc/passwd").unwrap().contains("only http"));
        assert!(
            refuse("ftp://api.example.com/")
                .unwrap()
                .contains("only http")
        );
        let any = HostRule::new(["*".to_owned()]);
        let private = super::refuse(&any, &Url::parse("http://[::ffff:0:7f00:1]/").unwrap());
        assert!(
            private
                .as_deref()
                .is_some_and(|why| why.contains("127.0.0.1 (IPv4-translated)")
                    && why.contains("allow_private_addresses")),
            "{private:?}"
        );
        let open = any.allowing_private(true);
        assert_eq!(
            super::refuse(&open, &Url::parse("http://[::1]:80/").unwrap()),
            None
        );
    }
}
