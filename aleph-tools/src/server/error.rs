//! [`RegistryError`]: why a server cannot be built with the tools and settings it was given.

#[cfg(feature = "builtin")]
use crate::error::SkillError;
use crate::provider::ToolListError;
use crate::util::patterns::PatternError;

/// Errors that stop a tool from being served: bad names, conflicts, duplicates at link time.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RegistryError {
    /// Two `#[tool]` functions linked into one program share a name.
    #[error(
        "two tools are named `{name}`: one at {first}, one at {second}; rename one with `#[tool(name = \"...\")]`"
    )]
    Duplicate {
        /// The shared name.
        name: String,
        /// Where the first is defined.
        first: String,
        /// Where the second is defined.
        second: String,
    },

    /// Two tools given to one builder share a name.
    #[error(
        "two tools are named `{name}`; a server serves each name once: rename one (`#[tool(name = \"...\")]`) or give the builder only one"
    )]
    DuplicateTool {
        /// The shared name.
        name: String,
    },

    /// A tool of this name is already served.
    #[error("a tool named `{name}` is already served; use `replace` to swap it")]
    AlreadyServed {
        /// The name in use.
        name: String,
    },

    /// A tool takes `State<T>` and the server has no `T`.
    #[error(
        "tool `{name}` takes `State<{type_name}>`, but the server has no `{type_name}`; give the builder one with `with_state`"
    )]
    MissingState {
        /// The tool's name.
        name: String,
        /// The Rust type of the missing state.
        type_name: &'static str,
    },

    /// The tool's definition cannot be offered to a model.
    #[error("tool `{name}` cannot be served: {reason}")]
    InvalidDefinition {
        /// The tool's name.
        name: String,
        /// What to fix.
        reason: String,
    },

    /// A provider the server serves cannot take the tool's schema, and the server refuses
    /// such tools ([`IncompatibleTools::Error`](crate::IncompatibleTools::Error)).
    #[error(transparent)]
    Incompatible(ToolListError),

    /// A setting given to the builder cannot be used (a host rule of
    /// [`WebFetch`](crate::builtin::WebFetch) that cannot be read, say).
    #[error("`{setting}` cannot be used: {reason}")]
    InvalidSetting {
        /// The setting, as the builder was given it.
        setting: String,
        /// What to fix.
        reason: String,
    },

    /// The filter given to the builder has a pattern that is not a valid glob.
    #[error(transparent)]
    Filter(#[from] PatternError),

    /// Markdown skills given to the builder cannot be read or watched.
    #[cfg(feature = "builtin")]
    #[error(transparent)]
    Skill(#[from] SkillError),
}
