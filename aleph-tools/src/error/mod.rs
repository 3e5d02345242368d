//! `ToolError`: the one error type of a tool call, with a model-facing message and a
//! machine-facing [`ToolErrorKind`].

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

#[cfg(feature = "builtin")]
mod skill;
#[cfg(feature = "builtin")]
pub use self::skill::SkillError;

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

    /// The arguments do not fit the tool's schema: every problem found, each naming its
    /// argument by JSON pointer, what was expected, what came and the allowed values.
    #[error("invalid arguments for `{tool}`{}Fix the arguments and call `{tool}` again.", Problems(.problems))]
    InvalidArgs {
        /// The tool that was called.
        tool: String,
        /// What is wrong, one entry per argument; never empty.
        problems: Vec<ArgumentProblem>,
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

    /// The call came faster than a rate limit allows; nothing ran.
    #[error("`{tool}` was called too often (the limit is {limit}); {}", RetryAfter(*.retry_after))]
    RateLimited {
        /// The tool that was called.
        tool: String,
        /// The limit that refused it, in words (`10 calls per minute for this tool`).
        limit: String,
        /// How long until a call may pass; `None` when the limit allows no calls.
        retry_after: Option<Duration>,
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

    /// Arguments that do not fit, each problem naming its argument; several are reported
    /// together so the model fixes them in one go.
    ///
    /// ```
    /// use aleph_tools::{ArgumentProblem, ToolError};
    ///
    /// let error = ToolError::invalid_args("resize", [ArgumentProblem::new("/width", "a positive number")]);
    /// assert_eq!(
    ///     error.to_string(),
    ///     "invalid arguments for `resize`: `/width`: expected a positive number. Fix the arguments and call `resize` again."
    /// );
    /// ```
    pub fn invalid_args(
        tool: impl Into<String>,
        problems: impl IntoIterator<Item = ArgumentProblem>,
    ) -> Self {
        Self::InvalidArgs {
            tool: tool.into(),
            problems: problems.into_iter().collect(),
        }
    }

    /// A call given up before the tool finished (the caller's token fired).
    pub fn cancelled(tool: impl Into<String>) -> Self {
        Self::Cancelled { tool: tool.into() }
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
            Self::RateLimited { .. } => ToolErrorKind::RateLimited,
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
    /// See [`ToolError::RateLimited`].
    RateLimited,
    /// See [`ToolError::MissingState`].
    MissingState,
}

/// "; did you mean `a`?" for the names given, or nothing when there are none.
pub(crate) struct DidYouMean<'a>(pub(crate) &'a [String]);

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

/// One thing wrong with a call's arguments, in the shape every argument error takes: where,
/// what was expected, what came, and the values allowed there.
///
/// `Display` renders it for the model:
/// ``/unit: expected one of the allowed values, received the string "kelvin"; allowed: "c", "f"``.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ArgumentProblem {
    /// JSON pointer to the argument (`/points/0/y`); empty for the arguments as a whole.
    pub pointer: String,
    /// What the argument should be, as a phrase read after "expected" (`an integer`).
    pub expected: String,
    /// What came instead, as a phrase (`the string "abc"`, `nothing`); `None` when unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub received: Option<String>,
    /// The values the argument may take, when the schema lists them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed: Vec<serde_json::Value>,
}

impl ArgumentProblem {
    /// A problem at `pointer`: the argument should be `expected`.
    pub fn new(pointer: impl Into<String>, expected: impl Into<String>) -> Self {
        Self {
            pointer: pointer.into(),
            expected: expected.into(),
            received: None,
            allowed: Vec::new(),
        }
    }

    /// Says what came instead.
    #[must_use]
    pub fn received(mut self, received: impl Into<String>) -> Self {
        self.received = Some(received.into());
        self
    }

    /// Lists the values allowed there.
    #[must_use]
    pub fn allowed(mut self, allowed: impl IntoIterator<Item = serde_json::Value>) -> Self {
        self.allowed = allowed.into_iter().collect();
        self
    }
}

impl fmt::Display for ArgumentProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.pointer.is_empty() {
            f.write_str("the arguments")?;
        } else {
            write!(f, "`{}`", self.pointer)?;
        }
        write!(f, ": expected {}", self.expected)?;
        if let Some(received) = &self.received {
            write!(f, ", received {received}")?;
        }
        if !self.allowed.is_empty() {
            f.write_str("; allowed: ")?;
            for (i, value) in self.allowed.iter().enumerate() {
                if i > 0 {
                    f.write_str(", ")?;
                }
                write!(f, "{value}")?;
            }
        }
        Ok(())
    }
}

/// The problems of an `InvalidArgs`: one on the same line, several as a list.
struct Problems<'a>(&'a [ArgumentProblem]);

impl fmt::Display for Problems<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            [] => f.write_str(". "),
            [only] => write!(f, ": {only}. "),
            many => {
                f.write_str(":\n")?;
                for problem in many {
                    writeln!(f, "- {problem}")?;
                }
                Ok(())
            }
        }
    }
}

struct RetryAfter(Option<Duration>);

impl fmt::Display for RetryAfter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            // Rounded up, so waiting as long as it says is always enough.
            Some(wait) => write!(
                f,
                "wait {} before calling it again",
                Millis(Duration::from_millis(
                    u64::try_from(wait.as_nanos().div_ceil(1_000_000)).unwrap_or(u64::MAX)
                ))
            ),
            None => f.write_str("it allows no calls at all, so do not call it again"),
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

/// The message of a caught panic: its text when it has one.
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "the tool panicked".to_owned()
    }
}
