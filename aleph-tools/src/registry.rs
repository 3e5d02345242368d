//! The link-time registry: every `#[tool]` function of the program, collected by the
//! linker with `inventory`.
//!
//! Every `#[tool]` without `register = false` submits one [`ToolRegistration`]; the linker
//! gathers them, and [`registered_tools`] lists them at run time. No hand-written list.
//! Most programs never look here: [`ToolServerBuilder::with_registry`](crate::ToolServerBuilder::with_registry)
//! serves them all. A crate's registrations are linked only when the program uses something
//! of that crate.

use std::fmt;
use std::sync::Arc;

use serde_json::Value;

use crate::context::{StateType, ToolContext};
use crate::error::ToolError;
use crate::result::ToolOutput;
use crate::tool::{AlephTool, AlephToolDyn, BoxFuture, ToolDefinition, TypedArguments};

/// One `#[tool]` function, as the linker collected it.
pub struct ToolRegistration {
    name: &'static str,
    tool: &'static dyn AlephToolDyn,
    location: SourceLocation,
}

/// Where a tool is defined in source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SourceLocation {
    /// The source file.
    pub file: &'static str,
    /// The line of the `#[tool]` attribute.
    pub line: u32,
    /// The module path of the function.
    pub module_path: &'static str,
}

impl fmt::Display for SourceLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{} ({})", self.file, self.line, self.module_path)
    }
}

impl ToolRegistration {
    #[doc(hidden)]
    pub const fn new<T: AlephTool>(
        tool: &'static T,
        file: &'static str,
        line: u32,
        module_path: &'static str,
    ) -> Self {
        Self {
            name: T::NAME,
            tool,
            location: SourceLocation {
                file,
                line,
                module_path,
            },
        }
    }

    /// The tool's name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Where the tool is defined.
    pub fn location(&self) -> SourceLocation {
        self.location
    }

    /// The tool, to serve.
    pub fn instantiate(&self) -> Arc<dyn AlephToolDyn> {
        Arc::new(Linked(self.tool))
    }
}

impl fmt::Debug for ToolRegistration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolRegistration")
            .field("name", &self.name)
            .field("location", &self.location)
            .finish_non_exhaustive()
    }
}

/// A registered tool, served from the `static` the linker collected. The registration
/// holds the tool itself rather than a constructor generic over its type, which would make
/// every `#[tool]` compile one more function and its allocation. It forwards every method of
/// [`AlephToolDyn`], so a method added there is forwarded here too (the test
/// `a_registered_tool_answers_as_the_tool_itself` asks each one).
struct Linked(&'static dyn AlephToolDyn);

impl AlephToolDyn for Linked {
    fn name(&self) -> &str {
        self.0.name()
    }

    fn definition(&self) -> ToolDefinition {
        self.0.definition()
    }

    fn call<'a>(
        &'a self,
        args: Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        self.0.call(args, ctx)
    }

    fn validate(&self, args: &Value) -> Result<(), ToolError> {
        self.0.validate(args)
    }

    fn required_state(&self) -> Vec<StateType> {
        self.0.required_state()
    }

    fn typed_arguments(&self) -> Option<&dyn TypedArguments> {
        self.0.typed_arguments()
    }

    fn holds_nothing(&self) -> bool {
        self.0.holds_nothing()
    }
}

inventory::collect!(ToolRegistration);

/// Every `#[tool]` linked into this program, sorted by name (then by source location).
pub fn registered_tools() -> Vec<&'static ToolRegistration> {
    let mut all: Vec<_> = inventory::iter::<ToolRegistration>.into_iter().collect();
    all.sort_by_key(|r| (r.name, r.location.file, r.location.line));
    all
}
