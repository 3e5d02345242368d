//! Typed tools for LLM agents.
//!
//! Write an ordinary function, put [`#[tool]`](macro@tool) on it, and get a tool whose JSON
//! Schema comes from the signature and doc comments, registered at link time and served by
//! [`AlephToolServer`]:
//!
//! ```standalone_crate
//! use aleph_tools::prelude::*;
//! use serde_json::json;
//!
//! /// Greet someone by name.
//! #[tool(read_only)]
//! fn greet(
//!     /// Who to greet
//!     name: String,
//! ) -> String {
//!     format!("Hello, {name}!")
//! }
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let server = AlephToolServer::from_registry()?;
//! let result = server.call("greet", json!({ "name": "Ada" })).await;
//! assert_eq!(result.output, json!("Hello, Ada!"));
//! # Ok::<(), aleph_tools::RegistryError>(())
//! # }).unwrap();
//! ```
//!
//! The guide (the `book/` directory of the repository) teaches the whole library.

mod args;
mod context;
mod error;
mod registry;
mod result;
pub mod schema;
mod server;
mod tool;

#[doc(hidden)]
#[path = "private.rs"]
pub mod __private;

/// Turns a function into a tool. See the guide's "Writing tools" chapter for every key.
pub use aleph_tools_macros::tool;
pub use context::{
    Caller, CancellationToken, FromToolContext, Progress, ProgressEvent, State, ToolContext,
};
pub use error::{RegistryError, ToolError, ToolErrorKind};
pub use registry::{SourceLocation, ToolRegistration, registered_tools};
pub use result::{IntoToolOutput, ToolOutput, ToolResult};
pub use server::{AlephToolServer, ReplaceInfo, ToolServerHandle};
pub use tool::{
    AlephTool, AlephToolDyn, BoxFuture, ToolAnnotations, ToolCategory, ToolDefinition,
    is_valid_tool_name,
};

/// The names most programs need: `use aleph_tools::prelude::*;`.
///
/// [`AlephToolDyn`] is left out on purpose: its methods share names with [`AlephTool`]'s,
/// and importing both makes `tool.definition()` ambiguous. Import it by name where you
/// implement it.
pub mod prelude {
    pub use crate::{
        AlephTool, AlephToolServer, Caller, CancellationToken, Progress, State, ToolCategory,
        ToolContext, ToolDefinition, ToolError, ToolOutput, ToolResult, tool,
    };
}
