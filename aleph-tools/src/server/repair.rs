//! Name repair: finding the tool a model meant when it got the name slightly wrong.
//!
//! Exact match first; then a case-insensitive match (`Search` → `search`, Unicode-aware);
//! then, for names made of letters, digits and the separators `_`, `-` and space, the names
//! compared in snake case (`WebSearch`, `webSearch`, `web-search`, `web search` →
//! `web_search`; `getMP3File` → `get_mp3_file`). A repair is taken only when exactly one
//! tool fits; otherwise the call fails with the closest names.

use std::sync::Arc;

use heck::ToSnakeCase;

use super::{Entry, Table};
use crate::error::ToolError;
use crate::result::{RepairInfo, RepairStep};

/// Finds the tool `name` refers to among the tools `visible` lets through.
///
/// The exact name is looked up here, in the caller; the repairs are a call of their own, so
/// that the common call does not pass their large result through memory.
#[inline]
pub(super) fn resolve<'t>(
    table: &'t Table,
    name: &str,
    visible: impl Fn(&str) -> bool,
) -> Result<(&'t Arc<Entry>, Option<Box<RepairInfo>>), ToolError> {
    match table.get(name) {
        Some(entry) => Ok((entry, None)),
        None => repair(table, name, visible),
    }
}

/// Finds the tool a name that is not served exactly refers to.
#[cold]
#[inline(never)]
fn repair<'t>(
    table: &'t Table,
    name: &str,
    visible: impl Fn(&str) -> bool,
) -> Result<(&'t Arc<Entry>, Option<Box<RepairInfo>>), ToolError> {
    let lower = name.to_lowercase();
    if let Some(entry) = only_match(table, &visible, |served| served.to_lowercase() == lower) {
        return Ok(repaired(name, entry, RepairStep::CaseInsensitive));
    }
    // Only word separators are rewritten; a name with other punctuation (`../x`, `a.b`) is
    // not a spelling of a served name.
    let separators_only = name
        .chars()
        .all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | ' '));
    if separators_only {
        let snake = name.to_snake_case();
        if let Some(entry) = only_match(table, &visible, |served| served.to_snake_case() == snake) {
            return Ok(repaired(name, entry, RepairStep::SnakeCase));
        }
    }
    Err(ToolError::NotFound {
        name: name.to_owned(),
        suggestions: crate::util::names::suggestions(
            name,
            table.keys().map(|k| &**k).filter(|k| visible(k)),
        ),
    })
}

/// The one visible tool whose name satisfies `matches`; `None` when none or several do.
fn only_match<'t>(
    table: &'t Table,
    visible: &impl Fn(&str) -> bool,
    matches: impl Fn(&str) -> bool,
) -> Option<&'t Arc<Entry>> {
    let mut found = table
        .iter()
        .filter(|(served, _)| visible(served) && matches(served));
    match (found.next(), found.next()) {
        (Some((_, entry)), None) => Some(entry),
        _ => None,
    }
}

fn repaired<'t>(
    name: &str,
    entry: &'t Arc<Entry>,
    step: RepairStep,
) -> (&'t Arc<Entry>, Option<Box<RepairInfo>>) {
    let repair = RepairInfo {
        original_name: name.to_owned(),
        repaired_name: entry.name.to_string(),
        step,
    };
    (entry, Some(Box::new(repair)))
}
