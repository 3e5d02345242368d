//! The permission layer: calls to some tools need capabilities granted on the call's
//! context (`ToolContext::with_capabilities`).

use std::fmt;

use super::{Middleware, Next, ToolCall};
use crate::context::ToolContext;
use crate::error::ToolError;
use crate::result::ToolOutput;
use crate::tool::ToolDefinition;
use crate::util::patterns::{PatternError, Patterns};

/// Middleware that lets a call through only when its context holds every capability the
/// tool requires.
///
/// Which tools require what is set here, by tool-name pattern or by tag; the caller grants
/// capabilities per call with
/// [`ToolContext::with_capabilities`](crate::ToolContext::with_capabilities). Tools no rule
/// names need nothing. A caller is not offered, in listings, a tool it lacks a capability
/// for. (Which callers may call a tool at all — `#[tool(callers = [...])]` —
/// the server checks itself, with or without this layer.)
///
/// ```
/// use aleph_tools::middleware::Permission;
///
/// let permission = Permission::new()
///     .require("fs:write", ["file_write", "file_delete"])?
///     .require_for_tag("network", "web");
/// # Ok::<(), aleph_tools::PatternError>(())
/// ```
#[derive(Default)]
pub struct Permission {
    rules: Vec<Rule>,
}

struct Rule {
    capability: String,
    applies_to: AppliesTo,
}

enum AppliesTo {
    Tools(Patterns),
    Tag(String),
}

impl Permission {
    /// A layer with no rules: every call passes.
    pub fn new() -> Self {
        Self::default()
    }

    /// Calls to tools whose name matches one of `tools` (names or globs) need `capability`.
    ///
    /// # Errors
    ///
    /// [`PatternError`] when a pattern is not a valid glob.
    pub fn require(
        mut self,
        capability: impl Into<String>,
        tools: impl IntoIterator<Item = impl Into<String>>,
    ) -> Result<Self, PatternError> {
        let tools: Vec<String> = tools.into_iter().map(Into::into).collect();
        self.rules.push(Rule {
            capability: capability.into(),
            applies_to: AppliesTo::Tools(Patterns::new("permission", &tools)?),
        });
        Ok(self)
    }

    /// Calls to tools tagged `tag` (`#[tool(tags = [...])]`) need `capability`.
    #[must_use]
    pub fn require_for_tag(
        mut self,
        capability: impl Into<String>,
        tag: impl Into<String>,
    ) -> Self {
        self.rules.push(Rule {
            capability: capability.into(),
            applies_to: AppliesTo::Tag(tag.into()),
        });
        self
    }

    /// The first capability a call of `tool` with `context` needs and lacks.
    fn missing<'a>(&'a self, tool: &ToolDefinition, context: &ToolContext) -> Option<&'a str> {
        self.rules
            .iter()
            .filter(|rule| match &rule.applies_to {
                AppliesTo::Tools(patterns) => patterns.is_match(&tool.name),
                AppliesTo::Tag(tag) => tool.tags.iter().any(|t| t == tag),
            })
            .map(|rule| rule.capability.as_str())
            .find(|capability| !context.has_capability(capability))
    }
}

impl Middleware for Permission {
    async fn handle(&self, call: ToolCall, next: Next) -> Result<ToolOutput, ToolError> {
        if let Some(capability) = self.missing(call.definition(), call.context()) {
            return Err(ToolError::permission_denied(
                call.name(),
                format!("it needs the capability `{capability}`, which this call was not granted"),
            ));
        }
        next.run(call).await
    }

    /// A tool is offered to a caller that holds every capability it needs.
    fn offers(&self, tool: &ToolDefinition, context: &ToolContext) -> bool {
        self.missing(tool, context).is_none()
    }
}

impl fmt::Debug for Permission {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let capabilities: Vec<&str> = self.rules.iter().map(|r| r.capability.as_str()).collect();
        f.debug_struct("Permission")
            .field("capabilities", &capabilities)
            .finish()
    }
}
