//! [`GuardedResolver`]: name resolution for an HTTP client held to a [`HostRule`], so the
//! connection goes only to an address the rule admitted and a name cannot change its answer
//! between the check and the connection.

use std::net::SocketAddr;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};

use super::HostRule;

/// Resolves names with the system resolver and keeps only the addresses the rule admits.
pub(crate) struct GuardedResolver {
    pub(crate) rule: HostRule,
}

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let rule = self.rule.clone();
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let found: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let kept = rule.admit(&host, found)?;
            let addrs: Addrs = Box::new(kept.into_iter());
            Ok(addrs)
        })
    }
}
