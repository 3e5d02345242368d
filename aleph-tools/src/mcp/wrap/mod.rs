//! Wrapping an MCP server's tools as dynamic tools of a tool server: where the server is
//! (`endpoint`), the connection the application holds (`connection`), the live link and
//! the client side of the protocol (`link`), and each remote tool as a local one (`tool`).

mod connection;
mod endpoint;
mod link;
mod tool;

pub use self::connection::{McpConnection, McpConnectionBuilder};
pub use self::endpoint::McpEndpoint;
pub use self::tool::{McpRemoteTool, McpToolWrapper};
