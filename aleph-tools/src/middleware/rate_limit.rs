//! The rate-limit layer: calls per period, per tool and for the whole server, on `governor`'s
//! GCRA limiters. A call past a limit is refused at once with how long to wait.

use std::collections::HashMap;
use std::fmt;
use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

use governor::clock::{Clock, DefaultClock};
use governor::{DefaultDirectRateLimiter, DefaultKeyedRateLimiter, NotUntil, Quota, RateLimiter};

use super::{Middleware, Next, ToolCall};
use crate::error::ToolError;
use crate::result::ToolOutput;

/// A number of calls per period. Calls may come in a burst of up to that number; the
/// allowance refills evenly over the period.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Rate {
    calls: u32,
    per: Duration,
}

impl Rate {
    /// `calls` per `per`. Zero calls, or a zero period, allows no calls at all.
    pub const fn new(calls: u32, per: Duration) -> Self {
        Self { calls, per }
    }

    /// `calls` per second.
    pub const fn per_second(calls: u32) -> Self {
        Self::new(calls, Duration::from_secs(1))
    }

    /// `calls` per minute.
    pub const fn per_minute(calls: u32) -> Self {
        Self::new(calls, Duration::from_mins(1))
    }

    /// `calls` per hour.
    pub const fn per_hour(calls: u32) -> Self {
        Self::new(calls, Duration::from_hours(1))
    }

    fn quota(self) -> Option<Quota> {
        let burst = NonZeroU32::new(self.calls)?;
        if self.per.is_zero() {
            return None;
        }
        // A rate finer than a nanosecond per call refills as fast as the clock can tell.
        let period = (self.per / self.calls).max(Duration::from_nanos(1));
        Quota::with_period(period).map(|quota| quota.allow_burst(burst))
    }
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let per = match self.per.as_secs() {
            1 if self.per.subsec_nanos() == 0 => "second".to_owned(),
            60 if self.per.subsec_nanos() == 0 => "minute".to_owned(),
            3600 if self.per.subsec_nanos() == 0 => "hour".to_owned(),
            _ => format!("{}ms", self.per.as_millis()),
        };
        let plural = if self.calls == 1 { "" } else { "s" };
        write!(f, "{} call{plural} per {per}", self.calls)
    }
}

/// How long until a refused call may pass.
fn wait(not_until: &NotUntil<<DefaultClock as Clock>::Instant>) -> Duration {
    not_until.wait_time_from(DefaultClock::default().now())
}

/// One limiter, or none when the rate allows no calls.
struct Limiter {
    rate: Rate,
    inner: Option<DefaultDirectRateLimiter>,
}

impl Limiter {
    fn new(rate: Rate) -> Self {
        Self {
            rate,
            inner: rate.quota().map(RateLimiter::direct),
        }
    }

    /// `Ok` when a call may go now; else how long until one may.
    fn check(&self) -> Result<(), Option<Duration>> {
        match &self.inner {
            None => Err(None),
            Some(limiter) => limiter.check().map_err(|refusal| Some(wait(&refusal))),
        }
    }
}

/// Middleware that refuses calls past a rate: one for the whole server, one for each tool,
/// and ones for named tools.
///
/// A refused call fails at once with [`ToolError::RateLimited`], which tells the model how
/// long to wait; nothing queues. A named tool's rate replaces the per-tool one for it; the
/// server-wide rate counts every call that passed its tool's rate.
///
/// ```
/// use aleph_tools::middleware::{Rate, RateLimit};
///
/// let limit = RateLimit::new()
///     .global(Rate::per_second(20))
///     .per_tool(Rate::per_minute(60))
///     .tool("web_search", Rate::per_minute(10));
/// # drop(limit);
/// ```
#[derive(Default)]
pub struct RateLimit {
    global: Option<Limiter>,
    per_tool: Option<(Rate, Option<DefaultKeyedRateLimiter<Arc<str>>>)>,
    tools: HashMap<String, Limiter>,
}

impl RateLimit {
    /// A layer with no limits.
    pub fn new() -> Self {
        Self::default()
    }

    /// Limits all calls together to `rate`.
    #[must_use]
    pub fn global(mut self, rate: Rate) -> Self {
        self.global = Some(Limiter::new(rate));
        self
    }

    /// Limits calls to each tool, separately, to `rate`.
    #[must_use]
    pub fn per_tool(mut self, rate: Rate) -> Self {
        self.per_tool = Some((rate, rate.quota().map(RateLimiter::keyed)));
        self
    }

    /// Limits calls to the tool `name` to `rate`, in place of the per-tool rate.
    #[must_use]
    pub fn tool(mut self, name: impl Into<String>, rate: Rate) -> Self {
        self.tools.insert(name.into(), Limiter::new(rate));
        self
    }

    fn admit(&self, call: &ToolCall) -> Result<(), ToolError> {
        let refused =
            |rate: Rate, scope: &str, retry_after: Option<Duration>| ToolError::RateLimited {
                tool: call.name().to_owned(),
                limit: format!("{rate} {scope}"),
                retry_after,
            };
        if let Some(limiter) = self.tools.get(call.name()) {
            limiter
                .check()
                .map_err(|wait| refused(limiter.rate, "for this tool", wait))?;
        } else if let Some((rate, limiter)) = &self.per_tool {
            let checked = match limiter {
                None => Err(None),
                Some(limiter) => limiter
                    .check_key(call.shared_name())
                    .map_err(|refusal| Some(wait(&refusal))),
            };
            checked.map_err(|wait| refused(*rate, "for each tool", wait))?;
        }
        if let Some(limiter) = &self.global {
            limiter
                .check()
                .map_err(|wait| refused(limiter.rate, "across all tools", wait))?;
        }
        Ok(())
    }
}

impl Middleware for RateLimit {
    async fn handle(&self, call: ToolCall, next: Next) -> Result<ToolOutput, ToolError> {
        self.admit(&call)?;
        next.run(call).await
    }
}

impl fmt::Debug for RateLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RateLimit")
            .field("global", &self.global.as_ref().map(|l| l.rate))
            .field("per_tool", &self.per_tool.as_ref().map(|(rate, _)| rate))
            .field(
                "tools",
                &self
                    .tools
                    .iter()
                    .map(|(name, l)| (name, l.rate))
                    .collect::<HashMap<_, _>>(),
            )
            .finish()
    }
}
