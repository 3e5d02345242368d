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
//! # Features
//!
//! The default build is the tool server alone. Optional parts:
//!
//! | feature | adds |
//! | --- | --- |
//! | `validation` | every call's arguments checked against the tool's JSON Schema, every problem listed; without it only tools whose types enforce their whole schema are served (implied by `plugins`, `mcp`, `builtin`) |
//! | `plugins` | [`plugin`]: manifests, discovery, the plugin manager, hot reload |
//! | `wasm` | WebAssembly plugins run by Extism (implies `plugins`) |
//! | `node` | Node.js plugins, supervised child processes (implies `plugins`) |
//! | `routes` | plugins' HTTP routes as an axum `Router` (implies `plugins`) |
//! | `admin` | the management API: the plugin manager's methods as JSON-RPC over HTTP and as tools, installs from https URLs (implies `routes`) |
//! | `mcp` | [`mcp`]: serve a server over MCP (stdio, any byte stream), wrap the tools of MCP servers run as commands; no HTTP stack |
//! | `mcp-http` | MCP over streamable HTTP: [`McpServer::serve_http`](mcp::McpServer::serve_http), MCP servers reached by URL |
//! | `redis` | `mcp::RedisStore`: sessions, their streams and tasks shared by replicas through Redis or Valkey (implies `mcp-http`) |
//! | `builtin` | [`builtin`]: file, code-execution, web fetch, web search and meta tools, Markdown skills, code mode, tool search |
//! | `embeddings` | tool search by meaning: a sentence-embedding model run in process (implies `builtin`) |
//! | `browser` | a headless Chromium's tools and `pdf_generate` (implies `builtin`) |
//! | `sandbox` | [`sandbox`]: an OS sandbox (namespaces, Landlock, seccomp, limits) for the programs tools run |
//! | `clients` | [`agent::clients`]: HTTP clients for the model APIs the agent loop drives |
//! | `metrics` | calls, errors and latency per tool, sessions and tasks, through the `metrics` facade |
//! | `rate-limit` | `middleware::RateLimit`: calls per time, per tool and overall |
//! | `tracing-layer` | `ToolLogLayer`: `tracing` events inside a tool sent as its call's log messages |
//! | `full` | all of the above |
//!
//! The minimum supported Rust is 1.94. With the `mcp` feature,
//! rmcp's types are part of this crate's API (`mcp::rmcp` re-exports the version in use),
//! so a new rmcp major version comes in a semver-incompatible release of this crate.
//!
//! # Where to start
//!
//! [`#[tool]`](macro@tool) and [`AlephToolServer`] are most of what a program needs; the
//! server's [`builder`](AlephToolServer::builder) sets everything a server keeps. Runtime
//! tools are [`RuntimeTool`]s, tool lists and tool calls in each model provider's format are
//! in [`provider`], the stack of layers every call runs through in [`middleware`].
//!
//! The guide, the `book/` directory of the
//! [repository](https://github.com/aleph-tools/aleph-tools/tree/main/book), teaches the whole
//! library; every snippet in it is compiled by the tests.

#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod agent;
mod args;
#[cfg(feature = "builtin")]
#[cfg_attr(docsrs, doc(cfg(feature = "builtin")))]
pub mod builtin;
mod context;
mod error;
#[cfg(feature = "mcp")]
#[cfg_attr(docsrs, doc(cfg(feature = "mcp")))]
pub mod mcp;
pub mod middleware;
#[cfg(feature = "plugins")]
#[cfg_attr(docsrs, doc(cfg(feature = "plugins")))]
pub mod plugin;
pub mod provider;
pub mod registry;
mod result;
#[cfg(feature = "sandbox")]
#[cfg_attr(docsrs, doc(cfg(feature = "sandbox")))]
pub mod sandbox;
pub mod schema;
mod server;
mod tool;
mod util;

/// What `#[tool]`'s expansion names. The module's name carries the crate's version, and the
/// macro names the module of its own version, so a macro crate and a runtime crate of two
/// different versions fail to compile together instead of misbehaving.
#[doc(hidden)]
#[path = "private.rs"]
pub mod __private_0_1_0;

/// Turns a function into a tool.
///
/// The function stays as written. Beside it come `{Pascal}Args` (the arguments, deriving
/// `Deserialize` and `JsonSchema`), `{Pascal}Tool` (a unit struct implementing
/// [`AlephTool`]) and a link-time registration that
/// [`AlephToolServer::from_registry`] finds.
///
/// - The doc comment is the description; each parameter's doc comment describes it.
/// - `Option<T>` parameters are optional; `#[arg(default = expr)]` and `#[arg(default)]`
///   give defaults; `#[serde(...)]` and `#[schemars(...)]` on a parameter apply to its field.
/// - `&ToolContext`, [`State<T>`], [`Progress`] and [`CancellationToken`] parameters are
///   injected from the call, never part of the schema; `#[arg(inject)]` injects any
///   [`FromToolContext`] type.
/// - It may return nothing, any `Serialize` type, `Result<T, E>` for any `E: Display`, or
///   [`ToolOutput`].
/// - The function's `#[cfg]` attributes apply to everything generated; the generated types
///   have the function's visibility.
///
/// Keys: `name`, `description`, `title = "..."` (a name for people), `icon = "https://..."`
/// (repeatable), `meta = r#"{...}"#` (a JSON object, served as the tool's `_meta`), `tags =
/// [...]`, `category = Builtin | Mcp | Plugin | Skill`, `confirm`, `read_only`,
/// `destructive`, `idempotent`, `open_world`, `timeout = "10s"`, `example = "..."`
/// (repeatable), `callers = [human, code_execution]`, `strict`, `task`, `defer_loading`,
/// `inline`, `result` (the return type is a `Result` under another name; `result = false`
/// for a type of your own named `Result`), `register = false`, `crate = path`. The guide's
/// "Writing tools" chapter covers each.
///
/// A sync function's body runs on Tokio's blocking pool (in place outside a Tokio runtime),
/// so it never holds an async worker and its timeout and cancellation hold; `inline` runs a
/// small, fast sync body in place instead (untimed, `duration_ms` 0, when nothing goes
/// around its call).
///
/// ```
/// use aleph_tools::prelude::*;
///
/// /// Search the web for pages about a query.
/// #[tool(tags = ["web"], read_only, timeout = "10s", register = false)]
/// async fn web_search(
///     /// Search query, in natural language
///     query: String,
///     /// Maximum results to return
///     #[arg(default = 10)]
///     max_results: u32,
///     ctx: &ToolContext,
/// ) -> Result<Vec<String>, std::io::Error> {
///     let _ = ctx;
///     Ok(vec![query; max_results as usize])
/// }
///
/// let definition = WebSearchTool.definition();
/// assert_eq!(definition.parameters["required"], serde_json::json!(["query"]));
/// assert_eq!(definition.parameters["properties"]["max_results"]["default"], 10);
/// ```
pub use aleph_tools_macros::tool;
#[cfg(feature = "tracing-layer")]
#[cfg_attr(docsrs, doc(cfg(feature = "tracing-layer")))]
pub use context::ToolLogLayer;
pub use context::{
    AskResult, Caller, CancellationToken, Elicitation, ElicitationHandler, ElicitationRequest,
    FromToolContext, Identity, LogLevel, Progress, ProgressEvent, Sampled, SamplingHandler,
    SamplingMessage, SamplingRequest, SamplingRole, State, StateType, ToolContext,
};
pub use error::{ArgumentProblem, ToolError, ToolErrorKind};
pub use result::{
    Content, EmbeddedResource, IntoToolOutput, MediaContent, RepairInfo, RepairStep, ResourceBody,
    ResourceContents, ResourceLink, TextContent, ToolOutput, ToolReference, ToolResult,
};
pub use schema::coerce::{Coercion, CoercionKind};
pub use server::{
    AlephToolServer, Confirmation, ConfirmationHandler, ConfirmationRequest, FilterError,
    IncompatibleTools, RegistryError, ReplaceInfo, ToolCallFuture, ToolCallRequest, ToolFilter,
    ToolList, ToolRoundRequest, ToolServerBuilder,
};
pub use tool::{
    AlephTool, AlephToolDyn, BoxFuture, Icon, IconTheme, RuntimeTool, ToolAnnotations,
    ToolCategory, ToolDefinition, ToolHandler,
};
pub use util::compress::compress_snapshot;
pub use util::names::{TOOL_NAME_RULE, is_valid_tool_name};
pub use util::patterns::PatternError;

/// The names most programs need: `use aleph_tools::prelude::*;`.
///
/// Every type `#[tool]` injects by its bare name is here ([`ToolContext`], [`State`],
/// [`Progress`], [`CancellationToken`], [`Caller`], [`Identity`]), so a tool written with
/// the prelude names them without further imports.
///
/// [`AlephToolDyn`] is left out on purpose: its methods share names with [`AlephTool`]'s,
/// and importing both makes `tool.definition()` ambiguous. Import it by name where you
/// implement it.
pub mod prelude {
    pub use crate::{
        AlephTool, AlephToolServer, Caller, CancellationToken, Confirmation, ConfirmationRequest,
        Content, Identity, Progress, RegistryError, State, ToolCategory, ToolContext,
        ToolDefinition, ToolError, ToolErrorKind, ToolFilter, ToolOutput, ToolResult, tool,
    };
}
