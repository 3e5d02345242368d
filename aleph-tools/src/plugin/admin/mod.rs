//! The management API: what a [`PluginManager`] does, reached from outside the process.
//!
//! [`PluginAdmin`] answers the methods `plugins.list`, `plugins.install`,
//! `plugins.uninstall`, `plugins.enable`, `plugins.disable`, `plugins.reload`,
//! `plugins.executeCommand`, `services.list`, `services.status`, `services.start` and
//! `services.stop`: from Rust ([`PluginAdmin::call`]), as JSON-RPC 2.0 over HTTP behind a
//! bearer token's scope ([`PluginAdmin::router`]), and as tools ([`PluginAdmin::tools`]).
//!
//! Needs the `admin` feature.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::error::PluginError;
use super::manager::PluginManager;

mod download;
mod methods;
mod rpc;
mod tools;

pub use self::methods::METHODS;
pub use self::rpc::ADMIN_PATH;

/// The scope a bearer token needs for the management API unless
/// [`with_scope`](PluginAdmin::with_scope) names another.
pub const ADMIN_SCOPE: &str = "admin";

/// The plugin manager's methods, served to callers outside the process.
///
/// ```no_run
/// use aleph_tools::mcp::{McpAuth, McpServer, StaticTokens};
/// use aleph_tools::plugin::{PluginAdmin, PluginManager, PluginsConfig};
/// use aleph_tools::{AlephToolServer, Identity};
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let server = AlephToolServer::new();
/// let manager = PluginManager::new(&server, PluginsConfig::with_search_paths(["plugins"]));
/// let admin = PluginAdmin::new(&manager)
///     .with_download_hosts(["connect:github.com", "connect:*.githubusercontent.com"]);
/// let tokens = StaticTokens::new()
///     .with_token("operator-secret", Identity::new("ops").with_scopes(["admin"]))
///     .with_token("agent-secret", Identity::new("agent"));
/// // `POST /admin` answers the operator's token; the agent's gets 403.
/// let http = McpServer::new(&server)
///     .with_auth(McpAuth::new(tokens))
///     .with_router(manager.router())
///     .with_router(admin.router())
///     .serve_http("127.0.0.1:8080")
///     .await?;
/// # drop(http);
/// # Ok(())
/// # }
/// ```
///
/// Over HTTP a request needs an identity with the scope `admin` (or the one
/// [`with_scope`](Self::with_scope) names), as
/// [`McpServer::with_auth`](crate::mcp::McpServer::with_auth) gives requests in front of
/// every route: without one the API answers nothing but `401`. The tools check the same scope
/// when their call carries an identity, and run for a caller without one (the client that
/// started a process serving over stdio).
///
/// A method acts on the process it reaches: behind a load balancer, address each replica.
/// Enabling and disabling last until the process stops; the config's
/// [`disabled`](super::PluginsConfig::disabled) list is what a new process starts from.
///
/// Cloning is cheap and shares the settings.
#[derive(Clone)]
pub struct PluginAdmin {
    inner: Arc<Settings>,
}

#[derive(Clone)]
struct Settings {
    manager: PluginManager,
    scope: String,
    downloads: download::Downloads,
}

impl fmt::Debug for PluginAdmin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PluginAdmin")
            .field("scope", &self.inner.scope)
            .field("downloads", &self.inner.downloads)
            .finish_non_exhaustive()
    }
}

impl PluginAdmin {
    /// The management API of `manager`, with the scope `admin`, and downloads from any public
    /// host over https, up to 64 MiB, within 60 s, two at a time.
    pub fn new(manager: &PluginManager) -> Self {
        Self {
            inner: Arc::new(Settings {
                manager: manager.clone(),
                scope: ADMIN_SCOPE.to_owned(),
                downloads: download::Downloads::default(),
            }),
        }
    }

    /// The scope a caller's identity needs.
    #[must_use]
    pub fn with_scope(self, scope: impl Into<String>) -> Self {
        self.change(|settings| settings.scope = scope.into())
    }

    /// The hosts `plugins.install` may download from, as `connect:` rules
    /// (`connect:github.com`, `connect:*.example.com`, `connect:*`); any public host
    /// (`connect:*`) unless set, except through [`tools`](Self::tools), which download
    /// nothing until hosts are set. Every redirect is held to them too. A loopback or private
    /// address is reached only when a rule names it (`connect:127.0.0.1`); a port in a rule
    /// is not read (a granted host is reached on any port). A rule that cannot be read fails
    /// each download, naming it.
    #[must_use]
    pub fn with_download_hosts(self, rules: impl IntoIterator<Item = impl Into<String>>) -> Self {
        let rules: Vec<String> = rules.into_iter().map(Into::into).collect();
        self.change(|settings| settings.downloads.hosts = Some(rules))
    }

    /// The largest archive `plugins.install` downloads, in bytes: 64 MiB unless set.
    #[must_use]
    pub fn with_max_download(self, bytes: u64) -> Self {
        self.change(|settings| settings.downloads.max_bytes = bytes)
    }

    /// How long a download may take in all, redirects included: 60 s unless set.
    #[must_use]
    pub fn with_download_timeout(self, timeout: Duration) -> Self {
        self.change(|settings| settings.downloads.timeout = timeout)
    }

    /// A certificate authority (PEM) to trust for downloads beside the system's, such as a
    /// company's own.
    #[must_use]
    pub fn with_root_certificate(self, pem: impl Into<Vec<u8>>) -> Self {
        let pem = pem.into();
        self.change(|settings| settings.downloads.roots.push(pem))
    }

    /// The manager the methods act on.
    pub fn manager(&self) -> &PluginManager {
        &self.inner.manager
    }

    /// The scope a caller's identity needs.
    pub fn scope(&self) -> &str {
        &self.inner.scope
    }

    /// Runs the method `method` (one of [`METHODS`]) with `params`, a JSON object
    /// (`Value::Null` for none), and returns its result as JSON-RPC would.
    ///
    /// # Errors
    ///
    /// [`AdminError`] saying what to fix: an unknown method, params of the wrong shape, a
    /// download refused or failed, or the manager's own [`PluginError`].
    pub async fn call(&self, method: &str, params: Value) -> Result<Value, AdminError> {
        methods::run(self, method, params).await
    }

    fn change(mut self, edit: impl FnOnce(&mut Settings)) -> Self {
        edit(Arc::make_mut(&mut self.inner));
        self
    }
}

/// Why a management call failed. Each becomes a JSON-RPC error with [`code`](Self::code).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AdminError {
    /// No method has this name.
    #[error("there is no method `{method}`; the methods are {}", METHODS.join(", "))]
    UnknownMethod {
        /// The name asked for.
        method: String,
    },
    /// The params do not fit the method.
    #[error("`{method}` takes {expected}: {problem}")]
    InvalidParams {
        /// The method.
        method: String,
        /// What it takes (`{"id": string}`).
        expected: String,
        /// What is wrong with what came.
        problem: String,
    },
    /// A download for `plugins.install` was refused or failed.
    #[error("cannot download `{url}`: {message}")]
    Download {
        /// The URL asked for.
        url: String,
        /// Why.
        message: String,
    },
    /// The manager's own error.
    #[error(transparent)]
    Plugin(#[from] PluginError),
    /// The work stopped before it finished (it panicked); nothing else is affected.
    #[error("the call stopped before it finished: {0}")]
    Interrupted(String),
}

impl AdminError {
    /// The JSON-RPC error code: `-32601` for an unknown method, `-32602` for wrong params,
    /// `-32001` for a plugin that is not there or not running, `-32000` for the rest (a
    /// service that is not there among them).
    pub fn code(&self) -> i64 {
        match self {
            Self::UnknownMethod { .. } => -32601,
            Self::InvalidParams { .. } => -32602,
            Self::Plugin(PluginError::NotFound(_)) => -32001,
            Self::Download { .. } | Self::Plugin(_) | Self::Interrupted(_) => -32000,
        }
    }
}
