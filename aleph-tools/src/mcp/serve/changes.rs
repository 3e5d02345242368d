//! The server's changes for the clients of HTTP sessions, awake or asleep: each client
//! holding its session's `GET` stream open hears of a change to the tools, of a change to
//! the resources and of an update of a resource it subscribed to. A session's service does
//! not tell them itself (see `Remembered::told_apart`), so a session falling asleep or
//! waking loses none of them.

use std::sync::Arc;

use rmcp::model::{
    ResourceListChangedNotification, ResourceUpdatedNotification, ResourceUpdatedNotificationParam,
    ServerJsonRpcMessage, ServerNotification, ToolListChangedNotification,
};
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use super::McpServer;
use super::resources::ResourceEvent;
use crate::mcp::http::sessions::{Ledger, Notice};

impl McpServer {
    /// Passes each change on to the `GET` streams of `ledger`'s sessions, until `stop`.
    pub(in crate::mcp) fn tell_listeners(
        &self,
        ledger: Arc<Ledger>,
        stop: CancellationToken,
    ) -> impl Future<Output = ()> + Send + 'static {
        let mut tools = self.served.tools.watch_tools();
        tools.mark_unchanged();
        let mut resources =
            (!self.served.resources.is_empty()).then(|| self.served.resource_events.subscribe());
        async move {
            let tools_changed = Notice::new("tools", notification(tool_list_changed()));
            let resources_changed = Notice::new("resources", notification(resource_list_changed()));
            loop {
                tokio::select! {
                    () = stop.cancelled() => return,
                    changed = tools.changed() => {
                        if changed.is_err() {
                            return;
                        }
                        ledger.tell_listeners(&tools_changed, |_| true);
                    }
                    event = next_event(resources.as_mut()) => match event {
                        Ok(ResourceEvent::Updated(uri)) => {
                            let updated = ServerNotification::ResourceUpdatedNotification(
                                ResourceUpdatedNotification::new(
                                    ResourceUpdatedNotificationParam::new(uri.clone()),
                                ),
                            );
                            let notice = Notice::new(format!("updated {uri}"), notification(updated));
                            ledger.tell_listeners(&notice, |remembered| remembered.subscribed_to(&uri));
                        }
                        Ok(ResourceEvent::ListChanged) => {
                            ledger.tell_listeners(&resources_changed, |_| true);
                        }
                        Err(broadcast::error::RecvError::Lagged(missed)) => {
                            tracing::warn!("MCP sessions' GET streams missed {missed} resource notices");
                        }
                        Err(broadcast::error::RecvError::Closed) => resources = None,
                    },
                }
            }
        }
    }
}

/// The next resource event, or never when there are no resources.
async fn next_event(
    events: Option<&mut broadcast::Receiver<ResourceEvent>>,
) -> Result<ResourceEvent, broadcast::error::RecvError> {
    match events {
        Some(events) => events.recv().await,
        None => std::future::pending().await,
    }
}

fn notification(notification: ServerNotification) -> ServerJsonRpcMessage {
    ServerJsonRpcMessage::notification(notification)
}

fn tool_list_changed() -> ServerNotification {
    ServerNotification::ToolListChangedNotification(ToolListChangedNotification::default())
}

fn resource_list_changed() -> ServerNotification {
    ServerNotification::ResourceListChangedNotification(ResourceListChangedNotification::default())
}
