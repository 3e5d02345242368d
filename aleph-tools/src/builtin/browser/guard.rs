//! Guarding a target the browser attached paused: its requests intercepted and held to the
//! host rules (or answered with the document a call gave), its dialogs dismissed, its
//! main frame's loads counted, and what it starts guarded the same way.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use base64::Engine as _;
use serde_json::{Value, json};
use tokio::sync::{mpsc, watch};

use super::cdp::Event;
use super::tabs::{DOCUMENT_URL, Loading, Running, Tab};

/// Sets a paused target up (requests intercepted, dialogs and loads followed, what it
/// starts attached the same way) and lets it run; its events are followed by a task of
/// their own.
pub(super) fn guard<'a>(
    running: &'a Arc<Running>,
    session: &'a str,
    tab: Option<(Arc<Tab>, watch::Sender<Loading>)>,
    events: mpsc::UnboundedReceiver<Event>,
) -> Pin<Box<dyn Future<Output = ()> + Send + 'a>> {
    Box::pin(async move {
        let connection = &running.process.connection;
        let owner = tab.as_ref().map(|(tab, _)| Arc::clone(tab));
        tokio::spawn(follow(
            Arc::downgrade(running),
            session.to_owned(),
            tab,
            events,
        ));
        let session = Some(session);
        let _ = connection
            .call(
                session,
                "Fetch.enable",
                json!({ "patterns": [{ "urlPattern": "*", "requestStage": "Request" }] }),
            )
            .await;
        if owner.is_some() {
            let _ = connection.call(session, "Page.enable", json!({})).await;
            // Its `targetCrashed` says when the page's renderer dies (the connection then
            // refuses the page's commands until it navigates).
            let _ = connection
                .call(session, "Inspector.enable", json!({}))
                .await;
        }
        let _ = connection
            .call(
                session,
                "Target.setAutoAttach",
                json!({ "autoAttach": true, "waitForDebuggerOnStart": true, "flatten": true }),
            )
            .await;
        let _ = connection
            .call(session, "Runtime.runIfWaitingForDebugger", json!({}))
            .await;
    })
}

/// Answers one target's events: each request is checked against the host rules before it
/// goes out, dialogs are dismissed, the main frame's loads counted, and frames and workers
/// it starts are guarded the same way.
async fn follow(
    running: std::sync::Weak<Running>,
    session: String,
    tab: Option<(Arc<Tab>, watch::Sender<Loading>)>,
    mut events: mpsc::UnboundedReceiver<Event>,
) {
    let owner = tab.as_ref().map(|(tab, _)| Arc::clone(tab));
    while let Some(event) = events.recv().await {
        let Some(running) = running.upgrade() else {
            return;
        };
        let connection = &running.process.connection;
        let params = &event.params;
        match event.method.as_str() {
            "Fetch.requestPaused" => {
                answer_request(&running, &session, owner.as_ref(), params).await;
            }
            "Page.javascriptDialogOpening" => {
                if let Some(tab) = &owner {
                    let message = params["message"].as_str().unwrap_or_default();
                    tab.lock().notes.push(format!(
                        "the page opened a {} dialog, which was dismissed: {}",
                        params["type"].as_str().unwrap_or("javascript"),
                        message.chars().take(200).collect::<String>()
                    ));
                }
                let connection = Arc::clone(&running.process.connection);
                let session = session.clone();
                tokio::spawn(async move {
                    let _ = connection
                        .call(
                            Some(&session),
                            "Page.handleJavaScriptDialog",
                            json!({ "accept": false }),
                        )
                        .await;
                });
            }
            "Page.frameStartedLoading" | "Page.frameStoppedLoading" => {
                if let Some((tab, loaded)) = &tab
                    && params["frameId"].as_str() == Some(tab.target.as_str())
                {
                    let started = event.method == "Page.frameStartedLoading";
                    loaded.send_modify(|loading| {
                        if started {
                            loading.started += 1;
                        } else {
                            loading.stopped += 1;
                        }
                        loading.busy = started;
                    });
                }
            }
            "Target.attachedToTarget" => {
                let (Some(child), kind) =
                    (params["sessionId"].as_str(), &params["targetInfo"]["type"])
                else {
                    continue;
                };
                tracing::trace!(kind = %kind, "guarding a target a page started");
                let events = connection.subscribe(child);
                let running = Arc::clone(&running);
                let child = child.to_owned();
                tokio::spawn(async move {
                    guard(&running, &child, None, events).await;
                });
            }

            _ => {}
        }
    }
    if let Some(running) = running.upgrade() {
        running.connection().unsubscribe(&session);
    }
}

/// Answers a request a target paused at: the document a call gave, when it is the request
/// for it; otherwise let go or failed by the host rules.
async fn answer_request(
    running: &Running,
    session: &str,
    owner: Option<&Arc<Tab>>,
    params: &Value,
) {
    let id = params["requestId"].clone();
    let url = params["request"]["url"].as_str().unwrap_or_default();
    // A document a call gave is answered here, once, and nothing else from its made-up
    // address.
    let given = owner
        .filter(|_| url == DOCUMENT_URL)
        .and_then(|tab| tab.lock().document.take());
    let connection = Arc::clone(&running.process.connection);
    let session = session.to_owned();
    if let Some(html) = given {
        tokio::spawn(async move {
            let body = base64::engine::general_purpose::STANDARD.encode(html);
            let answer = json!({
                "requestId": id,
                "responseCode": 200,
                "responseHeaders": [
                    { "name": "Content-Type", "value": "text/html; charset=utf-8" },
                ],
                "body": body,
            });
            let _ = connection
                .call(Some(&session), "Fetch.fulfillRequest", answer)
                .await;
        });
        return;
    }
    let (method, body) = match running.rules.check(url).await {
        Ok(()) => ("Fetch.continueRequest", json!({ "requestId": id })),
        Err(why) => {
            if let Some(tab) = owner {
                tab.lock().refused = Some((url.to_owned(), why));
            }
            (
                "Fetch.failRequest",
                json!({ "requestId": id, "errorReason": "BlockedByClient" }),
            )
        }
    };
    tokio::spawn(async move {
        let _ = connection.call(Some(&session), method, body).await;
    });
}
