//! The management API over HTTP: JSON-RPC 2.0 at `POST /admin`, answered only for a caller
//! whose identity holds the admin scope.

use std::sync::Arc;

use axum::Extension;
use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, FromRequest as _, Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};

use super::PluginAdmin;
use crate::context::Identity;

/// Where [`PluginAdmin::router`] answers.
pub const ADMIN_PATH: &str = "/admin";

/// The largest request read, in bytes.
const MAX_BODY: usize = 1 << 20;

/// The most requests one batch may hold.
const MAX_BATCH: usize = 32;

/// The JSON-RPC error codes of the envelope.
const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;
/// The caller may not use the API.
const FORBIDDEN: i64 = -32003;

impl PluginAdmin {
    /// An axum [`Router`] answering JSON-RPC 2.0 at `POST /admin` ([`ADMIN_PATH`]): one
    /// request, a notification (run, answered `204`) or a batch (answered in order). Mount
    /// it beside `/mcp` with [`McpServer::with_router`](crate::mcp::McpServer::with_router),
    /// or in any axum application whose authentication puts an `Arc<Identity>` in the
    /// request's extensions, as `McpServer::with_auth` does.
    ///
    /// A request without an identity gets `401`, one whose identity lacks the
    /// [scope](Self::with_scope) `403` with `error="insufficient_scope"`; both bodies say
    /// what to fix; the body of a refused request is not read. Bodies over 1 MiB get `413`,
    /// batches of more than 32 requests an error. Every call and every refusal is logged at
    /// `info`, with the caller's subject and the method when there are.
    ///
    /// ```text
    /// POST /admin
    /// Authorization: Bearer …
    /// {"jsonrpc": "2.0", "id": 1, "method": "plugins.reload", "params": {"id": "weather"}}
    /// ```
    pub fn router(&self) -> Router {
        Router::new()
            .route(ADMIN_PATH, post(serve))
            .layer(DefaultBodyLimit::max(MAX_BODY))
            .with_state(self.clone())
    }
}

async fn serve(
    State(admin): State<PluginAdmin>,
    identity: Option<Extension<Arc<Identity>>>,
    request: Request,
) -> Response {
    let scope = admin.scope();
    let Some(Extension(identity)) = identity else {
        tracing::info!("management call refused: no identity");
        let message = format!(
            "the management API answers only callers the server authenticated: give the server bearer tokens (`McpServer::with_auth`, or `[[server.tokens]]` for the command) and send one whose scopes include `{scope}`"
        );
        return refuse(StatusCode::UNAUTHORIZED, "Bearer", &message);
    };
    if !identity.has_scope(scope) {
        tracing::info!(
            subject = identity.subject(),
            "management call refused: no `{scope}` scope"
        );
        let message = format!(
            "the bearer token of `{}` lacks the scope `{scope}` the management API needs",
            identity.subject()
        );
        let challenge = format!("Bearer error=\"insufficient_scope\", scope=\"{scope}\"");
        return refuse(StatusCode::FORBIDDEN, &challenge, &message);
    }
    // The body is read only for a caller who may call.
    let body = match Bytes::from_request(request, &()).await {
        Ok(body) => body,
        Err(rejection) => {
            let message = format!(
                "the request cannot be read ({rejection}); a request may hold at most {} KiB",
                MAX_BODY >> 10
            );
            let answer = failure(&Value::Null, INVALID_REQUEST, &message);
            return json_response(rejection.status(), &answer);
        }
    };
    let message = match serde_json::from_slice::<Value>(&body) {
        Ok(message) => message,
        Err(error) => {
            let answer = failure(
                &Value::Null,
                PARSE_ERROR,
                &format!("the body is not JSON: {error}"),
            );
            return json_response(StatusCode::OK, &answer);
        }
    };
    let subject = identity.subject();
    let answer = match message {
        Value::Array(batch) if batch.is_empty() => Some(failure(
            &Value::Null,
            INVALID_REQUEST,
            "the batch is empty; send at least one request",
        )),
        Value::Array(batch) if batch.len() > MAX_BATCH => Some(failure(
            &Value::Null,
            INVALID_REQUEST,
            &format!(
                "the batch holds {} requests; send at most {MAX_BATCH} in one",
                batch.len()
            ),
        )),
        Value::Array(batch) => {
            let mut answers = Vec::new();
            for message in batch {
                answers.extend(one(&admin, message, subject).await);
            }
            (!answers.is_empty()).then_some(Value::Array(answers))
        }
        message => one(&admin, message, subject).await,
    };
    match answer {
        Some(answer) => json_response(StatusCode::OK, &answer),
        None => StatusCode::NO_CONTENT.into_response(),
    }
}

/// Runs one request, or notification (no `id`: nothing is answered).
async fn one(admin: &PluginAdmin, message: Value, subject: &str) -> Option<Value> {
    let Value::Object(mut message) = message else {
        return Some(failure(
            &Value::Null,
            INVALID_REQUEST,
            "a request is an object with `jsonrpc`, `method` and `id`",
        ));
    };
    let id = message.remove("id");
    let answer_id = id.clone().unwrap_or(Value::Null);
    if !matches!(answer_id, Value::Null | Value::String(_) | Value::Number(_)) {
        return Some(failure(
            &Value::Null,
            INVALID_REQUEST,
            "`id` must be a string or a number",
        ));
    }
    if message.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Some(failure(
            &answer_id,
            INVALID_REQUEST,
            "`jsonrpc` must be \"2.0\"",
        ));
    }
    let Some(Value::String(method)) = message.remove("method") else {
        return Some(failure(
            &answer_id,
            INVALID_REQUEST,
            "`method` must be a string, such as \"plugins.list\"",
        ));
    };
    let params = message.remove("params").unwrap_or(Value::Null);
    let result = admin.call(&method, params).await;
    match &result {
        Ok(_) => tracing::info!(subject, %method, "management call"),
        Err(error) => tracing::info!(subject, %method, %error, "management call failed"),
    }
    id?;
    Some(match result {
        Ok(result) => json!({ "jsonrpc": "2.0", "id": answer_id, "result": result }),
        Err(error) => failure(&answer_id, error.code(), &error.to_string()),
    })
}

fn failure(id: &Value, code: i64, message: &str) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": message } })
}

/// A refusal before any method runs: the status, the challenge, and a JSON-RPC error that
/// says what to fix.
fn refuse(status: StatusCode, challenge: &str, message: &str) -> Response {
    let mut response = json_response(status, &failure(&Value::Null, FORBIDDEN, message));
    if let Ok(value) = HeaderValue::from_str(challenge) {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, value);
    }
    response
}

fn json_response(status: StatusCode, body: &Value) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}
