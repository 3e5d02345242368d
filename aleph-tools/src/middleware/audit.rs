//! The audit layer: a `tracing` span per call and an event when it starts and ends, with
//! secrets in the arguments redacted by key.

use std::fmt;
use std::time::Instant;

use serde_json::Value;
use tracing::Instrument;

use super::{Middleware, Next, ToolCall};
use crate::error::ToolError;
use crate::result::ToolOutput;
use crate::util::patterns::{PatternError, Patterns};

/// What replaces a redacted argument in the log.
pub const REDACTED: &str = "[redacted]";

/// Argument keys redacted unless configured otherwise (matched without regard to case).
const DEFAULT_REDACTIONS: [&str; 10] = [
    "*password*",
    "*passwd*",
    "*secret*",
    "*token*",
    "*api_key*",
    "*apikey*",
    "*authorization*",
    "*credential*",
    "*private_key*",
    "*cookie*",
];

/// Middleware that records every call with `tracing`.
///
/// Each call runs in an `INFO` span `tool_call` with the fields `tool`, `call_id` and
/// `caller`. Inside it come the event `tool call started` (field `arguments`: the arguments
/// as JSON, with the value of every key matching a redaction pattern, at any depth, replaced
/// by `"[redacted]"`) and either `tool call succeeded` (`INFO`) or `tool call failed`
/// (`WARN`, fields `error_kind` and `error`), both with `duration_ms`.
///
/// Keys like `password`, `api_key`, `token`, `secret` and `authorization` are redacted by
/// default; add patterns with [`redact`](Self::redact).
#[derive(Debug)]
pub struct Audit {
    redact: Redactions,
}

struct Redactions {
    patterns: Patterns,
    sources: Vec<String>,
}

impl fmt::Debug for Redactions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(&self.sources).finish()
    }
}

impl Default for Audit {
    fn default() -> Self {
        Self::new()
    }
}

impl Audit {
    /// An audit layer with the default redactions.
    pub fn new() -> Self {
        let sources: Vec<String> = DEFAULT_REDACTIONS.iter().map(|&p| p.to_owned()).collect();
        // The defaults are valid globs; an empty set would only redact less.
        let patterns = Patterns::case_insensitive("redact", &sources).unwrap_or_default();
        Self {
            redact: Redactions { patterns, sources },
        }
    }

    /// Also redacts the values of argument keys matching these names or globs
    /// (`"*ssn*"`, `"card_number"`), without regard to case.
    ///
    /// # Errors
    ///
    /// [`PatternError`] when a pattern is not a valid glob.
    pub fn redact(
        mut self,
        patterns: impl IntoIterator<Item = impl Into<String>>,
    ) -> Result<Self, PatternError> {
        self.redact
            .sources
            .extend(patterns.into_iter().map(Into::into));
        self.redact.patterns = Patterns::case_insensitive("redact", &self.redact.sources)?;
        Ok(self)
    }

    /// `arguments` as the log shows them: every value under a redacted key replaced.
    pub fn redacted(&self, arguments: &Value) -> Value {
        let mut shown = arguments.clone();
        redact(&self.redact.patterns, &mut shown);
        shown
    }
}

fn redact(patterns: &Patterns, value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (key, value) in map.iter_mut() {
                if patterns.is_match(key) {
                    *value = Value::String(REDACTED.to_owned());
                } else {
                    redact(patterns, value);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|item| redact(patterns, item)),
        _ => {}
    }
}

impl Middleware for Audit {
    async fn handle(&self, call: ToolCall, next: Next) -> Result<ToolOutput, ToolError> {
        let span = tracing::info_span!(
            "tool_call",
            tool = call.name(),
            call_id = call.context().call_id(),
            caller = ?call.context().caller(),
        );
        // Redacting copies the arguments: only worth it when someone will read them.
        let arguments =
            tracing::enabled!(tracing::Level::INFO).then(|| self.redacted(call.arguments()));
        async move {
            if let Some(arguments) = arguments {
                tracing::info!(arguments = %arguments, "tool call started");
            }
            let started = Instant::now();
            let outcome = next.run(call).await;
            let duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
            match &outcome {
                Ok(_) => tracing::info!(duration_ms, "tool call succeeded"),
                Err(error) => tracing::warn!(
                    duration_ms,
                    error_kind = ?error.kind(),
                    error = %error,
                    "tool call failed"
                ),
            }
            outcome
        }
        .instrument(span)
        .await
    }
}
