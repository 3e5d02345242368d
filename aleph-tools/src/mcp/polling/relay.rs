//! Questions asked across replicas: a tool in a session's call asks the client (an
//! elicitation, a sampling request), and the client's answer may land on another replica.
//!
//! While sessions are shared, each request the server sends a client goes out with an id
//! naming the process that sent it (`{process}.{number}`). The answer comes back with that
//! id: the process that asked takes it as its own number; any other process relays it
//! through the [`SessionStore`] to the one that asked, which looks for answers relayed to it
//! a few times a second and hands them to the session's service.

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{ClientJsonRpcMessage, NumberOrString, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::session::{ServerSseMessage, SessionId};

use crate::mcp::store::SessionStore;

/// How often a process looks for answers relayed to it.
pub(super) const LOOK_EVERY: Duration = Duration::from_millis(100);

/// The most relayed answers taken at one look.
pub(super) const TAKE_AT_MOST: usize = 64;

/// `event` with the id of the request it carries, if any, naming process `process`.
pub(super) fn tag_request(mut event: ServerSseMessage, process: &str) -> ServerSseMessage {
    if let Some(ServerJsonRpcMessage::Request(request)) = event.message.as_deref()
        && let NumberOrString::Number(number) = request.id
    {
        let mut request = request.clone();
        request.id = NumberOrString::String(Arc::from(format!("{process}.{number}")));
        event.message = Some(Arc::new(ServerJsonRpcMessage::Request(request)));
    }
    event
}

/// Where a client's message goes.
pub(super) enum Route {
    /// To this process's session, as it is (its id back to the number this process gave).
    Here(ClientJsonRpcMessage),
    /// To the process named, which asked the question it answers.
    Relay(String, ClientJsonRpcMessage),
}

/// Where `message` goes, for process `process`: an answer to a question another process
/// asked is relayed there.
pub(super) fn route(mut message: ClientJsonRpcMessage, process: &str) -> Route {
    let id = match &mut message {
        ClientJsonRpcMessage::Response(response) => Some(&mut response.id),
        ClientJsonRpcMessage::Error(error) => error.id.as_mut(),
        _ => None,
    };
    let Some(id) = id else {
        return Route::Here(message);
    };
    let NumberOrString::String(text) = &*id else {
        return Route::Here(message);
    };
    let Some((asker, number)) = text.split_once('.') else {
        return Route::Here(message);
    };
    let Ok(number) = number.parse::<i64>() else {
        return Route::Here(message);
    };
    if asker == process {
        *id = NumberOrString::Number(number);
        return Route::Here(message);
    }
    if asker.len() == process.len() && asker.bytes().all(|b| b.is_ascii_hexdigit()) {
        let asker = asker.to_owned();
        return Route::Relay(asker, message);
    }
    Route::Here(message)
}

/// Relays `message` of session `session` to process `asker`, as JSON.
pub(super) async fn relay(
    store: &dyn SessionStore,
    asker: &str,
    session: &SessionId,
    message: &ClientJsonRpcMessage,
) {
    let Ok(text) = serde_json::to_string(message) else {
        return;
    };
    if let Err(error) = store.relay(asker, session, &text).await {
        tracing::warn!(%error, "an answer to another replica's question could not be relayed");
    }
}

/// A relayed answer read back, with its id given back to this process's number; `None`
/// when it is not one.
pub(super) fn relayed(text: &str, process: &str) -> Option<ClientJsonRpcMessage> {
    let message: ClientJsonRpcMessage = serde_json::from_str(text).ok()?;
    match route(message, process) {
        Route::Here(message) => Some(message),
        Route::Relay(..) => None,
    }
}
