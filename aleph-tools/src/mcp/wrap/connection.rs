//! [`McpConnection`]: the wrapped tools of one MCP server, served while the connection is
//! held, refreshed when the server's list changes, reconnected on demand.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use crate::util::sync::{self, lock};

use rmcp::ServiceExt;
#[cfg(feature = "mcp-http")]
use rmcp::transport::StreamableHttpClientTransport;
#[cfg(feature = "mcp-http")]
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::builder::{Bounds, McpConnectionBuilder};
use super::endpoint::{EndpointKind, KEPT_ENV, McpEndpoint, Secret};
use super::link::{Client, Link, Remote};
use super::listing::{ListingBounds, duration, list_tools};
use super::stdio::CommandTransport;
use super::tool::{McpRemoteTool, McpToolWrapper};
use crate::mcp::McpError;
use crate::mcp::convert::definition_from_mcp;
use crate::mcp::names::local_names;
use crate::sandbox::SandboxError;
use crate::tool::AlephToolDyn;
use crate::{AlephToolServer, RegistryError};

/// A connection to an MCP server whose tools are served beside the others.
///
/// Each remote tool becomes an [`McpToolWrapper`] named by [`clean_tool_name`] (with the
/// prefix), of category [`Mcp`](crate::ToolCategory::Mcp) and tagged `mcp:{prefix}`; calls
/// go through the server's whole pipeline, then to the remote tool by its own name. When
/// the remote server says its tools changed, they are listed again and swapped in one
/// change. Dropping the connection (or [`close`](Self::close)) removes its tools and stops
/// the server it started.
///
/// ```no_run
/// use aleph_tools::AlephToolServer;
/// use aleph_tools::mcp::{McpConnection, McpEndpoint};
/// use serde_json::json;
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let server = AlephToolServer::new();
/// let everything = McpConnection::builder(
///     McpEndpoint::command("npx").args(["-y", "@modelcontextprotocol/server-everything"]),
/// )
/// .prefix("everything")
/// .connect(&server)
/// .await?;
/// assert_eq!(everything.remote_name("everything_get-sum").as_deref(), Some("get-sum"));
/// let sum = server.call("everything_get-sum", json!({ "a": 2, "b": 3 })).await;
/// # Ok(())
/// # }
/// ```
///
/// [`clean_tool_name`]: crate::mcp::clean_tool_name
pub struct McpConnection {
    pub(super) inner: Arc<Inner>,
}

impl fmt::Debug for McpConnection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpConnection")
            .field("server", &self.inner.remote.label)
            .field("endpoint", &self.inner.endpoint.to_string())
            .field("connected", &self.is_connected())
            .field("tools", &self.tools())
            .finish()
    }
}

impl McpConnection {
    /// Starts a connection to `endpoint`; finish with
    /// [`connect`](McpConnectionBuilder::connect).
    pub fn builder(endpoint: McpEndpoint) -> McpConnectionBuilder {
        McpConnectionBuilder::new(endpoint)
    }

    /// The server's label in messages: the prefix, else the command or URL.
    pub fn label(&self) -> &str {
        &self.inner.remote.label
    }

    /// The names this connection's tools are served under, sorted.
    pub fn tools(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .inner
            .served()
            .tools
            .iter()
            .map(|t| t.definition_ref().name.clone())
            .collect();
        names.sort_unstable();
        names
    }

    /// The remote server's name for the tool served as `local`.
    pub fn remote_name(&self, local: &str) -> Option<String> {
        self.inner
            .served()
            .tools
            .iter()
            .find(|t| t.definition_ref().name == local)
            .map(|t| t.remote_name().to_owned())
    }

    /// Tools the remote server lists that are not served, each with the reason (a name
    /// taken by another tool, a schema that cannot be used).
    pub fn skipped(&self) -> Vec<String> {
        self.inner.served().skipped.clone()
    }

    /// Whether the server is still connected. A server that exited, or an HTTP server
    /// that closed the session, is not.
    pub fn is_connected(&self) -> bool {
        self.inner
            .remote
            .current()
            .is_some_and(|link| !link.ended.is_cancelled())
    }

    /// The process id of a command's server, while it runs.
    pub fn process_id(&self) -> Option<u32> {
        self.inner.remote.current().and_then(|link| link.pid)
    }

    /// Lists the remote tools again and serves the new set in one change. It happens by
    /// itself when the server sends `notifications/tools/list_changed` (at most once per
    /// [`refresh_interval`](McpConnectionBuilder::refresh_interval)).
    ///
    /// # Errors
    ///
    /// [`McpError::ListTools`] when the server is gone, refuses, does not answer within
    /// [`list_timeout`](McpConnectionBuilder::list_timeout) or lists more than
    /// [`max_tools`](McpConnectionBuilder::max_tools); the tools served stay.
    pub async fn refresh(&self) -> Result<(), McpError> {
        self.inner.refresh(self.inner.bounds.list_timeout).await
    }

    /// Connects again (starting the command again), then lists and serves the tools, all
    /// within [`connect_timeout`](McpConnectionBuilder::connect_timeout). The tools stay
    /// served meanwhile and answer with an error until the server is back.
    ///
    /// # Errors
    ///
    /// As [`McpConnectionBuilder::connect`].
    pub async fn reconnect(&self) -> Result<(), McpError> {
        if let Some(old) = self.inner.remote.current() {
            old.stop.cancel();
        }
        self.inner.open_and_list().await
    }

    /// Removes the tools, closes the connection and waits until the server it started has
    /// stopped.
    pub async fn close(self) {
        let link = self.inner.remote.current();
        drop(self);
        if let Some(link) = link {
            link.ended.cancelled().await;
        }
    }
}

impl Drop for McpConnection {
    fn drop(&mut self) {
        let mut served = self.inner.served();
        // A refresh still running (after a `list_changed`) must not serve them again.
        served.closed = true;
        let names: Vec<String> = served
            .tools
            .drain(..)
            .map(|t| t.definition_ref().name.clone())
            .collect();
        drop(served);
        if let Err(err) = self.inner.server.swap_tools(&names, Vec::new()) {
            tracing::warn!(server = %self.inner.remote.label, "could not remove MCP tools: {err}");
        }
        if let Some(link) = sync::write(&self.inner.remote.link).take() {
            link.stop.cancel();
        }
    }
}

/// The connection's state, shared with the task that follows `list_changed`.
pub(super) struct Inner {
    pub(super) remote: Arc<Remote>,
    pub(super) endpoint: McpEndpoint,
    pub(super) prefix: Option<String>,
    /// Whether its tools are deferred.
    pub(super) defer_loading: bool,
    pub(super) bounds: Bounds,
    pub(super) server: AlephToolServer,
    pub(super) served: Mutex<Served>,
    /// Held while a listing runs; holds when the last one started.
    pub(super) refreshing: tokio::sync::Mutex<Option<Instant>>,
    /// Set while a refresh after a `list_changed` waits to start: the changes that arrive
    /// meanwhile are covered by that one listing, so a burst of them costs one refresh, not
    /// one task each.
    pub(super) refresh_queued: AtomicBool,
}

#[derive(Default)]
pub(super) struct Served {
    /// The tools served (their local and remote names, their definitions).
    pub(super) tools: Vec<McpToolWrapper>,
    pub(super) skipped: Vec<String>,
    /// Set when the connection is dropped: nothing is served any more.
    pub(super) closed: bool,
}

impl Inner {
    pub(super) fn served(&self) -> std::sync::MutexGuard<'_, Served> {
        lock(&self.served)
    }

    /// Connects (or connects again) and lists the tools, within the connect timeout.
    pub(super) async fn open_and_list(self: &Arc<Self>) -> Result<(), McpError> {
        let within = self.bounds.connect_timeout;
        let started = Instant::now();
        match tokio::time::timeout(within, self.open()).await {
            Ok(opened) => opened?,
            Err(_) => {
                return Err(McpError::Connect {
                    server: self.remote.label.clone(),
                    message: format!(
                        "it did not finish the MCP handshake within {} \
                         (`McpConnectionBuilder::connect_timeout`)",
                        duration(within)
                    ),
                });
            }
        }
        let left = within.saturating_sub(started.elapsed());
        self.refresh(left.max(Duration::from_millis(1))).await
    }

    /// Connects (or connects again) and makes the new link current.
    async fn open(self: &Arc<Self>) -> Result<(), McpError> {
        let label = self.remote.label.clone();
        let handler = Client {
            connection: Arc::downgrade(self),
            remote: Arc::downgrade(&self.remote),
        };
        let connect_error = |err: &dyn fmt::Display| McpError::Connect {
            server: label.clone(),
            message: err.to_string(),
        };
        let (running, pid) = match &self.endpoint.kind {
            EndpointKind::Command {
                program,
                args,
                env,
                dir,
                sandbox,
            } => {
                let mut command = sandbox.command(program).map_err(|error| McpError::Spawn {
                    command: self.endpoint.to_string(),
                    source: match error {
                        SandboxError::NotFound(_) => {
                            std::io::Error::new(std::io::ErrorKind::NotFound, error)
                        }
                        other => std::io::Error::other(other),
                    },
                })?;
                with_environment(&mut command, args, env, dir.as_deref());
                let transport = CommandTransport::spawn(command, self.bounds.max_message_bytes)
                    .map_err(|source| McpError::Spawn {
                        command: self.endpoint.to_string(),
                        source,
                    })?;
                let pid = transport.id();
                let running = handler
                    .serve(transport)
                    .await
                    .map_err(|e| connect_error(&e))?;
                (running, pid)
            }
            #[cfg(feature = "mcp-http")]
            EndpointKind::Url { url, token } => {
                let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str());
                config.max_sse_event_size = self.bounds.max_message_bytes;
                if let Some(token) = token {
                    config = config.auth_header(token.0.as_str());
                }
                let transport = StreamableHttpClientTransport::from_config(config);
                let running = handler
                    .serve(transport)
                    .await
                    .map_err(|e| connect_error(&e))?;
                (running, None)
            }
        };
        let link = Arc::new(Link {
            peer: running.peer().clone(),
            stop: CancellationToken::new(),
            ended: CancellationToken::new(),
            why_ended: OnceLock::new(),
            pid,
        });
        let watched = Arc::clone(&link);
        let cancel = running.cancellation_token();
        tokio::spawn(async move {
            let waiting = running.waiting();
            tokio::pin!(waiting);
            let outcome = tokio::select! {
                outcome = &mut waiting => outcome,
                () = watched.stop.cancelled() => {
                    cancel.cancel();
                    waiting.await
                }
            };
            let why = match outcome {
                Ok(rmcp::service::QuitReason::Cancelled) => "the connection was closed".to_owned(),
                Ok(rmcp::service::QuitReason::Closed) => {
                    "the server closed the connection".to_owned()
                }
                Ok(rmcp::service::QuitReason::JoinError(err)) | Err(err) => {
                    format!("the connection failed: {err}")
                }
                Ok(_) => "the connection ended".to_owned(),
            };
            let _ = watched.why_ended.set(why);
            watched.ended.cancel();
        });
        *sync::write(&self.remote.link) = Some(link);
        Ok(())
    }

    /// Refreshes after the server said its tools changed, unless a refresh is already
    /// waiting to start (it will list after this change too). A refresh starts no sooner
    /// than the refresh interval after the one before.
    pub(super) fn refresh_after_change(self: Arc<Self>) {
        if self.refresh_queued.swap(true, Ordering::AcqRel) {
            return;
        }
        // Not inline: listing is a request, whose answer the client handler's loop delivers.
        tokio::spawn(async move {
            let mut last = self.refreshing.lock().await;
            if let Some(last) = *last {
                tokio::time::sleep_until(last + self.bounds.refresh_interval).await;
            }
            if self.served().closed {
                return;
            }
            // From here on a change needs a listing that starts after it: queue another.
            self.refresh_queued.store(false, Ordering::Release);
            *last = Some(Instant::now());
            if let Err(err) = self.list_and_serve(self.bounds.list_timeout).await {
                tracing::warn!("{err}");
            }
        });
    }

    /// Lists the remote tools within `within` and serves them in place of the previous set.
    pub(super) async fn refresh(&self, within: Duration) -> Result<(), McpError> {
        let mut last = self.refreshing.lock().await;
        *last = Some(Instant::now());
        self.list_and_serve(within).await
    }

    /// [`refresh`](Self::refresh) with the refresh lock held.
    async fn list_and_serve(&self, within: Duration) -> Result<(), McpError> {
        let list_error = |message: String| McpError::ListTools {
            server: self.remote.label.clone(),
            message,
        };
        let link = self
            .remote
            .current()
            .ok_or_else(|| list_error("not connected".into()))?;
        let bounds = ListingBounds {
            within,
            max_tools: self.bounds.max_tools,
            max_bytes: self.bounds.max_message_bytes.saturating_mul(4),
        };
        let listed = list_tools(&link, &bounds).await.map_err(list_error)?;
        let names = local_names(
            self.prefix.as_deref(),
            listed.iter().map(|t| t.name.as_ref()),
        );
        let mut pending: Vec<McpToolWrapper> = listed
            .iter()
            .zip(names)
            .map(|(tool, name)| {
                McpToolWrapper::new(
                    definition_from_mcp(&name, &self.remote.label, tool)
                        .with_defer_loading(self.defer_loading),
                    McpRemoteTool {
                        remote_name: tool.name.to_string(),
                        remote: Arc::clone(&self.remote),
                    },
                )
            })
            .collect();
        let mut served = self.served();
        if served.closed {
            return Ok(());
        }
        let unchanged = served.skipped.is_empty()
            && pending.len() == served.tools.len()
            && pending.iter().zip(&served.tools).all(|(new, old)| {
                new.remote_name() == old.remote_name()
                    && new.definition_ref() == old.definition_ref()
            });
        if unchanged {
            return Ok(());
        }
        let old: Vec<String> = served
            .tools
            .iter()
            .map(|t| t.definition_ref().name.clone())
            .collect();
        let mut skipped = Vec::new();
        loop {
            let tools = pending
                .iter()
                .map(|t| Arc::new(t.clone()) as Arc<dyn AlephToolDyn>)
                .collect();
            match self.server.swap_tools(&old, tools) {
                Ok(()) => break,
                Err(
                    ref err @ (RegistryError::AlreadyServed { ref name }
                    | RegistryError::InvalidDefinition { ref name, .. }),
                ) if pending.iter().any(|t| t.definition_ref().name == *name) => {
                    pending.retain(|t| t.definition_ref().name != *name);
                    skipped.push(err.to_string());
                }
                Err(source) => {
                    return Err(McpError::Registry {
                        server: self.remote.label.clone(),
                        source,
                    });
                }
            }
        }
        for message in &skipped {
            tracing::warn!(server = %self.remote.label, "MCP tool not served: {message}");
        }
        served.tools = pending;
        served.skipped = skipped;
        Ok(())
    }
}

/// Gives a wrapped server's `command` its arguments, an environment of only [`KEPT_ENV`]
/// and what the endpoint sets, and its working directory.
fn with_environment(
    command: &mut tokio::process::Command,
    args: &[String],
    env: &[(String, Secret)],
    dir: Option<&std::path::Path>,
) {
    command
        .args(args)
        .env_clear()
        .envs(
            KEPT_ENV
                .iter()
                .filter_map(|name| std::env::var_os(name).map(|value| (*name, value))),
        )
        .envs(env.iter().map(|(k, v)| (k, &v.0)));
    if let Some(dir) = dir {
        command.current_dir(dir);
    }
}
