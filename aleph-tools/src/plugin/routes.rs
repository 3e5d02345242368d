//! `[[http_routes]]`: an axum [`Router`] serving each running plugin's HTTP routes under
//! `/plugins/{id}/…`, through the same runtime-neutral handler call as hooks and commands.
//!
//! A plugin is untrusted: what it is given leaves out the client's credentials (the
//! server's bearer token, cookies, the MCP session), and what it answers reaches the client
//! only as a well-formed response; a failure is a 502 that says what kind of failure it was,
//! with the plugin's own words in the server's log, never in the answer.

use std::collections::BTreeMap;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde_json::{Map, Value, json};

use super::code::Purpose;
use super::manager::PluginManager;
use super::manifest::HttpRouteSection;

impl PluginManager {
    /// An axum [`Router`] serving every running plugin's `[[http_routes]]` under
    /// `/plugins/{id}/…`: a route `POST /webhooks/github` of plugin `hub` answers at
    /// `POST /plugins/hub/webhooks/github`. Mount it in any axum application, or beside `/mcp`
    /// with [`McpServer::with_router`](crate::mcp::McpServer::with_router).
    ///
    /// Routes follow the plugins: a plugin loaded, reloaded, disabled or unloaded changes
    /// what the router serves at once. A path segment written `{name}` in the manifest
    /// matches any one segment and reaches the handler in `params`; the first route in
    /// manifest order that matches wins.
    ///
    /// The handler gets the request as JSON (`method`, `path`, `route`, `params`, `query`,
    /// `headers`, `body` or `body_base64`, and `json` when the body is JSON) and answers
    /// `{ "status": 200, "headers": {…}, "body": … }`. The headers it gets leave out the
    /// client's credentials: `Authorization` (which holds the server's own bearer token),
    /// `Proxy-Authorization`, `Cookie` and `Mcp-Session-Id`, so a plugin cannot replay
    /// them. Bodies over `[plugins.routes] max_body` are refused with 413; a handler that
    /// fails, times out or answers in another shape is a 502 naming the plugin, the route
    /// and the kind of failure, without the handler's answer or error text (those go to
    /// the log, at `warn`).
    pub fn router(&self) -> Router {
        Router::new()
            .route("/plugins/{id}", any(serve))
            .route("/plugins/{id}/", any(serve))
            .route("/plugins/{id}/{*path}", any(serve))
            .with_state(self.clone())
    }
}

async fn serve(
    State(manager): State<PluginManager>,
    Path(segments): Path<BTreeMap<String, String>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let id = segments.get("id").map_or("", String::as_str);
    answer(&manager, id, method, &uri, &headers, body).await
}

/// The path under `/plugins/{id}` as the client sent it (still percent-encoded: parameters
/// are decoded once, when they are matched).
fn plugin_path(uri: &Uri) -> String {
    let rest = uri.path().trim_start_matches('/');
    let rest = rest.strip_prefix("plugins/").unwrap_or(rest);
    match rest.split_once('/') {
        Some((_, path)) => format!("/{path}"),
        None => "/".to_owned(),
    }
}

async fn answer(
    manager: &PluginManager,
    id: &str,
    method: Method,
    uri: &Uri,
    headers: &HeaderMap,
    body: Body,
) -> Response {
    let path = &plugin_path(uri);
    let Some((code, manifest)) = manager.serving_code(id) else {
        return plain(
            StatusCode::NOT_FOUND,
            format!("no plugin `{id}` is running"),
        );
    };
    let routes = &manifest.manifest.http_routes;
    let mut allowed = Vec::new();
    let mut found = None;
    for route in routes {
        if let Some(params) = match_path(&route.path, path) {
            if route.method.eq_ignore_ascii_case(method.as_str()) {
                found = Some((route, params));
                break;
            }
            allowed.push(route.method.clone());
        }
    }
    let Some((route, params)) = found else {
        if allowed.is_empty() {
            return plain(
                StatusCode::NOT_FOUND,
                format!("plugin `{id}` has no route for `{path}`"),
            );
        }
        let mut response = plain(
            StatusCode::METHOD_NOT_ALLOWED,
            format!(
                "plugin `{id}` answers `{path}` only to {}",
                allowed.join(", ")
            ),
        );
        if let Ok(value) = HeaderValue::from_str(&allowed.join(", ")) {
            response.headers_mut().insert(header::ALLOW, value);
        }
        return response;
    };
    let limit = usize::try_from(manager.config().routes.max_body.bytes()).unwrap_or(usize::MAX);
    let Ok(bytes) = axum::body::to_bytes(body, limit).await else {
        return plain(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!(
                "the body is larger than the {} a plugin route accepts",
                manager.config().routes.max_body
            ),
        );
    };
    let request = request_json(&method, path, route, params, uri, headers, &bytes);
    let what = format!("plugin `{id}`, route `{} {}`", route.method, route.path);
    match code
        .invoke(&route.handler, Purpose::Route, &request)
        .await
    {
        Ok(answer) => response_from(&answer).unwrap_or_else(|problem| {
            tracing::warn!("{what} answered {problem}: `{}`", short(&answer));
            plain(
                StatusCode::BAD_GATEWAY,
                format!("{what} answered {problem}; a route handler returns {{ \"status\": 200, \"headers\": {{…}}, \"body\": … }}"),
            )
        }),
        Err(message) => {
            tracing::warn!("{what} failed: {message}");
            plain(
                StatusCode::BAD_GATEWAY,
                format!("{what} failed (it threw, crashed or did not answer in time); the server's log says why"),
            )
        }
    }
}

/// Request headers a plugin is never given: the client's credentials for this server.
const CREDENTIALS: [&str; 4] = [
    "authorization",
    "proxy-authorization",
    "cookie",
    "mcp-session-id",
];

/// The parameters of `path` under the manifest's `pattern`, or `None` when it does not match.
fn match_path(pattern: &str, path: &str) -> Option<Map<String, Value>> {
    let mut params = Map::new();
    let mut wanted = pattern.trim_matches('/').split('/');
    let mut given = path.trim_matches('/').split('/');
    loop {
        match (wanted.next(), given.next()) {
            (None, None) => return Some(params),
            (Some(want), Some(got)) => {
                match want.strip_prefix('{').and_then(|w| w.strip_suffix('}')) {
                    Some(name) if !got.is_empty() => {
                        let value = percent_decode(got);
                        params.insert(name.to_owned(), Value::String(value));
                    }
                    None if want == got => {}
                    _ => return None,
                }
            }
            _ => return None,
        }
    }
}

fn percent_decode(segment: &str) -> String {
    form_urlencoded::parse(format!("x={}", segment.replace('+', "%2B")).as_bytes())
        .next()
        .map_or_else(|| segment.to_owned(), |(_, value)| value.into_owned())
}

fn request_json(
    method: &Method,
    path: &str,
    route: &HttpRouteSection,
    params: Map<String, Value>,
    uri: &Uri,
    headers: &HeaderMap,
    body: &Bytes,
) -> Value {
    let raw_query = uri.query().unwrap_or_default();
    let mut query = Map::new();
    for (key, value) in form_urlencoded::parse(raw_query.as_bytes()) {
        query
            .entry(key.into_owned())
            .or_insert(Value::String(value.into_owned()));
    }
    let mut names: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (name, value) in headers {
        if CREDENTIALS.contains(&name.as_str()) {
            continue;
        }
        names
            .entry(name.as_str().to_owned())
            .or_default()
            .push(String::from_utf8_lossy(value.as_bytes()).into_owned());
    }
    let headers_json: Map<String, Value> = names
        .into_iter()
        .map(|(name, values)| (name, Value::String(values.join(", "))))
        .collect();
    let mut request = json!({
        "method": method.as_str(),
        "path": path,
        "route": route.path,
        "params": Value::Object(params),
        "query": query,
        "raw_query": raw_query,
        "headers": headers_json,
    });
    match std::str::from_utf8(body) {
        Ok(text) => {
            request["body"] = Value::String(text.to_owned());
            let is_json = headers
                .get(header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .is_some_and(|v| v.contains("json"));
            if is_json && let Ok(parsed) = serde_json::from_str::<Value>(text) {
                request["json"] = parsed;
            }
        }
        Err(_) => request["body_base64"] = Value::String(BASE64.encode(body)),
    }
    request
}

/// The HTTP response a handler's answer describes, or what is wrong with the answer.
fn response_from(answer: &Value) -> Result<Response, String> {
    let Some(fields) = answer.as_object() else {
        return Err(format!("{}, not an object", kind(answer)));
    };
    let status = fields
        .get("status")
        .and_then(Value::as_u64)
        .and_then(|s| u16::try_from(s).ok())
        .and_then(|s| StatusCode::from_u16(s).ok())
        .filter(|s| (100..600).contains(&s.as_u16()))
        .ok_or_else(|| "without a `status` from 100 to 599".to_owned())?;
    let mut headers = HeaderMap::new();
    if let Some(given) = fields.get("headers") {
        let Some(given) = given.as_object() else {
            return Err("`headers` that are not an object of strings".into());
        };
        for (name, value) in given {
            let value = value
                .as_str()
                .ok_or("a header whose value is not a string")?;
            let name = HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| "a header name that is not one")?;
            let value =
                HeaderValue::from_str(value).map_err(|_| "a header value that cannot be sent")?;
            headers.append(name, value);
        }
    }
    let (bytes, content_type) = match (fields.get("body_base64"), fields.get("body")) {
        (Some(Value::String(encoded)), _) => (
            BASE64
                .decode(encoded)
                .map_err(|_| "a `body_base64` that is not base64")?,
            "application/octet-stream",
        ),
        (Some(_), _) => return Err("a `body_base64` that is not a string".into()),
        (None, None | Some(Value::Null)) => (Vec::new(), ""),
        (None, Some(Value::String(text))) => {
            (text.clone().into_bytes(), "text/plain; charset=utf-8")
        }
        (None, Some(value)) => (
            serde_json::to_vec(value).map_err(|_| "a body that cannot be sent")?,
            "application/json",
        ),
    };
    if !content_type.is_empty() && !headers.contains_key(header::CONTENT_TYPE) {
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    }
    Ok((status, headers, bytes).into_response())
}

fn plain(status: StatusCode, message: String) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        message,
    )
        .into_response()
}

/// What kind of JSON value `value` is, for a message that must not hold the value.
pub(super) fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn short(value: &Value) -> String {
    let text = value.to_string();
    match text.char_indices().nth(80) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_match_their_patterns() {
        assert_eq!(match_path("/status", "/status"), Some(Map::new()));
        assert_eq!(match_path("/status", "/status/"), Some(Map::new()));
        assert_eq!(match_path("/status", "/other"), None);
        assert_eq!(match_path("/", "/"), Some(Map::new()));
        let params = match_path("/items/{id}/tags/{tag}", "/items/42/tags/a%20b").unwrap();
        assert_eq!(params["id"], "42");
        assert_eq!(params["tag"], "a b");
        assert_eq!(match_path("/items/{id}", "/items"), None);
        assert_eq!(match_path("/items/{id}", "/items/1/2"), None);
        assert_eq!(match_path("/items/{id}", "/items//"), None);
        assert_eq!(percent_decode("a+b"), "a+b");
        assert_eq!(percent_decode("%2520"), "%20");
        let uri = |text: &str| text.parse::<Uri>().unwrap();
        assert_eq!(plugin_path(&uri("/plugins/p")), "/");
        assert_eq!(plugin_path(&uri("/plugins/p/")), "/");
        assert_eq!(plugin_path(&uri("/plugins/p/a/b%20c?x=1")), "/a/b%20c");
    }

    #[test]
    fn credentials_never_reach_the_plugin() {
        let mut headers = HeaderMap::new();
        for (name, value) in [
            ("authorization", "Bearer t0k3n"),
            ("proxy-authorization", "Basic cHJveHk="),
            ("cookie", "session=s3cr3t"),
            ("mcp-session-id", "abc"),
            ("x-request-id", "r1"),
            ("content-type", "text/plain"),
        ] {
            headers.append(name, HeaderValue::from_static(value));
        }
        let route: HttpRouteSection =
            serde_json::from_value(json!({ "method": "GET", "path": "/", "handler": "h" }))
                .unwrap();
        let uri = "/plugins/p/".parse::<Uri>().unwrap();
        let request = request_json(
            &Method::GET,
            "/",
            &route,
            Map::new(),
            &uri,
            &headers,
            &Bytes::new(),
        );
        assert_eq!(
            request["headers"],
            json!({ "x-request-id": "r1", "content-type": "text/plain" })
        );
    }

    #[test]
    fn answers_become_responses() {
        let response = response_from(&json!({ "status": 201, "body": { "ok": true } })).unwrap();
        assert_eq!(response.status(), StatusCode::CREATED);
        assert_eq!(response.headers()[header::CONTENT_TYPE], "application/json");
        let response = response_from(
            &json!({ "status": 200, "headers": { "content-type": "text/html" }, "body": "<p>" }),
        )
        .unwrap();
        assert_eq!(response.headers()[header::CONTENT_TYPE], "text/html");
        for (answer, problem) in [
            (json!("secret"), "a string, not an object"),
            (json!({ "body": 1 }), "without a `status`"),
            (json!({ "status": 99 }), "without a `status`"),
            (json!({ "status": 200, "headers": [] }), "`headers`"),
            (
                json!({ "status": 200, "headers": { "secret name": "x" } }),
                "a header name that is not one",
            ),
            (
                json!({ "status": 200, "headers": { "secret": 1 } }),
                "not a string",
            ),
            (
                json!({ "status": 200, "headers": { "x": "secret\n" } }),
                "a header value that cannot be sent",
            ),
            (
                json!({ "status": 200, "body_base64": "secret*" }),
                "not base64",
            ),
        ] {
            let error = response_from(&answer).unwrap_err();
            assert!(error.contains(problem), "{answer}: {error}");
            assert!(!error.contains("secret"), "{answer}: {error}");
        }
    }
}
