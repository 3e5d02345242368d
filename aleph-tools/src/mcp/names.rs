//! Names of wrapped tools: what providers accept, made from what MCP servers send.

use std::collections::HashSet;

/// The longest tool name providers accept.
const MAX_LEN: usize = 64;

/// A tool name every provider accepts (`^[A-Za-z0-9_-]{1,64}$`) made from an MCP tool's
/// name and an optional prefix: `prefix_name`, with every other character (dots, slashes,
/// spaces, non-ASCII) turned into `_`, cut to 64 characters.
///
/// ```
/// use aleph_tools::mcp::clean_tool_name;
///
/// assert_eq!(clean_tool_name(Some("github"), "repos/list"), "github_repos_list");
/// assert_eq!(clean_tool_name(None, "get-sum"), "get-sum");
/// assert_eq!(clean_tool_name(Some("fs"), "lire le fichier"), "fs_lire_le_fichier");
/// assert_eq!(clean_tool_name(None, ""), "tool");
/// ```
pub fn clean_tool_name(prefix: Option<&str>, name: &str) -> String {
    let joined = match prefix.filter(|p| !p.is_empty()) {
        Some(prefix) => format!("{prefix}_{name}"),
        None => name.to_owned(),
    };
    let mut clean: String = joined
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(MAX_LEN)
        .collect();
    if clean.is_empty() {
        clean.push_str("tool");
    }
    clean
}

/// Local names for every remote name, in order: cleaned, and made unique (`_2`, `_3`, …)
/// when two remote names clean to the same local one.
pub(super) fn local_names<'a>(
    prefix: Option<&str>,
    remote: impl IntoIterator<Item = &'a str>,
) -> Vec<String> {
    let mut taken = HashSet::new();
    remote
        .into_iter()
        .map(|name| {
            let base = clean_tool_name(prefix, name);
            let mut candidate = base.clone();
            let mut n = 2;
            while !taken.insert(candidate.clone()) {
                let suffix = format!("_{n}");
                let keep = base.len().min(MAX_LEN - suffix.len());
                candidate = format!("{}{suffix}", &base[..keep]);
                n += 1;
            }
            candidate
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_clean_alike_get_suffixes() {
        let names = local_names(Some("s"), ["a.b", "a/b", "a_b"]);
        assert_eq!(names, ["s_a_b", "s_a_b_2", "s_a_b_3"]);
    }

    #[test]
    fn long_names_stay_within_the_limit_with_a_suffix() {
        let long = "x".repeat(100);
        let names = local_names(None, [long.as_str(), long.as_str()]);
        assert_eq!(names[0].len(), 64);
        assert_eq!(names[1].len(), 64);
        assert!(names[1].ends_with("_2"));
        assert!(names.iter().all(|n| crate::is_valid_tool_name(n)));
    }
}
