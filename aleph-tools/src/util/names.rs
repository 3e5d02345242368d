//! Tool names: the rule every model provider accepts, and ranking names by likeness for
//! "did you mean" suggestions.
//!
//! The `#[tool]` attribute checks the same rule at compile time; a proc-macro crate cannot
//! share code with the crate it serves, so it keeps its own copy, and a test holds the two
//! to the same text.

use heck::ToSnakeCase;

/// The longest tool name providers accept.
pub(crate) const MAX_TOOL_NAME_LEN: usize = 64;

/// The tool-name rule, in words, as every error about a name states it.
pub const TOOL_NAME_RULE: &str = "1 to 64 characters of a-z, A-Z, 0-9, `_` and `-`";

/// Whether `name` is one every model provider accepts: [`TOOL_NAME_RULE`], that is
/// `^[a-zA-Z0-9_-]{1,64}$`.
///
/// ```
/// use aleph_tools::is_valid_tool_name;
///
/// assert!(is_valid_tool_name("web_search"));
/// assert!(!is_valid_tool_name("web.search"));
/// assert!(!is_valid_tool_name(""));
/// ```
pub const fn is_valid_tool_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    if bytes.is_empty() || bytes.len() > MAX_TOOL_NAME_LEN {
        return false;
    }
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if !(b.is_ascii_alphanumeric() || b == b'_' || b == b'-') {
            return false;
        }
        i += 1;
    }
    true
}

/// `Err` with the one message every place uses when `name` breaks the rule.
pub(crate) fn check_tool_name(name: &str) -> Result<(), String> {
    if is_valid_tool_name(name) {
        Ok(())
    } else {
        Err(format!(
            "`{name}` is not a tool name model providers accept: use {TOOL_NAME_RULE}"
        ))
    }
}

/// The names an error suggests for `wanted`: up to three of `candidates`, closest first.
pub(crate) fn suggestions<'a>(
    wanted: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Vec<String> {
    closest(wanted, candidates, 3)
        .into_iter()
        .map(str::to_owned)
        .collect()
}

/// How alike two names are for a suggestion to be worth making.
const LIKENESS: f64 = 0.8;

/// Up to `max` of `candidates` alike enough to `wanted` to be what was meant, most alike
/// first (ties by name). Names are compared in snake case, so `WebSearch` is as close to
/// `web_search` as `web_search` itself.
pub(crate) fn closest<'a>(
    wanted: &str,
    candidates: impl IntoIterator<Item = &'a str>,
    max: usize,
) -> Vec<&'a str> {
    // No tool name is longer than 64 characters; a far longer one resembles none, and
    // comparing it would only cost time.
    if wanted.len() > 4 * MAX_TOOL_NAME_LEN {
        return Vec::new();
    }
    let wanted = wanted.to_snake_case();
    let mut scored: Vec<(f64, &str)> = candidates
        .into_iter()
        .map(|candidate| {
            let score = strsim::jaro_winkler(&wanted, &candidate.to_snake_case());
            (score, candidate)
        })
        .filter(|(score, _)| *score >= LIKENESS)
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(b.1)));
    scored.into_iter().take(max).map(|(_, n)| n).collect()
}
