//! Serving MCP over streamable HTTP: the routes, and in front of rmcp the checks of `Host`
//! and `Origin` ([`guard`]), of tokens ([`auth`](super::auth)), of bodies and session caps
//! ([`intake`]); the sessions' [`Ledger`](sessions::Ledger); health probes and the drain
//! ([`drain`]).

pub(in crate::mcp) mod drain;
mod front;
mod guard;
mod in_session;
mod intake;
mod options;
pub(in crate::mcp) mod sessions;

use std::convert::Infallible;
use std::fmt;
use std::net::SocketAddr;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::ServiceExt as _;
use axum::response::IntoResponse;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};
use tower_http::cors::{AllowOrigin, CorsLayer};
use tower_layer::Layer as _;

pub use self::drain::Drained;
use self::front::{Direct, Front, Fronted};
use self::guard::Guard;
use self::in_session::InSession;
use self::intake::{Intake, intake_layer};
pub(in crate::mcp) use self::options::HttpOptions;
use self::sessions::Ledger;
pub use self::sessions::SessionCount;
use super::auth::{Gate, authenticate, metadata_routes};
use super::polling::PollingSessions;
use super::tasks::TaskTable;
use super::{McpError, McpServer};
use crate::mcp::running::InFlight;
use crate::util::BoxFuture;

/// Where MCP is served.
const MCP_PATH: &str = "/mcp";

#[cfg_attr(docsrs, doc(cfg(feature = "mcp-http")))]
impl McpServer {
    /// Serves MCP over streamable HTTP at `http://{addr}/mcp`, for any number of clients at
    /// once, until the returned [`McpHttpServer`] is shut down, drained or dropped. Port 0
    /// picks a free port; [`McpHttpServer::url`] says which.
    ///
    /// Beside `/mcp` it answers a load balancer's probes, without a token or `Host` check:
    /// `GET /healthz` (`200` while the process serves) and `GET /readyz` (`200`, or `503`
    /// once [`drain`](McpHttpServer::drain) has begun). With the feature `metrics` it
    /// reports the sessions and tasks it holds as the gauges
    /// `aleph_tools_mcp_sessions` and `aleph_tools_mcp_tasks`.
    ///
    /// ```no_run
    /// use aleph_tools::AlephToolServer;
    /// use aleph_tools::mcp::McpServer;
    ///
    /// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// let tools = AlephToolServer::from_registry()?;
    /// let http = McpServer::new(&tools).serve_http("127.0.0.1:8080").await?;
    /// println!("MCP at {}", http.url());
    /// http.wait().await?;
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// [`McpError::Bind`] when the address cannot be bound.
    pub async fn serve_http<A>(mut self, addr: A) -> Result<McpHttpServer, McpError>
    where
        A: tokio::net::ToSocketAddrs + fmt::Display,
    {
        let listener = TcpListener::bind(&addr)
            .await
            .map_err(|source| McpError::Bind {
                addr: addr.to_string(),
                source,
            })?;
        let local = listener.local_addr().map_err(|source| McpError::Bind {
            addr: addr.to_string(),
            source,
        })?;
        let extra = self.http.router.clone();
        let auth = self.http.auth.clone();
        let cors = self.http.cors_origins.clone();
        let checks = Guard::new(self.http.allowed_hosts.clone(), cors.clone(), local);
        let ledger = Ledger::new(self.http.sessions, self.http.shared_sessions.clone());
        let in_flight = self.count_calls_apart();
        let tasks = self.task_store();
        #[cfg(feature = "metrics")]
        super::gauges::describe();
        let shutdown = CancellationToken::new();
        let mut config = StreamableHttpServerConfig::default()
            .with_cancellation_token(shutdown.child_token())
            .with_max_request_body_bytes(self.max_request);
        // rmcp asks the ledger for a sleeping session's handshake, and wakes it with that.
        config.session_store = Some(Arc::clone(&ledger) as _);
        if let Some(retry) = self.http.sse_retry {
            config = config.with_sse_retry(Some(retry));
        }
        // The front checks `Host` and `Origin` before any route (`guard`), against the same
        // hosts; rmcp's own check would match the `Host` against them again.
        config = config.disable_allowed_hosts();
        let sessions = PollingSessions::new(
            self.http.sse_polling,
            self.http.sse_retry,
            Arc::clone(&ledger),
            self.http.shared_events.clone(),
        );
        tokio::spawn(Arc::clone(&sessions).look_after(shutdown.child_token()));
        tokio::spawn(self.tell_listeners(Arc::clone(&ledger), shutdown.child_token()));
        tokio::spawn(Arc::clone(&sessions).take_answers(shutdown.child_token()));
        let read = Arc::new(Intake {
            ledger: Arc::clone(&ledger),
            max_request: self.max_request,
            in_flight: Arc::clone(&in_flight),
            in_session: InSession {
                sessions: Arc::clone(&sessions),
                keep_alive: config.sse_keep_alive,
                stop: config.cancellation_token.clone(),
            },
        });
        // rmcp's service clones its whole configuration (the allowed hosts among it) when
        // cloned, and each layer below clones what it wraps for each request: behind an
        // `Arc`, that clone is one count.
        let mcp: Arc<McpService> = Arc::new(StreamableHttpService::new(
            move || Ok(self.session()),
            sessions,
            config,
        ));
        let service = {
            let mcp = Arc::clone(&mcp);
            Handle(Arc::new(move |request: axum::extract::Request| {
                let mcp = Arc::clone(&mcp);
                Box::pin(async move { Ok(mcp.handle(request).await.into_response()) })
            }))
        };
        // rmcp reads `/mcp` only after the intake (after the token check, when there is one).
        let mut router = axum::Router::new().route_service(MCP_PATH, service);
        let mut beside = axum::Router::new();
        if let Some(extra) = extra {
            beside = beside.merge(extra);
        }
        let mut intake_in_front = None;
        let held = Arc::clone(&ledger);
        if let Some(auth) = auth {
            router = router.layer(axum::middleware::from_fn_with_state(read, intake_layer));
            let gate = Gate::new(auth, MCP_PATH, ledger);
            let check = axum::middleware::from_fn_with_state(Arc::clone(&gate), authenticate);
            router = router.layer(check.clone());
            beside = beside.layer(check);
            if gate.publishes_metadata() {
                beside = beside.merge(metadata_routes(gate));
            }
        } else {
            intake_in_front = Some(Arc::new(Direct { intake: read, mcp }));
        }
        // Probes are answered before any check; the Host and Origin are checked before the
        // token, so a request for another host or from another site's page is told nothing
        // about this one.
        let front = Front {
            in_flight: Arc::clone(&in_flight),
            guard: checks,
            intake: intake_in_front,
        };
        let app = Fronted::new(front, router.merge(beside));
        let stop = shutdown.clone().cancelled_owned();
        let task = match cors {
            Some(origins) => tokio::spawn(serve(listener, cors_layer(&origins).layer(app), stop)),
            None => tokio::spawn(serve(listener, app, stop)),
        };
        Ok(McpHttpServer {
            addr: local,
            shutdown,
            task: Some(task),
            in_flight,
            tasks,
            ledger: held,
        })
    }
}

/// Serves `app` on `listener` until `stop`, then lets the requests running finish.
async fn serve<S>(
    listener: TcpListener,
    app: S,
    stop: WaitForCancellationFutureOwned,
) -> std::io::Result<()>
where
    S: tower_service::Service<
            axum::extract::Request,
            Response = axum::response::Response,
            Error = Infallible,
        > + Clone
        + Send
        + 'static,
    S::Future: Send,
{
    axum::serve(listener, app.into_make_service())
        .with_graceful_shutdown(stop)
        .await
}

/// rmcp's streamable HTTP service over this server's sessions.
type McpService = StreamableHttpService<super::serve::Session, PollingSessions>;

/// rmcp's service as the router serves it: a request costs one reference count and one
/// boxed future (rmcp's future is large: boxed at once, the router moves a pointer).
#[derive(Clone)]
struct Handle(
    Arc<
        dyn Fn(
                axum::extract::Request,
            ) -> BoxFuture<'static, Result<axum::response::Response, Infallible>>
            + Send
            + Sync,
    >,
);

impl tower_service::Service<axum::extract::Request> for Handle {
    type Response = axum::response::Response;
    type Error = Infallible;
    type Future = BoxFuture<'static, Result<axum::response::Response, Infallible>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: axum::extract::Request) -> Self::Future {
        (self.0)(request)
    }
}

/// The CORS answers for pages of `origins` (`*` for any), with the headers MCP uses.
fn cors_layer(origins: &[String]) -> CorsLayer {
    use axum::http::{HeaderName, Method, header};
    let allow_origin = if origins.iter().any(|origin| origin == "*") {
        AllowOrigin::any()
    } else {
        AllowOrigin::list(origins.iter().filter_map(|origin| {
            axum::http::HeaderValue::from_str(origin.trim_end_matches('/')).ok()
        }))
    };
    let mcp = |name| HeaderName::from_static(name);
    CorsLayer::new()
        .allow_origin(allow_origin)
        .allow_methods([Method::GET, Method::POST, Method::DELETE])
        .allow_headers([
            header::AUTHORIZATION,
            header::CONTENT_TYPE,
            header::ACCEPT,
            mcp("mcp-session-id"),
            mcp("mcp-protocol-version"),
            mcp("last-event-id"),
        ])
        .expose_headers([
            mcp("mcp-session-id"),
            mcp("mcp-protocol-version"),
            header::WWW_AUTHENTICATE,
        ])
}

/// A running streamable HTTP MCP server. Dropping it stops the server.
pub struct McpHttpServer {
    addr: SocketAddr,
    shutdown: CancellationToken,
    task: Option<JoinHandle<std::io::Result<()>>>,
    in_flight: Arc<InFlight>,
    tasks: Arc<TaskTable>,
    ledger: Arc<Ledger>,
}

impl fmt::Debug for McpHttpServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpHttpServer")
            .field("url", &self.url())
            .finish_non_exhaustive()
    }
}

impl McpHttpServer {
    /// The address it listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The URL clients connect to: `http://{addr}/mcp`.
    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    /// How many sessions the server holds now, and how many of them are awake: what their
    /// memory comes to (see [`SessionCount`]).
    ///
    /// ```no_run
    /// # fn run(http: &aleph_tools::mcp::McpHttpServer) {
    /// let sessions = http.sessions();
    /// eprintln!("{} sessions, {} awake", sessions.held, sessions.awake);
    /// # }
    /// ```
    pub fn sessions(&self) -> SessionCount {
        self.ledger.count()
    }

    /// Stops accepting clients, ends every session and waits until the server has stopped.
    ///
    /// # Errors
    ///
    /// [`McpError::Http`] when the server had already stopped with an error.
    pub async fn shutdown(mut self) -> Result<(), McpError> {
        self.shutdown.cancel();
        self.finish().await
    }

    /// Stops the server gracefully, as a load balancer expects on a rolling restart:
    /// `/readyz` answers `503` at once, so the balancer sends new clients elsewhere; new
    /// requests are refused with `503` and `Retry-After` (a JSON-RPC error that says to send
    /// them again); the tool calls and tasks running now finish, with their clients' answers,
    /// cancellations, task polls and stream resumptions still taken. When they have all
    /// finished, or `within` has passed (then the rest are cancelled), the server stops as
    /// [`shutdown`](Self::shutdown) does.
    ///
    /// ```no_run
    /// # use std::time::Duration;
    /// # async fn run(http: aleph_tools::mcp::McpHttpServer) -> Result<(), aleph_tools::mcp::McpError> {
    /// let drained = http.drain(Duration::from_secs(30)).await?;
    /// eprintln!("{} calls were running, {} cut off", drained.running, drained.cut_off);
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// [`McpError::Http`] when the server had already stopped with an error.
    pub async fn drain(mut self, within: Duration) -> Result<Drained, McpError> {
        let began = tokio::time::Instant::now();
        self.in_flight.start_draining();
        let running = self.in_flight.running();
        let settled = tokio::time::timeout(within, self.in_flight.settled()).await;
        let cut_off = if settled.is_ok() {
            0
        } else {
            let left = self.in_flight.running();
            // Calls end when their sessions close with the server; tasks are cancelled here.
            self.tasks.cancel_started_by(&self.in_flight);
            left
        };
        self.shutdown.cancel();
        self.finish().await?;
        Ok(Drained {
            running,
            cut_off,
            took: began.elapsed(),
        })
    }

    /// Serves until the server fails or the process ends; for programs whose whole job is
    /// to serve.
    ///
    /// # Errors
    ///
    /// [`McpError::Http`] when the server fails.
    pub async fn wait(mut self) -> Result<(), McpError> {
        self.finish().await
    }

    async fn finish(&mut self) -> Result<(), McpError> {
        let Some(task) = self.task.take() else {
            return Ok(());
        };
        let outcome = match task.await {
            Ok(outcome) => outcome,
            Err(join) => Err(std::io::Error::other(join.to_string())),
        };
        outcome.map_err(|source| McpError::Http {
            addr: self.addr,
            source,
        })
    }
}

impl Drop for McpHttpServer {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}
