//! Tool-name patterns (`memory_*`, `file_?`): globs compiled once into one set, as the
//! filter and the middleware layers match tool names and argument keys.

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

/// A glob pattern that cannot be compiled, in a tool filter or a middleware layer's list.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the `{list}` pattern `{pattern}` is not a valid glob: {reason}")]
#[non_exhaustive]
pub struct PatternError {
    /// The list it is in (`blocked`, `allowed`, `redact`, …).
    pub list: &'static str,
    /// The pattern.
    pub pattern: String,
    /// What is wrong with it.
    pub reason: String,
}

/// Compiled glob patterns that remember their source text.
#[derive(Debug, Default)]
pub(crate) struct Patterns {
    set: GlobSet,
    sources: Vec<String>,
}

impl Patterns {
    /// Compiles `patterns`; `list` names where they came from in errors.
    pub(crate) fn new<'a>(
        list: &'static str,
        patterns: impl IntoIterator<Item = &'a String>,
    ) -> Result<Self, PatternError> {
        Self::build(list, patterns, false)
    }

    /// As [`new`](Self::new), matching without regard to ASCII case.
    pub(crate) fn case_insensitive<'a>(
        list: &'static str,
        patterns: impl IntoIterator<Item = &'a String>,
    ) -> Result<Self, PatternError> {
        Self::build(list, patterns, true)
    }

    fn build<'a>(
        list: &'static str,
        patterns: impl IntoIterator<Item = &'a String>,
        case_insensitive: bool,
    ) -> Result<Self, PatternError> {
        let sources: Vec<String> = patterns.into_iter().cloned().collect();
        let mut builder = GlobSetBuilder::new();
        for pattern in &sources {
            let glob = GlobBuilder::new(pattern)
                .case_insensitive(case_insensitive)
                .build()
                .map_err(|e| PatternError {
                    list,
                    pattern: pattern.clone(),
                    reason: e.kind().to_string(),
                })?;
            builder.add(glob);
        }
        let set = builder.build().map_err(|e| PatternError {
            list,
            pattern: sources.join(", "),
            reason: e.to_string(),
        })?;
        Ok(Self { set, sources })
    }

    /// Whether there are no patterns.
    pub(crate) fn is_empty(&self) -> bool {
        self.sources.is_empty()
    }

    /// Whether any pattern matches `name`.
    pub(crate) fn is_match(&self, name: &str) -> bool {
        !self.sources.is_empty() && self.set.is_match(name)
    }

    /// The first pattern matching `name`. Allocates only on a match: the empty set and a
    /// miss (the common case of every call) cost no allocation.
    pub(crate) fn first_match(&self, name: &str) -> Option<&str> {
        if !self.is_match(name) {
            return None;
        }
        self.set
            .matches(name)
            .first()
            .map(|&i| self.sources[i].as_str())
    }
}
