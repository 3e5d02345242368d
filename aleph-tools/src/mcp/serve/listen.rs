//! `subscriptions/listen` (2026-07-28): the change notifications a client without a
//! handshake subscribes to, from the moment its subscription is accepted.

use rmcp::ErrorData;
use rmcp::model::SubscriptionFilter;
use rmcp::service::SubscriptionContext;
use tokio::sync::{broadcast, watch};
use tokio_util::sync::CancellationToken;

use super::Session;
use super::resources::{ResourceEvent, pass_on_resource_events};
use crate::util::sync::lock;

/// What a `subscriptions/listen` stream hears from: the tool-change count when it was
/// accepted, and the resource events from then on.
pub(super) struct ListenStart {
    tools_at: u64,
    resources: broadcast::Receiver<ResourceEvent>,
}

/// The most accepted subscriptions waiting for their stream: more only come when
/// acknowledgments fail to send, and the oldest of those are dropped.
const MOST_LISTEN_STARTS: usize = 16;

impl Session {
    /// Where a subscription accepted now starts.
    pub(super) fn listen_start(&self) -> ListenStart {
        ListenStart {
            tools_at: *self.served.tools.watch_tools().borrow(),
            resources: self.served.resource_events.subscribe(),
        }
    }

    /// The subscription the server accepts of what the client asked for, its start kept for
    /// the stream that follows.
    pub(super) fn accept_subscription(&self, requested: &SubscriptionFilter) -> SubscriptionFilter {
        // Called before the subscription is acknowledged: changes from here on are the
        // client's to hear, even those made before `listen` starts watching.
        let start = self.listen_start();
        let mut starts = lock(&self.listen_starts);
        if starts.len() == MOST_LISTEN_STARTS {
            starts.pop_front();
        }
        starts.push_back(start);
        drop(starts);
        let mut accepted = SubscriptionFilter::new();
        accepted.tools_list_changed = requested.tools_list_changed;
        if !self.served.resources.is_empty() {
            accepted.resources_list_changed = requested.resources_list_changed;
            accepted
                .resource_subscriptions
                .clone_from(&requested.resource_subscriptions);
        }
        accepted
    }

    /// `subscriptions/listen`: the change notifications a client without a handshake
    /// subscribes to, until it or the server closes.
    pub(super) async fn listened(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        // Clients without a handshake (2026-07-28) subscribe instead.
        let ended = self.closed.child_token();
        let accepted = context.accepted();
        // rmcp calls `listen` as soon as the acknowledgment is sent: the oldest waiting
        // start is this stream's own, unless two streams of one session open at once.
        let start = lock(&self.listen_starts).pop_front();
        let ListenStart {
            tools_at,
            resources: resource_events,
        } = start.unwrap_or_else(|| self.listen_start());
        let resources = async {
            let uris = accepted
                .resource_subscriptions
                .as_deref()
                .unwrap_or_default();
            let list = accepted.resources_list_changed == Some(true);
            if uris.is_empty() && !list {
                return;
            }
            let wanted = |event: &ResourceEvent| match event {
                ResourceEvent::Updated(uri) => uris.contains(uri),
                ResourceEvent::ListChanged => list,
            };
            let sink = context.sink();
            let send = |event| async move {
                match event {
                    ResourceEvent::Updated(uri) => sink.notify_resource_updated(uri).await,
                    ResourceEvent::ListChanged => sink.notify_resource_list_changed().await,
                }
                .is_ok()
            };
            pass_on_resource_events(resource_events, &ended, wanted, send).await;
        };
        let tools = async {
            let mut changes = self.served.tools.watch_tools();
            if *changes.borrow_and_update() != tools_at
                && context.sink().notify_tool_list_changed().await.is_err()
            {
                return;
            }
            while next_change(&mut changes, &ended).await {
                if context.sink().notify_tool_list_changed().await.is_err() {
                    return;
                }
            }
        };
        tokio::select! {
            () = context.cancelled() => {}
            ((), ()) = async { tokio::join!(tools, resources) } => {}
        }
        Ok(())
    }
}

/// Waits for the next change to the tool set; false when the connection ended first.
pub(super) async fn next_change(
    changes: &mut watch::Receiver<u64>,
    closed: &CancellationToken,
) -> bool {
    tokio::select! {
        () = closed.cancelled() => false,
        outcome = changes.changed() => outcome.is_ok(),
    }
}
