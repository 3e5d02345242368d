//! MCP both ways: serve a tool server to any MCP client, and wrap any MCP server's tools.
//!
//! **Serving.** [`McpServer`] puts an [`AlephToolServer`](crate::AlephToolServer) behind
//! the Model Context Protocol, over stdio ([`McpServer::serve_stdio`]) or streamable HTTP
//! ([`McpServer::serve_http`], feature `mcp-http`). `tools/list` lists the tools the filter offers, with their
//! schemas in the MCP dialect, output schemas and annotations; `tools/call` runs the whole
//! pipeline (name repair, filter, validation, confirmation, middleware, timeouts) and
//! answers with the tool's content blocks (text, images, audio, resources) and structured
//! content. A tool's failure is a result with `isError: true` and the message the model
//! should read; a tool that is not served is a JSON-RPC error (`-32602`) whose message
//! suggests the closest names, unless
//! [`with_unknown_tools_as_results`](McpServer::with_unknown_tools_as_results) says
//! otherwise. Long tool lists come in pages. Prompts ([`McpPrompt`], Markdown skills,
//! plugins' `standalone` prompts) are served with [`McpServer::with_prompts`], resources
//! ([`McpResource`], [`McpResourceTemplate`]) with [`McpServer::with_resources`]. Clients hear
//! `notifications/tools/list_changed` whenever the set of tools changes, progress as
//! `notifications/progress` when they ask for it, the tools' log messages
//! ([`Progress::log`](crate::Progress::log), or `tracing` through
//! `ToolLogLayer` (feature `tracing-layer`)) as `notifications/message` at the level they set,
//! and their `notifications/cancelled` reaches the running tool. A call of a tool marked
//! `task` runs as an MCP task for clients that declare the tasks extension: they get a
//! handle at once and poll it, as [`McpTasks`] describes.
//!
//! **Wrapping.** [`McpConnection`] connects to an MCP server (a command over stdio, or with
//! `mcp-http` a streamable HTTP URL, see [`McpEndpoint`]) and serves each of its tools as an
//! [`McpToolWrapper`], a dynamic tool of category [`Mcp`](crate::ToolCategory::Mcp), named
//! with a prefix and cleaned to what every provider accepts. The connection follows the
//! server's `list_changed`; if the server dies its tools answer with an error that says so,
//! and [`McpConnection::reconnect`] brings them back. Dropping the connection removes them.
//!
//! The protocol itself is [`rmcp`]'s, re-exported for handlers that need its types.
//!
//! ```no_run
//! use aleph_tools::AlephToolServer;
//! use aleph_tools::mcp::{McpConnection, McpEndpoint, McpServer};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let server = AlephToolServer::from_registry()?;
//! // Another MCP server's tools, served beside ours as `files_read_file`, ...
//! let _files = McpConnection::builder(McpEndpoint::command("mcp-server-files"))
//!     .prefix("files")
//!     .connect(&server)
//!     .await?;
//! // Everything, to any MCP client, over stdio.
//! McpServer::new(&server).serve_stdio().await?;
//! # Ok(())
//! # }
//! ```

mod ask;
#[cfg(feature = "mcp-http")]
mod auth;
mod convert;
mod error;
mod gauges;
#[cfg(feature = "mcp-http")]
mod http;
mod names;
mod notify;
#[cfg(feature = "mcp-http")]
pub(in crate::mcp) mod polling;
mod prompts;
mod resources;
mod running;
mod serve;
mod store;
mod tasks;
mod wrap;

#[cfg(feature = "mcp-http")]
#[cfg_attr(docsrs, doc(cfg(feature = "mcp-http")))]
pub use self::auth::{AuthError, AuthRequest, Authorizer, McpAuth, StaticTokens};
pub use self::error::McpError;
#[cfg(feature = "metrics")]
pub use self::gauges::{MCP_SESSIONS, MCP_TASKS};
#[cfg(feature = "mcp-http")]
#[cfg_attr(docsrs, doc(cfg(feature = "mcp-http")))]
pub use self::http::{Drained, McpHttpServer, SessionCount};
pub use self::names::clean_tool_name;
pub use self::prompts::{
    McpPrompt, PromptArgs, PromptArgument, PromptMessage, PromptRole, PromptSource,
};
pub use self::resources::{
    McpResource, McpResourceTemplate, ReadResult, ResourceSource, UriParams,
};
pub use self::serve::McpServer;
#[cfg(feature = "redis")]
pub use self::store::RedisStore;
pub use self::store::{
    EventLog, LogRead, LoggedEvent, Relayed, SessionRecord, SessionStore, StoreError, StreamState,
    TaskRecord, TaskSignals, TaskStore,
};
pub use self::tasks::McpTasks;
pub use self::wrap::{
    McpConnection, McpConnectionBuilder, McpEndpoint, McpRemoteTool, McpToolWrapper,
};
pub use rmcp;
