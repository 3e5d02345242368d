//! What a manifest that cannot be used reports: the file and every problem in it.

use std::fmt;
use std::path::{Path, PathBuf};

/// A manifest that cannot be used: the file, and every problem found in it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub struct ManifestError {
    /// The manifest file (or the plugin directory, when there is no manifest).
    pub file: PathBuf,
    /// What is wrong, one entry per problem.
    pub problems: Vec<ManifestProblem>,
}

/// One problem in a manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ManifestProblem {
    /// The key, as a path: `plugin.id`, `tools[1].name`. Empty for the file as a whole.
    pub key: String,
    /// Where in the file, 1-based line and column, when known.
    pub position: Option<(usize, usize)>,
    /// What is wrong and what to do.
    pub message: String,
}

impl fmt::Display for ManifestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let count = self.problems.len();
        write!(
            f,
            "{}: {count} problem{}",
            self.file.display(),
            if count == 1 { "" } else { "s" }
        )?;
        for problem in &self.problems {
            f.write_str("\n  - ")?;
            if let Some((line, column)) = problem.position {
                write!(f, "line {line}, column {column}: ")?;
            }
            if !problem.key.is_empty() {
                write!(f, "`{}`: ", problem.key)?;
            }
            f.write_str(&problem.message)?;
        }
        Ok(())
    }
}

impl ManifestError {
    pub(super) fn single(file: &Path, key: &str, message: impl Into<String>) -> Self {
        Self {
            file: file.to_path_buf(),
            problems: vec![ManifestProblem {
                key: key.to_owned(),
                position: None,
                message: message.into(),
            }],
        }
    }
}
