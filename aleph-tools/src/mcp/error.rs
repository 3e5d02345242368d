//! What can go wrong serving or wrapping MCP.

use std::net::SocketAddr;

use crate::RegistryError;

/// An MCP server could not be served, reached or listed.
///
/// Failures of single tool calls are never `McpError`s: they are tool results.
///
/// Its message says what failed; the cause, where there is one, is its
/// [`source`](std::error::Error::source), so print the chain to see both (`{:#}` of an
/// `anyhow::Error`).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum McpError {
    /// The command of a stdio server could not be started.
    #[error("cannot start the MCP server `{command}`")]
    Spawn {
        /// The command, as given.
        command: String,
        /// Why it did not start.
        #[source]
        source: std::io::Error,
    },

    /// The server did not complete the MCP handshake.
    #[error("cannot connect to the MCP server `{server}`: {message}")]
    Connect {
        /// The server's label (the prefix, else the command or URL).
        server: String,
        /// What went wrong, as the protocol layer reported it.
        message: String,
    },

    /// The server answered `tools/list` with an error, or stopped answering.
    #[error("the MCP server `{server}` did not list its tools: {message}")]
    ListTools {
        /// The server's label.
        server: String,
        /// What went wrong.
        message: String,
    },

    /// A listed tool could not be served beside the others (its name is taken by another
    /// tool of the server it joins, for instance).
    #[error("the tools of the MCP server `{server}` cannot be served")]
    Registry {
        /// The server's label.
        server: String,
        /// What the tool server refused.
        #[source]
        source: RegistryError,
    },

    /// The address for streamable HTTP could not be bound.
    #[error("cannot listen for MCP over HTTP on {addr}")]
    Bind {
        /// The address asked for.
        addr: String,
        /// Why it failed.
        #[source]
        source: std::io::Error,
    },

    /// A resource template that is not a URI template.
    #[error("`{template}` is not a URI template: {problem}")]
    Template {
        /// The template, as given.
        template: String,
        /// What is wrong with it.
        problem: String,
    },

    /// A URL given to [`McpAuth`](super::McpAuth) that it cannot serve as.
    #[error("`{url}` is not a URL this server can name: {problem}")]
    Url {
        /// The URL given.
        url: String,
        /// What is wrong with it.
        problem: &'static str,
    },

    /// Serving a client failed (the transport broke before the handshake, say).
    #[error("the MCP session failed: {0}")]
    Session(String),

    /// The HTTP server stopped with an error.
    #[error("the MCP HTTP server on {addr} failed")]
    Http {
        /// The address it was serving.
        addr: SocketAddr,
        /// Why it stopped.
        #[source]
        source: std::io::Error,
    },
}
