//! `ToolFilter`: which tools a server offers (`allowed`, `blocked`) and which need a person's
//! approval (`requireConfirmation`), by name or glob pattern (`memory_*`).

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::util::patterns::{PatternError, Patterns};

/// Which tools a server offers and which need approval.
///
/// Each list holds names or glob patterns (`memory_*`, `*_delete`, `file_?`). A blocked tool
/// is never offered, even when it is also allowed. Without an `allowed` list every tool not
/// blocked is offered. Filtered-out tools are left out of listings, are not candidates for
/// name repair, and calls to them fail with a permission error.
///
/// Reads the configuration shape `{"tools": {"allowed": [...], "blocked": [...],
/// "requireConfirmation": [...]}}`:
///
/// ```
/// use aleph_tools::ToolFilter;
///
/// let filter = ToolFilter::from_json(r#"{
///     "tools": {
///         "allowed": ["file_read", "web_fetch", "memory_*"],
///         "blocked": ["bash"],
///         "requireConfirmation": ["file_write", "file_delete"]
///     }
/// }"#)?;
/// assert!(filter.allows("memory_store"));
/// assert!(!filter.allows("bash"));
/// assert!(filter.requires_confirmation("file_delete"));
/// # Ok::<(), aleph_tools::FilterError>(())
/// ```
///
/// Build one with [`new`](Self::new) and [`allow`](Self::allow), [`block`](Self::block) and
/// [`confirm`](Self::confirm), or read one with [`from_json`](Self::from_json); its fields
/// can be read and changed, and a later release may add more, so it cannot be written as a
/// struct literal.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[non_exhaustive]
pub struct ToolFilter {
    /// When set, only tools matching one of these are offered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed: Option<BTreeSet<String>>,
    /// Tools matching one of these are never offered.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub blocked: BTreeSet<String>,
    /// Tools matching one of these need a person's approval for each call. Read from
    /// `requireConfirmation` or, as TOML files spell keys, `require_confirmation`.
    #[serde(
        default,
        alias = "require_confirmation",
        skip_serializing_if = "BTreeSet::is_empty"
    )]
    pub require_confirmation: BTreeSet<String>,
}

/// Why [`ToolFilter::from_json`] could not read a filter.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FilterError {
    /// The JSON is not a filter.
    #[error("the tool filter is not valid JSON of the expected shape: {0}")]
    Json(String),
    /// A pattern is not a valid glob.
    #[error(transparent)]
    Pattern(#[from] PatternError),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    tools: ToolFilter,
}

impl ToolFilter {
    /// A filter that offers every tool and asks about none.
    pub fn new() -> Self {
        Self::default()
    }

    /// Reads a filter from JSON, either the configuration shape `{"tools": {...}}` or the
    /// inner object alone; the patterns are checked.
    ///
    /// # Errors
    ///
    /// [`FilterError::Json`] for JSON of another shape (unknown keys included),
    /// [`FilterError::Pattern`] for an invalid glob.
    pub fn from_json(json: &str) -> Result<Self, FilterError> {
        let value: serde_json::Value =
            serde_json::from_str(json).map_err(|e| FilterError::Json(e.to_string()))?;
        let filter = if value.get("tools").is_some() {
            serde_json::from_value::<Config>(value).map(|c| c.tools)
        } else {
            serde_json::from_value::<Self>(value)
        }
        .map_err(|e| FilterError::Json(e.to_string()))?;
        filter.compile()?;
        Ok(filter)
    }

    /// Adds a pattern to the allowed list (creating the list).
    #[must_use]
    pub fn allow(mut self, pattern: impl Into<String>) -> Self {
        self.allowed
            .get_or_insert_with(BTreeSet::new)
            .insert(pattern.into());
        self
    }

    /// Adds a pattern to the blocked list.
    #[must_use]
    pub fn block(mut self, pattern: impl Into<String>) -> Self {
        self.blocked.insert(pattern.into());
        self
    }

    /// Adds a pattern to the list of tools that need approval.
    #[must_use]
    pub fn confirm(mut self, pattern: impl Into<String>) -> Self {
        self.require_confirmation.insert(pattern.into());
        self
    }

    /// Whether the filter offers the tool `name`. Invalid patterns match nothing.
    pub fn allows(&self, name: &str) -> bool {
        self.compile().is_ok_and(|c| c.check(name).is_ok())
    }

    /// Whether the filter asks for approval before `name` runs. Invalid patterns match
    /// nothing.
    pub fn requires_confirmation(&self, name: &str) -> bool {
        self.compile().is_ok_and(|c| c.needs_confirmation(name))
    }

    pub(crate) fn compile(&self) -> Result<CompiledFilter, PatternError> {
        Ok(CompiledFilter {
            allowed: match &self.allowed {
                Some(patterns) => Some(Patterns::new("allowed", patterns)?),
                None => None,
            },
            blocked: Patterns::new("blocked", &self.blocked)?,
            confirm: Patterns::new("requireConfirmation", &self.require_confirmation)?,
        })
    }
}

/// A filter with its patterns compiled, as the server keeps it.
#[derive(Debug, Default)]
pub(crate) struct CompiledFilter {
    allowed: Option<Patterns>,
    blocked: Patterns,
    confirm: Patterns,
}

impl CompiledFilter {
    /// Whether the filter offers every tool and asks about none, as if there were none.
    pub(crate) fn is_open(&self) -> bool {
        self.allowed.is_none() && self.blocked.is_empty() && self.confirm.is_empty()
    }

    /// `Ok` when `name` is offered; otherwise why not, for the model.
    pub(crate) fn check(&self, name: &str) -> Result<(), String> {
        if let Some(pattern) = self.blocked.first_match(name) {
            return Err(format!("the tool filter blocks it (`{pattern}`)"));
        }
        match &self.allowed {
            Some(allowed) if allowed.first_match(name).is_none() => {
                Err("it is not in the tool filter's allowed list".to_owned())
            }
            _ => Ok(()),
        }
    }

    pub(crate) fn offers(&self, name: &str) -> bool {
        self.check(name).is_ok()
    }

    pub(crate) fn needs_confirmation(&self, name: &str) -> bool {
        self.confirm.first_match(name).is_some()
    }
}
