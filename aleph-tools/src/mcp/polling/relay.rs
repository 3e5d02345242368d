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

use rmcp::model::{ClientJsonRpcMessage, NumberOrString, ServerJsonRpcMessage, ServerNotification};
use rmcp::transport::streamable_http_server::session::{ServerSseMessage, SessionId};

use crate::mcp::store::SessionStore;

/// How often a process looks for answers relayed to it.
pub(super) const LOOK_EVERY: Duration = Duration::from_millis(100);

/// How long a process is known to take answers after it last looked: other processes relay
/// to it only meanwhile.
pub(super) const KNOWN_FOR: Duration = Duration::from_secs(10);

/// The most relayed answers taken at one look: as many as the store keeps for a process, so
/// that a client flooding its own session's answers cannot push others' out unread between
/// two looks unless it sends that many in a tenth of a second.
pub(super) const TAKE_AT_MOST: usize = 1024;

/// The largest answer relayed to another process.
const MOST_RELAYED: usize = 1024 * 1024;

/// `event` with the id of the request it carries, or of the request a cancellation names,
/// naming process `process`.
pub(super) fn tag_request(mut event: ServerSseMessage, process: &str) -> ServerSseMessage {
    let tagged = |number: i64| NumberOrString::String(Arc::from(format!("{process}.{number}")));
    match event.message.as_deref() {
        Some(ServerJsonRpcMessage::Request(request)) => {
            if let NumberOrString::Number(number) = request.id {
                let mut request = request.clone();
                request.id = tagged(number);
                event.message = Some(Arc::new(ServerJsonRpcMessage::Request(request)));
            }
        }
        Some(ServerJsonRpcMessage::Notification(notification)) => {
            if let ServerNotification::CancelledNotification(cancelled) = &notification.notification
                && let Some(NumberOrString::Number(number)) = cancelled.params.request_id
            {
                let mut notification = notification.clone();
                if let ServerNotification::CancelledNotification(cancelled) =
                    &mut notification.notification
                {
                    cancelled.params.request_id = Some(tagged(number));
                }
                event.message = Some(Arc::new(ServerJsonRpcMessage::Notification(notification)));
            }
        }
        _ => {}
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

/// Relays `message` of session `session` to process `asker`, as JSON; dropped when it is
/// larger than [`MOST_RELAYED`] or `asker` takes no answers.
pub(super) async fn relay(
    store: &dyn SessionStore,
    asker: &str,
    session: &SessionId,
    message: &ClientJsonRpcMessage,
) {
    let Ok(text) = serde_json::to_string(message) else {
        return;
    };
    if text.len() > MOST_RELAYED {
        tracing::warn!(
            bytes = text.len(),
            "an answer to another replica's question is too large to relay; dropped"
        );
        return;
    }
    match store.relay(asker, session, &text).await {
        Ok(true) => {}
        Ok(false) => tracing::debug!(%asker, "an answer names a process that takes none; dropped"),
        Err(error) => {
            tracing::warn!(%error, "an answer to another replica's question could not be relayed");
        }
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const HERE: &str = "00112233aabbccdd";

    fn answer(id: &serde_json::Value) -> ClientJsonRpcMessage {
        serde_json::from_value(json!({ "jsonrpc": "2.0", "id": id, "result": {} })).unwrap()
    }

    fn id_of(message: &ClientJsonRpcMessage) -> serde_json::Value {
        serde_json::to_value(message).unwrap()["id"].clone()
    }

    #[test]
    fn requests_and_cancellations_name_this_process_and_answers_come_home() {
        let request: ServerJsonRpcMessage = serde_json::from_value(json!({
            "jsonrpc": "2.0", "id": 7, "method": "elicitation/create",
            "params": { "message": "Who?", "requestedSchema": { "type": "object", "properties": {} } }
        }))
        .unwrap();
        let tagged = tag_request(ServerSseMessage::from_message(request), HERE);
        let sent = serde_json::to_value(tagged.message.as_deref().unwrap()).unwrap();
        assert_eq!(sent["id"], format!("{HERE}.7"));

        let cancelled: ServerJsonRpcMessage = serde_json::from_value(json!({
            "jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": { "requestId": 7, "reason": "timed out" }
        }))
        .unwrap();
        let tagged = tag_request(ServerSseMessage::from_message(cancelled), HERE);
        let sent = serde_json::to_value(tagged.message.as_deref().unwrap()).unwrap();
        assert_eq!(sent["params"]["requestId"], format!("{HERE}.7"));

        match route(answer(&json!(format!("{HERE}.7"))), HERE) {
            Route::Here(message) => assert_eq!(id_of(&message), 7),
            Route::Relay(..) => panic!("its own answer is relayed"),
        }
    }

    #[test]
    fn answers_to_others_are_relayed_and_anything_else_stays_as_it_came() {
        let other = "ffeeddccbbaa9988";
        match route(answer(&json!(format!("{other}.3"))), HERE) {
            Route::Relay(process, message) => {
                assert_eq!(process, other);
                assert_eq!(id_of(&message), format!("{other}.3"));
            }
            Route::Here(_) => panic!("another's answer stays here"),
        }
        for id in [
            json!(3),
            json!("plain"),
            json!("short.3"),
            json!(format!("{other}.x")),
            json!("../../../../../../x.3"),
            json!(format!("{other}z.3")),
        ] {
            match route(answer(&id), HERE) {
                Route::Here(message) => assert_eq!(id_of(&message), id),
                Route::Relay(..) => panic!("{id} is relayed"),
            }
        }
    }
}
