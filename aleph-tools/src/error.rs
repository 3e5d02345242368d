//! `ToolError`: the one error type of a tool call, with a model-facing message and a
//! machine-facing [`ToolErrorKind`].

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Why a tool call failed.
///
/// `Display` is written for the model: it says what went wrong and, where it can, what to do
/// about it. [`ToolError::kind`] is for programs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ToolError {
    /// No tool of that name is served.
    #[error("unknown tool `{name}`{}", DidYouMean(.suggestions))]
    NotFound {
        /// The name that was asked for.
        name: String,
        /// Served tool names close to `name`, closest first.
        suggestions: Vec<String>,
    },

    /// The arguments do not fit the tool's schema.
    #[error("invalid arguments for `{tool}`{}: {message}. Fix the arguments and call `{tool}` again.", At(.pointer))]
    InvalidArgs {
        /// The tool that was called.
        tool: String,
        /// JSON pointer to the offending argument (`/max_results`); empty for the whole object.
        pointer: String,
        /// What is wrong with it.
        message: String,
    },

    /// The tool ran and reported a failure.
    #[error("{0}")]
    Execution(String),

    /// The call is not allowed.
    #[error("permission denied for `{tool}`: {reason}")]
    PermissionDenied {
        /// The tool that was called.
        tool: String,
        /// Why it was refused.
        reason: String,
    },

    /// The tool did not finish in time.
    #[error("`{tool}` did not finish within {}", Millis(*.after))]
    Timeout {
        /// The tool that was called.
        tool: String,
        /// The time limit that passed.
        after: Duration,
    },

    /// The tool panicked; the server caught it and keeps serving.
    #[error("`{tool}` failed unexpectedly: {message}")]
    Panicked {
        /// The tool that was called.
        tool: String,
        /// The panic message.
        message: String,
    },

    /// The call was cancelled before the tool finished.
    #[error("`{tool}` was cancelled")]
    Cancelled {
        /// The tool that was called.
        tool: String,
    },

    /// The tool takes `State<T>` and the server was given no `T`.
    #[error(
        "`{tool}` needs state of type `{type_name}`, which this server was not given (add it with `with_state`)"
    )]
    MissingState {
        /// The tool that was called.
        tool: String,
        /// The Rust type of the missing state.
        type_name: &'static str,
    },
}

impl ToolError {
    /// A failure reported by the tool itself, with the message the model should see.
    pub fn execution(message: impl fmt::Display) -> Self {
        Self::Execution(message.to_string())
    }

    /// Arguments that do not fit the tool's schema.
    pub fn invalid_args(
        tool: impl Into<String>,
        pointer: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        Self::InvalidArgs {
            tool: tool.into(),
            pointer: pointer.into(),
            message: message.into(),
        }
    }

    /// A refused call.
    pub fn permission_denied(tool: impl Into<String>, reason: impl Into<String>) -> Self {
        Self::PermissionDenied {
            tool: tool.into(),
            reason: reason.into(),
        }
    }

    /// The machine-facing kind of this error.
    pub fn kind(&self) -> ToolErrorKind {
        match self {
            Self::NotFound { .. } => ToolErrorKind::NotFound,
            Self::InvalidArgs { .. } => ToolErrorKind::InvalidArgs,
            Self::Execution(_) => ToolErrorKind::Execution,
            Self::PermissionDenied { .. } => ToolErrorKind::PermissionDenied,
            Self::Timeout { .. } => ToolErrorKind::Timeout,
            Self::Panicked { .. } => ToolErrorKind::Panicked,
            Self::Cancelled { .. } => ToolErrorKind::Cancelled,
            Self::MissingState { .. } => ToolErrorKind::MissingState,
        }
    }
}

/// What kind of failure a [`ToolError`] is, for programs that branch on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ToolErrorKind {
    /// See [`ToolError::NotFound`].
    NotFound,
    /// See [`ToolError::InvalidArgs`].
    InvalidArgs,
    /// See [`ToolError::Execution`].
    Execution,
    /// See [`ToolError::PermissionDenied`].
    PermissionDenied,
    /// See [`ToolError::Timeout`].
    Timeout,
    /// See [`ToolError::Panicked`].
    Panicked,
    /// See [`ToolError::Cancelled`].
    Cancelled,
    /// See [`ToolError::MissingState`].
    MissingState,
}

struct DidYouMean<'a>(&'a [String]);

impl fmt::Display for DidYouMean<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            [] => Ok(()),
            [only] => write!(f, "; did you mean `{only}`?"),
            many => {
                f.write_str("; did you mean one of ")?;
                for (i, name) in many.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "`{name}`")?;
                }
                f.write_str("?")
            }
        }
    }
}

struct At<'a>(&'a str);

impl fmt::Display for At<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            Ok(())
        } else {
            write!(f, " at `{}`", self.0)
        }
    }
}

struct Millis(Duration);

impl fmt::Display for Millis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ms = self.0.as_millis();
        if ms >= 1000 && ms.is_multiple_of(1000) {
            write!(f, "{}s", ms / 1000)
        } else {
            write!(f, "{ms}ms")
        }
    }
}

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

    /// A tool of this name is already served.
    #[error("a tool named `{name}` is already served; use `replace_tool` to swap it")]
    AlreadyServed {
        /// The name in use.
        name: String,
    },

    /// The tool's definition cannot be offered to a model.
    #[error("tool `{name}` cannot be served: {reason}")]
    InvalidDefinition {
        /// The tool's name.
        name: String,
        /// What to fix.
        reason: String,
    },
}
