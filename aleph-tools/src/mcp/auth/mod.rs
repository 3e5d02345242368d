//! Bearer-token auth for MCP over HTTP: the [`Authorizer`] that checks a token, the
//! [`StaticTokens`] one, and [`McpAuth`], which says what the protected-resource metadata
//! document (RFC 9728) tells clients.

mod gate;

use std::collections::BTreeSet;
use std::fmt;
use std::future::Future;
use std::sync::Arc;

use axum::http::HeaderMap;
use serde_json::json;
use subtle::ConstantTimeEq;

pub(in crate::mcp) use self::gate::{Gate, authenticate, metadata_routes};
use super::McpError;
use crate::context::Identity;
use crate::tool::BoxFuture;

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
            .collect::<BTreeSet<_>>()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_checked() {
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
    }
}
