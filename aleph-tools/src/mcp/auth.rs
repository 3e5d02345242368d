//! Bearer-token auth for MCP over HTTP: the [`Authorizer`] that checks a token, the
//! [`StaticTokens`] one, and [`McpAuth`], which says what the protected-resource metadata
//! document (RFC 9728) tells clients.

use std::collections::HashMap;
use std::fmt::{self, Write as _};
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex};

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures_util::FutureExt as _;
use serde_json::json;
use subtle::ConstantTimeEq;

use super::McpError;
use crate::context::Identity;
use crate::sync::lock;
use crate::tool::BoxFuture;

/// Where the metadata document is served, before the resource's path.
const METADATA_PATH: &str = "/.well-known/oauth-protected-resource";
/// The header naming a legacy streamable HTTP session.
const SESSION_HEADER: &str = "mcp-session-id";

/// Checks the bearer token of an HTTP request and says whose it is.
///
/// [`McpServer::with_auth`](super::McpServer::with_auth) asks it about every request to
/// `/mcp` (and to the routes served beside it). A token it refuses gets `401`; the identity
/// it returns reaches every tool the request calls, through
/// [`ToolContext::identity`](crate::ToolContext::identity), with its scopes granted as
/// capabilities.
///
/// The authorizer owns the token's validation: for an OAuth access token, its signature or
/// introspection, its expiry, and that its audience is this server (the resource named in
/// [`McpAuth::with_resource`]). A token meant for another server must be refused.
///
/// Any `Fn(String) -> impl Future<Output = Result<Identity, AuthError>>` is an authorizer:
///
/// ```
/// use aleph_tools::Identity;
/// use aleph_tools::mcp::{AuthError, McpAuth};
///
/// let auth = McpAuth::new(|token: String| async move {
///     match token.strip_prefix("user-") {
///         Some(user) => Ok(Identity::new(user).with_scopes(["tools:call"])),
///         None => Err(AuthError::invalid_token("unknown token")),
///     }
/// });
/// # let _ = auth;
/// ```
pub trait Authorizer: Send + Sync + 'static {
    /// Says whose token this is, or why it is refused.
    fn authorize<'a>(
        &'a self,
        request: AuthRequest<'a>,
    ) -> BoxFuture<'a, Result<Identity, AuthError>>;
}

impl<F, Fut> Authorizer for F
where
    F: Fn(String) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Identity, AuthError>> + Send + 'static,
{
    fn authorize<'a>(
        &'a self,
        request: AuthRequest<'a>,
    ) -> BoxFuture<'a, Result<Identity, AuthError>> {
        Box::pin(self(request.token.to_owned()))
    }
}

/// The request an [`Authorizer`] is asked about.
#[derive(Debug, Clone, Copy)]
pub struct AuthRequest<'a> {
    token: &'a str,
    headers: &'a HeaderMap,
}

impl<'a> AuthRequest<'a> {
    /// The bearer token, as the `Authorization` header carried it.
    pub fn token(&self) -> &'a str {
        self.token
    }

    /// All the request's headers, for authorizers that need more than the token.
    pub fn headers(&self) -> &'a HeaderMap {
        self.headers
    }
}

/// Why an [`Authorizer`] refused a request.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AuthError {
    /// The token is unknown, expired, revoked, malformed or meant for another server: `401`
    /// with `error="invalid_token"`, so the client gets a new one.
    #[error("the bearer token is not valid: {0}")]
    InvalidToken(String),
    /// The token is good but lacks a scope the request needs: `403` with
    /// `error="insufficient_scope"`, naming it, so the client can ask for it.
    #[error("the bearer token lacks the scope `{scope}`")]
    InsufficientScope {
        /// The scope needed.
        scope: String,
    },
}

impl AuthError {
    /// A refused token, with the reason the client is told.
    pub fn invalid_token(reason: impl Into<String>) -> Self {
        Self::InvalidToken(reason.into())
    }

    /// A token without `scope`.
    pub fn insufficient_scope(scope: impl Into<String>) -> Self {
        Self::InsufficientScope {
            scope: scope.into(),
        }
    }
}

/// An [`Authorizer`] that knows a fixed set of tokens, each standing for an identity: for a
/// server reached by a few known clients (a CI job, a team's agents), with the tokens kept
/// as secrets outside the code.
///
/// Tokens are compared in constant time. An empty token is never accepted.
///
/// ```
/// use aleph_tools::Identity;
/// use aleph_tools::mcp::{McpAuth, StaticTokens};
///
/// let tokens = StaticTokens::new()
///     .with_token("s3cr3t-for-ci", Identity::new("ci").with_scopes(["tools:call"]))
///     .with_token("s3cr3t-for-ann", Identity::new("ann"));
/// let auth = McpAuth::new(tokens);
/// # let _ = auth;
/// ```
#[derive(Default)]
pub struct StaticTokens {
    tokens: Vec<(Box<[u8]>, Identity)>,
}

impl StaticTokens {
    /// No tokens yet: every request is refused.
    pub fn new() -> Self {
        Self::default()
    }

    /// Accepts `token` as `identity`.
    #[must_use]
    pub fn with_token(mut self, token: impl Into<String>, identity: Identity) -> Self {
        let token: String = token.into();
        if !token.is_empty() {
            self.tokens
                .push((token.into_bytes().into_boxed_slice(), identity));
        }
        self
    }
}

impl fmt::Debug for StaticTokens {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let subjects: Vec<&str> = self.tokens.iter().map(|(_, who)| who.subject()).collect();
        f.debug_struct("StaticTokens")
            .field("subjects", &subjects)
            .finish_non_exhaustive()
    }
}

impl Authorizer for StaticTokens {
    fn authorize<'a>(
        &'a self,
        request: AuthRequest<'a>,
    ) -> BoxFuture<'a, Result<Identity, AuthError>> {
        // Every token is compared, so the time taken does not say which one came close.
        let given = request.token.as_bytes();
        let mut found = None;
        for (token, identity) in &self.tokens {
            if bool::from(token.as_ref().ct_eq(given)) {
                found = Some(identity);
            }
        }
        let outcome = found
            .cloned()
            .ok_or_else(|| AuthError::invalid_token("this token is not known to the server"));
        Box::pin(std::future::ready(outcome))
    }
}

/// Bearer-token auth for [`McpServer::serve_http`](super::McpServer::serve_http), as the
/// MCP authorization specification describes it: the server is an OAuth protected resource.
///
/// - Every request to `/mcp` (and to the routes served beside it) needs
///   `Authorization: Bearer <token>`, which the [`Authorizer`] checks. Without one, or with
///   one it refuses, the answer is `401` with a `WWW-Authenticate` challenge (RFC 6750); a
///   token without a [required scope](Self::with_required_scopes) gets `403` with
///   `error="insufficient_scope"`.
/// - Once an [authorization server](Self::with_authorization_server) is named, the
///   protected-resource metadata document (RFC 9728) is served without a token at
///   `/.well-known/oauth-protected-resource/mcp` (and at
///   `/.well-known/oauth-protected-resource`), and every challenge points to it: the
///   resource's URL, the authorization servers that issue its tokens, the scopes it knows.
///   An OAuth client finds where to sign in there. Without one (tokens handed out by other
///   means, as with [`StaticTokens`]) there is no document: MCP requires it to name a
///   server.
/// - A session begun with one identity is refused to every other: a stolen session id is no
///   use without its token.
///
/// TLS is left to a reverse proxy in front of the server (bearer tokens must only travel
/// over HTTPS off the machine): name the public URL with [`with_resource`](Self::with_resource).
///
/// ```
/// use aleph_tools::Identity;
/// use aleph_tools::mcp::{McpAuth, StaticTokens};
///
/// let auth = McpAuth::new(StaticTokens::new().with_token("s3cr3t", Identity::new("ci")))
///     .with_resource("https://tools.example.com/mcp")?
///     .with_authorization_server("https://auth.example.com")?
///     .with_scopes_supported(["tools:call", "files:write"])
///     .with_required_scopes(["tools:call"]);
/// # let _ = auth;
/// # Ok::<(), aleph_tools::mcp::McpError>(())
/// ```
#[derive(Clone)]
pub struct McpAuth {
    authorizer: Arc<dyn Authorizer>,
    resource: Option<String>,
    authorization_servers: Vec<String>,
    scopes_supported: Vec<String>,
    required_scopes: Vec<String>,
    resource_name: Option<String>,
    documentation: Option<String>,
}

impl fmt::Debug for McpAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpAuth")
            .field("resource", &self.resource)
            .field("authorization_servers", &self.authorization_servers)
            .field("scopes_supported", &self.scopes_supported)
            .field("required_scopes", &self.required_scopes)
            .finish_non_exhaustive()
    }
}

impl McpAuth {
    /// Auth by `authorizer`, with no authorization server named and no scope required.
    pub fn new(authorizer: impl Authorizer) -> Self {
        Self {
            authorizer: Arc::new(authorizer),
            resource: None,
            authorization_servers: Vec::new(),
            scopes_supported: Vec::new(),
            required_scopes: Vec::new(),
            resource_name: None,
            documentation: None,
        }
    }

    /// The server's public URL (`https://tools.example.com/mcp`): the `resource` of the
    /// metadata document, the audience its tokens are issued for, and where the challenge
    /// points clients. Without it, the URL is built from each request's `Host` (and
    /// `X-Forwarded-Proto`), which is right only when clients reach the server directly.
    ///
    /// # Errors
    ///
    /// [`McpError::Url`] when `url` is not an absolute `http` or `https` URL without a
    /// fragment.
    pub fn with_resource(mut self, url: impl Into<String>) -> Result<Self, McpError> {
        self.resource = Some(checked_url(url.into())?);
        Ok(self)
    }

    /// An authorization server that issues tokens for this server, listed in the metadata
    /// document. Call once per server.
    ///
    /// # Errors
    ///
    /// [`McpError::Url`] as for [`with_resource`](Self::with_resource).
    pub fn with_authorization_server(mut self, url: impl Into<String>) -> Result<Self, McpError> {
        self.authorization_servers.push(checked_url(url.into())?);
        Ok(self)
    }

    /// The scopes this server knows, listed in the metadata document.
    #[must_use]
    pub fn with_scopes_supported(
        mut self,
        scopes: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        self.scopes_supported
            .extend(scopes.into_iter().map(Into::into));
        self
    }

    /// Scopes every request's token must have; one without gets `403`. The challenge names
    /// them, so a client asks for them when it signs in.
    #[must_use]
    pub fn with_required_scopes(
        mut self,
        scopes: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        self.required_scopes
            .extend(scopes.into_iter().map(Into::into));
        self
    }

    /// A name for people, in the metadata document (`resource_name`).
    #[must_use]
    pub fn with_resource_name(mut self, name: impl Into<String>) -> Self {
        self.resource_name = Some(name.into());
        self
    }

    /// A page that says how to get access, in the metadata document
    /// (`resource_documentation`).
    ///
    /// # Errors
    ///
    /// [`McpError::Url`] as for [`with_resource`](Self::with_resource).
    pub fn with_documentation(mut self, url: impl Into<String>) -> Result<Self, McpError> {
        self.documentation = Some(checked_url(url.into())?);
        Ok(self)
    }

    /// Whether there is a metadata document to serve: MCP requires it to name at least one
    /// authorization server, so a server whose tokens come from elsewhere has none.
    pub(super) fn publishes_metadata(&self) -> bool {
        !self.authorization_servers.is_empty()
    }

    /// The metadata document, for a server reached at `resource`.
    fn metadata(&self, resource: &str) -> serde_json::Value {
        let mut document = json!({
            "resource": resource,
            "authorization_servers": self.authorization_servers,
            "bearer_methods_supported": ["header"],
        });
        let scopes: Vec<&String> = self
            .scopes_supported
            .iter()
            .chain(self.required_scopes.iter())
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        if !scopes.is_empty() {
            document["scopes_supported"] = json!(scopes);
        }
        if let Some(name) = &self.resource_name {
            document["resource_name"] = json!(name);
        }
        if let Some(page) = &self.documentation {
            document["resource_documentation"] = json!(page);
        }
        document
    }
}

/// `url` if it is an absolute `http(s)` URL with a host and no fragment.
fn checked_url(url: String) -> Result<String, McpError> {
    let problem = match url.split_once("://") {
        None => Some("it needs a scheme, `https://` or `http://`"),
        Some((scheme, _))
            if !scheme.eq_ignore_ascii_case("https") && !scheme.eq_ignore_ascii_case("http") =>
        {
            Some("its scheme must be `https` or `http`")
        }
        Some((_, rest)) if rest.is_empty() || rest.starts_with('/') => Some("it needs a host"),
        _ if url.contains('#') => Some("it must not have a fragment (`#...`)"),
        _ if url.chars().any(|c| c.is_whitespace() || c.is_control()) => {
            Some("it must not contain spaces or control characters")
        }
        _ => None,
    };
    match problem {
        Some(problem) => Err(McpError::Url { url, problem }),
        None => Ok(url),
    }
}

/// The origin (`https://host:port`) and path (`/mcp`) of an absolute URL `checked_url`
/// accepted.
fn split_url(url: &str) -> (&str, &str) {
    let after_scheme = url.find("://").map_or(0, |at| at + 3);
    match url[after_scheme..].find(['/', '?']) {
        Some(at) => {
            let (origin, rest) = url.split_at(after_scheme + at);
            let path = rest.split('?').next().unwrap_or_default();
            (origin, path.trim_end_matches('/'))
        }
        None => (url, ""),
    }
}

/// What [`McpAuth`] needs while serving: the settings, and which identity opened each
/// session.
pub(super) struct Gate {
    auth: McpAuth,
    /// The path MCP is served at on this server (`/mcp`).
    path: &'static str,
    sessions: Mutex<HashMap<String, String>>,
}

impl Gate {
    pub(super) fn new(auth: McpAuth, path: &'static str) -> Arc<Self> {
        Arc::new(Self {
            auth,
            path,
            sessions: Mutex::default(),
        })
    }

    /// Whether the metadata document is served.
    pub(super) fn publishes_metadata(&self) -> bool {
        self.auth.publishes_metadata()
    }

    /// The resource's URL, as configured or as this request reached it.
    fn resource(&self, headers: &HeaderMap) -> String {
        if let Some(resource) = &self.auth.resource {
            return resource.clone();
        }
        let text = |name| {
            headers
                .get(name)
                .and_then(|v: &HeaderValue| v.to_str().ok())
        };
        let scheme = match text("x-forwarded-proto") {
            Some(proto) if proto.eq_ignore_ascii_case("https") => "https",
            _ => "http",
        };
        let host = text(header::HOST.as_str()).unwrap_or("localhost");
        format!("{scheme}://{host}{}", self.path)
    }

    /// Where this resource's metadata document is: the well-known path inserted between
    /// the resource's origin and its path.
    fn metadata_url(&self, headers: &HeaderMap) -> String {
        let resource = self.resource(headers);
        let (origin, path) = split_url(&resource);
        format!("{origin}{METADATA_PATH}{path}")
    }

    /// A refusal: its status, a `WWW-Authenticate` challenge, and the same in a JSON body.
    fn refuse(&self, headers: &HeaderMap, refusal: Refusal<'_>) -> Response {
        let mut challenge = String::from("Bearer realm=\"mcp\"");
        if self.auth.publishes_metadata() {
            let url = self.metadata_url(headers);
            let _ = write!(challenge, ", resource_metadata=\"{}\"", quoted_safe(&url));
        }
        let scope = match refusal {
            Refusal::InsufficientScope(scope) => scope.to_owned(),
            _ => self.auth.required_scopes.join(" "),
        };
        if !scope.is_empty() {
            let _ = write!(challenge, ", scope=\"{}\"", quoted_safe(&scope));
        }
        let (status, code, detail) = match refusal {
            Refusal::NoToken => (
                StatusCode::UNAUTHORIZED,
                None,
                "this server needs `Authorization: Bearer <token>`".to_owned(),
            ),
            Refusal::InvalidToken(why) => (
                StatusCode::UNAUTHORIZED,
                Some("invalid_token"),
                quoted_safe(why),
            ),
            Refusal::InsufficientScope(scope) => (
                StatusCode::FORBIDDEN,
                Some("insufficient_scope"),
                quoted_safe(&format!("the token lacks the scope `{scope}`")),
            ),
        };
        if let Some(code) = code {
            let _ = write!(
                challenge,
                ", error=\"{code}\", error_description=\"{detail}\""
            );
        }
        let body = json!({
            "error": code.unwrap_or("unauthorized"),
            "error_description": detail,
        });
        let mut response = json_response(status, &body);
        if let Ok(value) = HeaderValue::from_str(&challenge) {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, value);
        }
        response
    }
}

/// Why a request is refused.
#[derive(Clone, Copy)]
enum Refusal<'a> {
    /// It carried no bearer token.
    NoToken,
    /// Its token was refused, for this reason.
    InvalidToken(&'a str),
    /// Its token lacks this scope.
    InsufficientScope(&'a str),
}

/// `text` with only the characters RFC 6750 allows inside a challenge's quoted values.
fn quoted_safe(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '"' => '\'',
            '\\' => '/',
            ' '..='~' => c,
            _ => '?',
        })
        .collect()
}

/// The bearer token of `headers`, if they carry one.
fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// The middleware in front of `/mcp`: authenticates the request, keeps sessions to the
/// identity that opened them, and hands the identity on in the request's extensions.
pub(super) async fn authenticate(
    State(gate): State<Arc<Gate>>,
    mut request: Request,
    next: Next,
) -> Response {
    let headers = request.headers();
    let Some(token) = bearer(headers) else {
        return gate.refuse(headers, Refusal::NoToken);
    };
    // A panicking authorizer refuses this request and no other.
    let checked = AssertUnwindSafe(
        gate.auth
            .authorizer
            .authorize(AuthRequest { token, headers }),
    )
    .catch_unwind()
    .await;
    let identity = match checked {
        Err(_) => {
            return json_response(
                StatusCode::INTERNAL_SERVER_ERROR,
                &json!({
                    "error": "server_error",
                    "error_description": "the server could not check the token; try again later",
                }),
            );
        }
        Ok(Ok(identity)) => identity,
        Ok(Err(AuthError::InvalidToken(why))) => {
            return gate.refuse(headers, Refusal::InvalidToken(&why));
        }
        Ok(Err(AuthError::InsufficientScope { scope })) => {
            return gate.refuse(headers, Refusal::InsufficientScope(&scope));
        }
    };
    if let Some(missing) = gate
        .auth
        .required_scopes
        .iter()
        .find(|scope| !identity.has_scope(scope))
    {
        return gate.refuse(headers, Refusal::InsufficientScope(missing));
    }
    let session = headers
        .get(SESSION_HEADER)
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned);
    if let Some(session) = &session {
        let owner = lock(&gate.sessions).get(session).cloned();
        if owner.is_some_and(|owner| owner != identity.subject()) {
            return json_response(
                StatusCode::FORBIDDEN,
                &json!({
                    "error": "forbidden",
                    "error_description": "this MCP session was opened with another identity's token; open a session of your own",
                }),
            );
        }
    }
    let closing = request.method() == Method::DELETE;
    let subject = identity.subject().to_owned();
    request.extensions_mut().insert(Arc::new(identity));
    let response = next.run(request).await;
    let mut sessions = lock(&gate.sessions);
    match &session {
        Some(session) if closing && response.status().is_success() => {
            sessions.remove(session);
        }
        Some(_) => {}
        None => {
            if let Some(opened) = response
                .headers()
                .get(SESSION_HEADER)
                .and_then(|value| value.to_str().ok())
            {
                sessions.insert(opened.to_owned(), subject);
            }
        }
    }
    drop(sessions);
    response
}

/// Serves the metadata document.
pub(super) async fn metadata(State(gate): State<Arc<Gate>>, headers: HeaderMap) -> Response {
    let resource = gate.resource(&headers);
    json_response(StatusCode::OK, &gate.auth.metadata(&resource))
}

/// `body` as a JSON response.
fn json_response(status: StatusCode, body: &serde_json::Value) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

/// The routes of the metadata document, at the well-known path alone and with any path
/// after it (where RFC 9728 puts the document of a resource with a path).
pub(super) fn metadata_routes(gate: Arc<Gate>) -> axum::Router {
    axum::Router::new()
        .route(METADATA_PATH, axum::routing::get(metadata))
        .route(
            &format!("{METADATA_PATH}/{{*resource}}"),
            axum::routing::get(metadata),
        )
        .with_state(gate)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_checked_and_split() {
        assert!(checked_url("https://tools.example.com/mcp".into()).is_ok());
        for bad in [
            "tools.example.com/mcp",
            "ftp://x/mcp",
            "https:///mcp",
            "https://x/m#f",
            "https://x/ m",
        ] {
            assert!(checked_url(bad.into()).is_err(), "{bad}");
        }
        assert_eq!(
            split_url("https://x.example:8443/a/mcp/"),
            ("https://x.example:8443", "/a/mcp")
        );
        assert_eq!(split_url("http://x.example"), ("http://x.example", ""));
        assert_eq!(split_url("http://x.example?q=1"), ("http://x.example", ""));
    }

    #[test]
    fn bearer_tokens_are_read_from_the_authorization_header() {
        let mut headers = HeaderMap::new();
        assert_eq!(bearer(&headers), None);
        headers.insert(
            header::AUTHORIZATION,
            HeaderValue::from_static("Basic YWxhZGRpbg=="),
        );
        assert_eq!(bearer(&headers), None);
        headers.insert(
            header::AUTHORIZATION,
            HeaderValue::from_static("bearer  abc "),
        );
        assert_eq!(bearer(&headers), Some("abc"));
        headers.insert(header::AUTHORIZATION, HeaderValue::from_static("Bearer "));
        assert_eq!(bearer(&headers), None);
    }

    #[test]
    fn challenge_values_keep_to_the_allowed_characters() {
        assert_eq!(quoted_safe("a \"b\" \\ é\n"), "a 'b' / ??");
    }
}
