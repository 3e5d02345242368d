//! [`HttpOptions`]: what serving an [`McpServer`] over streamable HTTP takes beyond the
//! tools, and the builder methods that set it.

use std::sync::Arc;
use std::time::Duration;

use super::sessions::SessionLimits;
use crate::mcp::{EventLog, McpAuth, McpServer, SessionStore};

/// The settings of [`McpServer::serve_http`]: which hosts and origins it answers, its
/// authorizer, SSE polling, session limits and store, and the routes served beside `/mcp`.
#[derive(Clone, Default)]
pub(in crate::mcp) struct HttpOptions {
    pub(in crate::mcp) allowed_hosts: Option<Arc<[String]>>,
    pub(in crate::mcp) router: Option<axum::Router>,
    pub(in crate::mcp) auth: Option<McpAuth>,
    pub(in crate::mcp) cors_origins: Option<Arc<[String]>>,
    pub(in crate::mcp) sse_polling: Option<Duration>,
    pub(in crate::mcp) sse_retry: Option<Duration>,
    pub(in crate::mcp) sessions: SessionLimits,
    pub(in crate::mcp) shared_sessions: Option<Arc<dyn SessionStore>>,
    pub(in crate::mcp) shared_events: Option<Arc<dyn EventLog>>,
}

#[cfg_attr(docsrs, doc(cfg(feature = "mcp-http")))]
impl McpServer {
    /// Shares [`serve_http`](Self::serve_http)'s sessions through `store` (such as a
    /// [`RedisStore`](crate::mcp::RedisStore)), so that replicas behind a load balancer
    /// without sticky sessions serve every session:
    ///
    /// - A request that lands on a replica that did not open its session wakes it there, as
    ///   a session that slept wakes. A session's handshake is kept for its idle timeout,
    ///   renewed as it is used; a request of another identity than the one that opened it
    ///   does not wake it.
    /// - Each request's events are logged as they are sent, so a client whose stream broke
    ///   resumes it (`Last-Event-ID`) on any replica: it gets what it missed, then the rest
    ///   as the replica answering the request sends it. When that replica stops before it
    ///   answers, the resumed stream ends with an error answer to the request, never in
    ///   silence.
    /// - A question a tool asks its caller (an elicitation, a sampling request) names the
    ///   replica that asked in its id; the client's answer, wherever it lands, is relayed
    ///   there.
    ///
    /// What a client set in its session (a log level, subscriptions) and the session's
    /// common stream (a `GET` without `Last-Event-ID`) stay with the replica that holds them.
    #[must_use]
    pub fn with_session_store<S: SessionStore + EventLog>(mut self, store: S) -> Self {
        let store = Arc::new(store);
        self.http.shared_sessions = Some(Arc::clone(&store) as Arc<dyn SessionStore>);
        self.http.shared_events = Some(store);
        self
    }
    /// The `Host` headers [`serve_http`](Self::serve_http) accepts (names, or `host:port`).
    /// The default accepts only loopback names, which keeps web pages from reaching a local
    /// server through DNS rebinding; a server reachable from elsewhere lists its names here.
    /// Pages served from these hosts (`http` or `https`, on the port given, or any port when
    /// none is) may call the server from a browser too.
    #[must_use]
    pub fn with_allowed_hosts(
        mut self,
        hosts: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        self.http.allowed_hosts = Some(hosts.into_iter().map(Into::into).collect());
        self
    }
    /// Requires a bearer token of every HTTP request, as [`McpAuth`] describes, and serves
    /// the protected-resource metadata document. Each call's [`ToolContext`](crate::ToolContext) carries the
    /// [`Identity`](crate::Identity) the authorizer returned, its scopes granted as
    /// capabilities, so tools, layers and [`Permission`](crate::middleware::Permission) can
    /// tell callers apart. Stdio is not affected: its client is whoever started the process.
    ///
    /// ```no_run
    /// use aleph_tools::{AlephToolServer, Identity};
    /// use aleph_tools::mcp::{McpAuth, McpServer, StaticTokens};
    ///
    /// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// let tools = AlephToolServer::from_registry()?;
    /// let token = std::env::var("TOOLS_TOKEN")?;
    /// let auth = McpAuth::new(StaticTokens::new().with_token(token, Identity::new("ci")));
    /// McpServer::new(&tools)
    ///     .with_auth(auth)
    ///     .serve_http("127.0.0.1:8080")
    ///     .await?
    ///     .wait()
    ///     .await?;
    /// # Ok(())
    /// # }
    /// ```
    #[must_use]
    pub fn with_auth(mut self, auth: McpAuth) -> Self {
        self.http.auth = Some(auth);
        self
    }
    /// Lets web pages from these origins (`https://app.example.com`, scheme and host and
    /// any port the page uses) call the server from a browser; `"*"` lets any page. The
    /// answers carry the CORS headers MCP needs: `Authorization`, `Content-Type`,
    /// `Mcp-Session-Id`, `Mcp-Protocol-Version` and `Last-Event-ID` allowed,
    /// `Mcp-Session-Id` and `WWW-Authenticate` readable. Without it, no CORS headers are
    /// sent and browsers keep pages of other origins out.
    ///
    /// Whatever the browser does, a request whose `Origin` is not trusted is refused with
    /// `403 Forbidden`, as the MCP transport requires against DNS rebinding. Trusted are these
    /// origins, the server's own (`http://localhost:PORT`, `http://127.0.0.1:PORT`,
    /// `http://[::1]:PORT` on the port it serves) and pages of
    /// [`with_allowed_hosts`](Self::with_allowed_hosts). Requests without `Origin` (clients
    /// other than browsers) are not affected.
    #[must_use]
    pub fn with_cors_origins(
        mut self,
        origins: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        self.http.cors_origins = Some(origins.into_iter().map(Into::into).collect());
        self
    }
    /// Closes the event stream of an HTTP request still running after `after`, so no
    /// connection stays open longer than that, and proxies that cut long streams have none
    /// to cut. The client reconnects when the stream's last event tells it to (see
    /// [`with_sse_retry`](Self::with_sse_retry)) with a `GET` carrying `Last-Event-ID`, gets
    /// the events it missed and the answer when it comes, and is cut again after as long.
    /// This is SSE polling from the 2025-11-25 revision; the official SDKs' clients
    /// reconnect on their own. Only requests in a session (of clients that begin with
    /// `initialize`) are cut: a 2026-07-28 request without one has nowhere to resume, so it
    /// is answered on its own stream. Stdio has no streams to close.
    ///
    /// ```
    /// use std::time::Duration;
    /// use aleph_tools::AlephToolServer;
    /// use aleph_tools::mcp::McpServer;
    ///
    /// let tools = AlephToolServer::new();
    /// let server = McpServer::new(&tools)
    ///     .with_sse_polling(Duration::from_secs(30))
    ///     .with_sse_retry(Duration::from_secs(1));
    /// # let _ = server;
    /// ```
    #[must_use]
    pub fn with_sse_polling(mut self, after: Duration) -> Self {
        self.http.sse_polling = Some(after);
        self
    }
    /// How long an HTTP client waits before it reconnects when an event stream ends before
    /// its answer, whether the network dropped it or [`with_sse_polling`](Self::with_sse_polling)
    /// closed it: the SSE `retry` field of each stream's first event and of the last one
    /// before a close. Three seconds unless set.
    #[must_use]
    pub fn with_sse_retry(mut self, retry: Duration) -> Self {
        self.http.sse_retry = Some(retry);
        self
    }
    /// How long an HTTP session may go unused before it ends: five minutes unless set. A
    /// session is in use while a request of it runs or its client holds its `GET` event
    /// stream open (where notifications come); one without either for this long is closed,
    /// and its id then gets `404 Not Found`, which tells the client to open a new session.
    /// Clients that keep the `GET` stream open (the official SDKs do) never see it.
    ///
    /// An idle session gives up most of what it holds (rmcp's service of it, about 95 KB)
    /// once nothing in it is left for a client to resume: five seconds after its last
    /// request, or a minute after a stream of it was cut short (or half this time, if
    /// shorter), whether or not its `GET` stream is open. It then costs under a kilobyte,
    /// its `GET` stream still hears of changes, and its next request brings it back.
    ///
    /// ```
    /// use std::time::Duration;
    /// use aleph_tools::AlephToolServer;
    /// use aleph_tools::mcp::McpServer;
    ///
    /// let tools = AlephToolServer::new();
    /// let server = McpServer::new(&tools)
    ///     .with_session_idle_timeout(Duration::from_secs(600))
    ///     .with_max_sessions(256)
    ///     .with_max_sessions_per_identity(16);
    /// # let _ = server;
    /// ```
    #[must_use]
    pub fn with_session_idle_timeout(mut self, idle: Duration) -> Self {
        self.http.sessions.idle_timeout = idle.max(Duration::from_millis(10));
        self
    }
    /// The most HTTP sessions the server holds at once: 1024 unless set (at least 1). An
    /// `initialize` past it is refused with `503 Service Unavailable` and a JSON-RPC error
    /// that says the limit and what to do: close sessions no longer used (`DELETE /mcp`)
    /// or wait for idle ones to end ([`with_session_idle_timeout`](Self::with_session_idle_timeout)).
    /// Requests of sessions already open, and requests without a session, are served.
    #[must_use]
    pub fn with_max_sessions(mut self, sessions: usize) -> Self {
        self.http.sessions.max_sessions = sessions.max(1);
        self
    }
    /// The most HTTP sessions one identity (the subject [`with_auth`](Self::with_auth)'s
    /// authorizer returns) holds at once: 64 unless set (at least 1), so one token holder
    /// cannot take every session. Past it, that identity's `initialize` is refused with
    /// `429 Too Many Requests` and a JSON-RPC error naming the limit. Without auth every
    /// client is anonymous and only [`with_max_sessions`](Self::with_max_sessions) applies.
    #[must_use]
    pub fn with_max_sessions_per_identity(mut self, sessions: usize) -> Self {
        self.http.sessions.max_per_identity = sessions.max(1);
        self
    }
    /// Routes [`serve_http`](Self::serve_http) serves beside `/mcp`, such as a plugin
    /// manager's [`router`](crate::plugin::PluginManager::router) (feature `routes`). They
    /// get the same `Host` check as `/mcp` and, with [`with_auth`](Self::with_auth), need
    /// the same token. Routes given more than once are merged.
    #[must_use]
    pub fn with_router(mut self, router: axum::Router) -> Self {
        self.http.router = Some(match self.http.router.take() {
            Some(before) => before.merge(router),
            None => router,
        });
        self
    }
}
