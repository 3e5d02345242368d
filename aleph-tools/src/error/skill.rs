//! [`SkillError`]: why Markdown skills could not be read or watched (feature `builtin`).

use std::path::PathBuf;

/// Why skills could not be read or watched.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SkillError {
    /// A file or directory could not be read.
    #[error("cannot read `{}`: {message}", path.display())]
    Read {
        /// What could not be read.
        path: PathBuf,
        /// The operating system's reason.
        message: String,
    },
    /// A `SKILL.md` that cannot be served.
    #[error("the skill `{}` cannot be used: {problem}", path.display())]
    Invalid {
        /// The `SKILL.md`.
        path: PathBuf,
        /// What to fix.
        problem: String,
    },
    /// A skill whose `SKILL.md` (or whose directory) is a link leading out of the skills
    /// directory: not served, so a link cannot publish a file from elsewhere.
    #[error(
        "the skill `{}` leads to `{}`, outside the skills directory; copy the skill into the \
         directory instead of linking to it",
        path.display(),
        target.display()
    )]
    Outside {
        /// The `SKILL.md`, as found in the skills directory.
        path: PathBuf,
        /// Where it leads.
        target: PathBuf,
    },
    /// Two skills with one name.
    #[error(
        "two skills are named `{name}`: `{}` and `{}`; rename one (its `name:`, else its directory)",
        first.display(),
        second.display()
    )]
    Duplicate {
        /// The name.
        name: String,
        /// One `SKILL.md`.
        first: PathBuf,
        /// The other.
        second: PathBuf,
    },
    /// The skills directory could not be watched for changes.
    #[error(
        "cannot watch `{}` for changes: {message}; serve the skills without hot reload \
         (`Skills::hot_reload(false)`) or raise the system's limit on watches",
        path.display()
    )]
    Watch {
        /// The directory.
        path: PathBuf,
        /// The operating system's reason.
        message: String,
    },
}
