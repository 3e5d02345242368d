//! The resource side of a session: listing and reading what the sources serve, and passing
//! changes on to the clients that asked to hear them.

use std::future::Future;
use std::sync::Arc;

use rmcp::model::{
    ListResourceTemplatesResult, ListResourcesResult, ReadResourceResult,
    ResourceUpdatedNotificationParam,
};
use rmcp::{ErrorData, Peer, RoleServer};
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use super::Session;
use crate::mcp::convert::{contents_to_mcp, resource_to_mcp, template_to_mcp};
use crate::mcp::resources::{McpResource, McpResourceTemplate};
use crate::util::sync::lock;

/// How many resource events a slow session may fall behind by before it misses some.
pub(super) const RESOURCE_EVENTS: usize = 256;

/// The most resources one session may be subscribed to at once. A template matches any
/// URI of its form, so without a cap a client could fill the session's record (kept while
/// the session sleeps) with URIs of its own making.
const MAX_SUBSCRIPTIONS: usize = 1024;

/// The most bytes of URI a session's subscriptions may hold together.
const MAX_SUBSCRIBED_BYTES: usize = 64 * 1024;

/// A change to the resources, for the sessions to pass on.
#[derive(Debug, Clone)]
pub(super) enum ResourceEvent {
    /// What the resource at this URI reads has changed.
    Updated(String),
    /// The list of resources or templates has changed.
    ListChanged,
}

impl Session {
    /// Every fixed resource, of two with the same URI the first source's, and every
    /// template, in the order given.
    fn all_resources(&self) -> (Vec<McpResource>, Vec<McpResourceTemplate>) {
        let mut resources: Vec<McpResource> = Vec::new();
        let mut templates = Vec::new();
        for source in self.served.resources.iter() {
            for resource in source.resources() {
                if !resources.iter().any(|seen| seen.uri == resource.uri) {
                    resources.push(resource);
                }
            }
            templates.extend(source.templates());
        }
        (resources, templates)
    }

    /// The error for a URI no resource has, with the closest fixed URIs.
    fn unknown_resource(&self, uri: &str) -> ErrorData {
        let (resources, _) = self.all_resources();
        let close = crate::util::names::suggestions(uri, resources.iter().map(McpResource::uri));
        ErrorData::resource_not_found(
            format!(
                "no resource has the URI `{uri}`{}",
                crate::error::DidYouMean(&close)
            ),
            Some(serde_json::json!({ "uri": uri })),
        )
    }

    /// The `resources/list` answer.
    pub(super) fn listed_resources(&self) -> ListResourcesResult {
        let (resources, _) = self.all_resources();
        let listed = listable(&resources, resource_to_mcp, McpResource::uri);
        ListResourcesResult::with_all_items(listed).with_ttl_ms(0)
    }

    /// The `resources/templates/list` answer.
    pub(super) fn listed_templates(&self) -> ListResourceTemplatesResult {
        let (_, templates) = self.all_resources();
        let listed = listable(
            &templates,
            template_to_mcp,
            McpResourceTemplate::uri_template,
        );
        ListResourceTemplatesResult::with_all_items(listed).with_ttl_ms(0)
    }

    /// Reads `uri`: from the fixed resource with that URI, else the first template that
    /// matches it.
    pub(super) async fn read(&self, uri: &str) -> Result<ReadResourceResult, ErrorData> {
        let (resources, templates) = self.all_resources();
        let read = if let Some(resource) = resources.iter().find(|resource| resource.uri == uri) {
            resource.read().await
        } else {
            let (template, params) = templates
                .iter()
                .find_map(|template| Some((template, template.matches(uri)?)))
                .ok_or_else(|| self.unknown_resource(uri))?;
            template.read_matched(uri.to_owned(), params).await
        };
        let failed = |err: &dyn std::fmt::Display| {
            ErrorData::internal_error(format!("reading `{uri}` failed: {err}"), None)
        };
        let contents = read.map_err(|err| failed(&err))?;
        let contents = contents
            .iter()
            .map(contents_to_mcp)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|err| failed(&err))?;
        Ok(ReadResourceResult::new(contents))
    }

    /// Subscribes the client to `uri`, which must be served.
    pub(super) fn subscribe_to(&self, uri: String) -> Result<(), ErrorData> {
        let (resources, templates) = self.all_resources();
        let served = resources.iter().any(|resource| resource.uri == uri)
            || templates
                .iter()
                .any(|template| template.matches(&uri).is_some());
        if !served {
            return Err(self.unknown_resource(&uri));
        }
        let mut subscribed = lock(&self.remembered().subscribed);
        if subscribed.contains(&uri) {
            return Ok(());
        }
        let held = subscribed.iter().map(String::len).sum::<usize>();
        if subscribed.len() >= MAX_SUBSCRIPTIONS || held + uri.len() > MAX_SUBSCRIBED_BYTES {
            return Err(ErrorData::invalid_params(
                format!(
                    "this session is subscribed to {} resources ({held} bytes of URI), and one \
                     session holds at most {MAX_SUBSCRIPTIONS} subscriptions of at most \
                     {MAX_SUBSCRIBED_BYTES} bytes of URI together; unsubscribe from one \
                     (`resources/unsubscribe`) before subscribing to `{}`",
                    subscribed.len(),
                    crate::compress_snapshot(&uri, 120),
                ),
                None,
            ));
        }
        subscribed.insert(uri);
        Ok(())
    }

    /// For a client that connected with the handshake: passes on the updates of the URIs it
    /// subscribed to, and every list change, until the connection ends.
    pub(super) fn forward_resource_events(&self, peer: &Peer<RoleServer>) {
        if self.served.resources.is_empty() {
            return;
        }
        let events = self.served.resource_events.subscribe();
        let subscribed = Arc::clone(&self.remembered().subscribed);
        let (closed, peer) = (self.closed.clone(), peer.clone());
        tokio::spawn(async move {
            let send = |event| {
                let peer = peer.clone();
                async move {
                    match event {
                        ResourceEvent::Updated(uri) => peer
                            .notify_resource_updated(ResourceUpdatedNotificationParam::new(uri))
                            .await
                            .is_ok(),
                        ResourceEvent::ListChanged => {
                            peer.notify_resource_list_changed().await.is_ok()
                        }
                    }
                }
            };
            let wanted = |event: &ResourceEvent| match event {
                ResourceEvent::Updated(uri) => lock(&subscribed).contains(uri),
                ResourceEvent::ListChanged => true,
            };
            pass_on_resource_events(events, &closed, wanted, send).await;
        });
    }
}

/// `items` as MCP lists them; one that does not convert is left out, with a warning naming it.
fn listable<T, L>(
    items: &[T],
    convert: impl Fn(&T) -> Result<L, serde_json::Error>,
    uri: impl Fn(&T) -> &str,
) -> Vec<L> {
    items
        .iter()
        .filter_map(|item| match convert(item) {
            Ok(listed) => Some(listed),
            Err(err) => {
                tracing::warn!(uri = uri(item), "not listed over MCP: {err}");
                None
            }
        })
        .collect()
}

/// Passes the resource events a session wants to `send`, until the connection ends or a
/// send fails.
pub(super) async fn pass_on_resource_events<F: Future<Output = bool>>(
    mut events: broadcast::Receiver<ResourceEvent>,
    closed: &CancellationToken,
    wanted: impl Fn(&ResourceEvent) -> bool,
    send: impl Fn(ResourceEvent) -> F,
) {
    loop {
        let event = tokio::select! {
            () = closed.cancelled() => return,
            event = events.recv() => event,
        };
        match event {
            Ok(event) => {
                if wanted(&event) && !send(event).await {
                    return;
                }
            }
            Err(broadcast::error::RecvError::Lagged(missed)) => {
                tracing::warn!("an MCP session fell behind and missed {missed} resource notices");
            }
            Err(broadcast::error::RecvError::Closed) => return,
        }
    }
}
