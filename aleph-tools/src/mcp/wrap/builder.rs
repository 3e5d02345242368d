//! [`McpConnectionBuilder`]: where a wrapped server is, the prefix its tools are served
//! under, and the bounds it is held to (time to connect, to list, to answer a call; size of
//! one message; number of tools; how often its list is read again).

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use super::connection::{Inner, McpConnection, Served};
use super::endpoint::McpEndpoint;
use super::link::Remote;
use crate::AlephToolServer;
use crate::mcp::McpError;

/// The bounds a wrapped server is held to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Bounds {
    pub(super) connect_timeout: Duration,
    pub(super) list_timeout: Duration,
    pub(super) call_timeout: Duration,
    pub(super) max_message_bytes: usize,
    pub(super) max_tools: usize,
    pub(super) refresh_interval: Duration,
}

impl Default for Bounds {
    fn default() -> Self {
        Self {
            connect_timeout: Duration::from_secs(30),
            list_timeout: Duration::from_secs(30),
            call_timeout: Duration::from_mins(2),
            max_message_bytes: 16 << 20,
            max_tools: 10_000,
            refresh_interval: Duration::from_secs(1),
        }
    }
}

/// Settings for a connection; from [`McpConnection::builder`].
///
/// A wrapped server is an outside party, held to bounds that all have defaults: it has
/// [`connect_timeout`](Self::connect_timeout) to start, shake hands and list its tools
/// (30 s), [`list_timeout`](Self::list_timeout) for each later listing (30 s) and
/// [`call_timeout`](Self::call_timeout) for each call (120 s); one message may hold
/// [`max_message_bytes`](Self::max_message_bytes) (16 MiB) and no more than 128 levels of
/// nesting; it may list [`max_tools`](Self::max_tools) tools (10,000); and however often it
/// says its tools changed, they are listed again at most once per
/// [`refresh_interval`](Self::refresh_interval) (1 s).
#[derive(Debug, Clone)]
#[must_use]
pub struct McpConnectionBuilder {
    pub(super) endpoint: McpEndpoint,
    pub(super) prefix: Option<String>,
    pub(super) defer_loading: bool,
    pub(super) bounds: Bounds,
}

impl McpConnectionBuilder {
    pub(super) fn new(endpoint: McpEndpoint) -> Self {
        Self {
            endpoint,
            prefix: None,
            defer_loading: false,
            bounds: Bounds::default(),
        }
    }

    /// Serves the tools as `{prefix}_{name}`, so that two servers' `search` tools can live
    /// side by side. Without a prefix the tools keep their (cleaned) names.
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = Some(prefix.into());
        self
    }

    /// Marks every tool of the server deferred: on a server with a
    /// [`ToolSearch`](crate::builtin::ToolSearch), they stay out of the tools array until a
    /// search finds them.
    pub fn defer_loading(mut self, defer: bool) -> Self {
        self.defer_loading = defer;
        self
    }

    /// How long [`connect`](Self::connect) (and [`McpConnection::reconnect`]) may take:
    /// starting the command or reaching the URL, the MCP handshake, and the first listing
    /// of the tools (30 s by default). A server that takes longer is not served: `connect`
    /// fails saying which step did not finish.
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.bounds.connect_timeout = timeout;
        self
    }

    /// How long each later listing of the tools may take, all its pages together (30 s by
    /// default). A listing that takes longer fails, and the tools served stay as they were.
    pub fn list_timeout(mut self, timeout: Duration) -> Self {
        self.bounds.list_timeout = timeout;
        self
    }

    /// How long a call of a wrapped tool waits for the server's answer (120 s by default).
    /// A call that gets none in time fails with [`ToolError::Timeout`], and the server is
    /// told the call was given up (`notifications/cancelled`). The tool server's own time
    /// limits (per tool, or its default) still apply; the shorter one ends the call.
    ///
    /// [`ToolError::Timeout`]: crate::ToolError::Timeout
    pub fn call_timeout(mut self, timeout: Duration) -> Self {
        self.bounds.call_timeout = timeout;
        self
    }

    /// The most one message from a command's server may hold, in bytes (16 MiB by
    /// default); a whole listing may hold four times as much. An answer over the limit is
    /// skipped as it arrives, never kept, and the call or listing it answers fails saying
    /// so; the connection stays up. A server at a URL is held to this limit for each
    /// streamed event, and the MCP SDK's own 16 MiB for a whole JSON answer.
    pub fn max_message_bytes(mut self, bytes: usize) -> Self {
        self.bounds.max_message_bytes = bytes;
        self
    }

    /// The most tools the server may list (10,000 by default). A listing with more is
    /// refused whole, saying so: the connection fails, or on a later listing the tools
    /// served stay as they were. Refused rather than cut, because which tools a cut
    /// would keep depends on the server's order, and a model would then see an arbitrary
    /// part of them without anyone having chosen it.
    pub fn max_tools(mut self, tools: usize) -> Self {
        self.bounds.max_tools = tools;
        self
    }

    /// The shortest time between two listings made because the server said its tools
    /// changed (1 s by default). Changes that arrive meanwhile are all covered by the next
    /// listing, which starts after the last of them: a storm of `list_changed` costs one
    /// listing per interval, and the list served still ends as the server's.
    pub fn refresh_interval(mut self, interval: Duration) -> Self {
        self.bounds.refresh_interval = interval;
        self
    }

    /// Connects, lists the server's tools and serves them on `server`, all within
    /// [`connect_timeout`](Self::connect_timeout).
    ///
    /// # Errors
    ///
    /// [`McpError::Spawn`] when the command does not start, [`McpError::Connect`] when the
    /// handshake fails or does not finish in time, [`McpError::ListTools`] when the tools
    /// cannot be listed (the server refuses, does not answer in time, answers with a
    /// message over a limit or too deep to read, or lists more than
    /// [`max_tools`](Self::max_tools)). A tool that cannot be served (its name taken by
    /// another tool, its schema unusable) is skipped and reported by
    /// [`McpConnection::skipped`], not an error.
    pub async fn connect(self, server: &AlephToolServer) -> Result<McpConnection, McpError> {
        let label = self
            .prefix
            .clone()
            .filter(|p| !p.is_empty())
            .unwrap_or_else(|| self.endpoint.to_string());
        let inner = Arc::new(Inner {
            remote: Arc::new(Remote {
                label,
                link: RwLock::new(None),
                calls: Arc::default(),
                askers: Mutex::default(),
                call_timeout: self.bounds.call_timeout,
            }),
            endpoint: self.endpoint,
            prefix: self.prefix,
            defer_loading: self.defer_loading,
            bounds: self.bounds,
            server: server.clone(),
            served: Mutex::new(Served::default()),
            refreshing: tokio::sync::Mutex::new(None),
            refresh_queued: AtomicBool::new(false),
        });
        // Made first, so that a failure below closes whatever was started.
        let connection = McpConnection { inner };
        connection.inner.open_and_list().await?;
        Ok(connection)
    }
}
