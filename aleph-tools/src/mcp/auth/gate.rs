//! Serving [`McpAuth`]: the middleware in front of `/mcp` that checks each request's token
//! and keeps sessions to their identity, the `401` and `403` challenges, and the metadata
//! document's routes.

use std::fmt::Write as _;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures_util::FutureExt as _;
use serde_json::json;

use super::{AuthError, AuthRequest, McpAuth};
use crate::mcp::http::sessions::Ledger;

/// Where the metadata document is served, before the resource's path.
const METADATA_PATH: &str = "/.well-known/oauth-protected-resource";
/// The header naming a legacy streamable HTTP session.
const SESSION_HEADER: &str = "mcp-session-id";

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

/// What [`McpAuth`] needs while serving: the settings, and the sessions, which know the
/// identity that opened each.
pub(in crate::mcp) struct Gate {
    auth: McpAuth,
    /// The path MCP is served at on this server (`/mcp`).
    path: &'static str,
    sessions: Arc<Ledger>,
}

impl Gate {
    pub(in crate::mcp) fn new(
        auth: McpAuth,
        path: &'static str,
        sessions: Arc<Ledger>,
    ) -> Arc<Self> {
        Arc::new(Self {
            auth,
            path,
            sessions,
        })
    }

    /// Whether the metadata document is served.
    pub(in crate::mcp) fn publishes_metadata(&self) -> bool {
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
pub(in crate::mcp) async fn authenticate(
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
    let foreign = headers
        .get(SESSION_HEADER)
        .and_then(|value| value.to_str().ok())
        .and_then(|session| gate.sessions.owner_of(session))
        .is_some_and(|owner| *owner != *identity.subject());
    if foreign {
        return json_response(
            StatusCode::FORBIDDEN,
            &json!({
                "error": "forbidden",
                "error_description": "this MCP session was opened with another identity's token; open a session of your own",
            }),
        );
    }
    request.extensions_mut().insert(Arc::new(identity));
    next.run(request).await
}

/// Serves the metadata document.
async fn metadata(State(gate): State<Arc<Gate>>, headers: HeaderMap) -> Response {
    let resource = gate.resource(&headers);
    json_response(StatusCode::OK, &gate.auth.metadata(&resource))
}

/// `body` as a JSON response.
///
/// A refusal also closes the connection: the request's body was never read, so the
/// connection cannot carry another request, and a client that is not told so sends its
/// next one (the metadata document, after a `401`) on a connection about to close.
fn json_response(status: StatusCode, body: &serde_json::Value) -> Response {
    let mut response = (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response();
    if !status.is_success() {
        response
            .headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    response
}

/// The routes of the metadata document, at the well-known path alone and with any path
/// after it (where RFC 9728 puts the document of a resource with a path).
pub(in crate::mcp) fn metadata_routes(gate: Arc<Gate>) -> axum::Router {
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
    fn urls_are_split_into_origin_and_path() {
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
