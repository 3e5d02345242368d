//! [`GuardedResolver`]: name resolution for an HTTP client held to a [`HostRule`], so the
//! connection goes only to an address the rule admitted and a name cannot change its answer
//! between the check and the connection.

use std::net::SocketAddr;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};

use super::{HostRule, Refusal};

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

/// Why a request of a client held to a [`HostRule`] failed: the rule's refusal when that was
/// it, else what kind of failure it was (`could not be reached`, `did not answer in time`,
/// `failed`) and its innermost cause.
pub(crate) fn why_failed(error: &reqwest::Error) -> Result<&Refusal, (&'static str, String)> {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    let mut deepest = error.to_string();
    while let Some(current) = source {
        if let Some(refused) = current.downcast_ref::<Refusal>() {
            return Ok(refused);
        }
        deepest = current.to_string();
        source = current.source();
    }
    let what = if error.is_connect() {
        "could not be reached"
    } else if error.is_timeout() {
        "did not answer in time"
    } else {
        "failed"
    };
    Err((what, deepest))
}
