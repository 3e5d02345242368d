//! "Did you mean …?" for misspelled keys and values.

/// The closest of `candidates` to `typo`, if one is close enough to be a likely misspelling.
pub(crate) fn closest<'a>(typo: &str, candidates: &[&'a str]) -> Option<&'a str> {
    candidates
        .iter()
        .map(|c| (strsim::jaro_winkler(typo, c), *c))
        .filter(|(score, _)| *score >= 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, c)| c)
}

/// ` did you mean `x`?` or a list of what is accepted.
pub(crate) fn hint(typo: &str, candidates: &[&str]) -> String {
    match closest(typo, candidates) {
        Some(best) => format!("; did you mean `{best}`?"),
        None => format!("; expected one of: {}", candidates.join(", ")),
    }
}
