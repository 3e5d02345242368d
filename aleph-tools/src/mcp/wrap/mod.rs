//! Wrapping an MCP server's tools as dynamic tools of a tool server: where the server is
//! (`endpoint`), the settings and bounds of a connection (`builder`), the connection the
//! application holds (`connection`), the live link and the client side of the protocol
//! (`link`), listing within bounds (`listing`), a command's server read within limits
//! (`stdio`, `envelope`), and each remote tool as a local one (`tool`).

mod builder;
mod connection;
mod endpoint;
mod envelope;
mod link;
mod listing;
mod stdio;
mod tool;

pub use self::builder::McpConnectionBuilder;
pub use self::connection::McpConnection;
pub use self::endpoint::McpEndpoint;
pub use self::tool::{McpRemoteTool, McpToolWrapper};
