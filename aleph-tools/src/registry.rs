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

use crate::tool::{AlephTool, AlephToolDyn};

/// One `#[tool]` function, as the linker collected it.
pub struct ToolRegistration {
    name: &'static str,
    make: fn() -> Arc<dyn AlephToolDyn>,
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
    pub const fn new<T: AlephTool + Default>(
        file: &'static str,
        line: u32,
        module_path: &'static str,
    ) -> Self {
        Self {
            name: T::NAME,
            make: make::<T>,
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

    /// A new instance of the tool.
    pub fn instantiate(&self) -> Arc<dyn AlephToolDyn> {
        (self.make)()
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

fn make<T: AlephTool + Default>() -> Arc<dyn AlephToolDyn> {
    Arc::new(T::default())
}

inventory::collect!(ToolRegistration);

/// Every `#[tool]` linked into this program, sorted by name (then by source location).
pub fn registered_tools() -> Vec<&'static ToolRegistration> {
    let mut all: Vec<_> = inventory::iter::<ToolRegistration>.into_iter().collect();
    all.sort_by_key(|r| (r.name, r.location.file, r.location.line));
    all
}
