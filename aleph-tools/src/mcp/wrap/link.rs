//! The live side of a connection: the current link to the server, the client handler that
//! hears its notifications and passes its questions on, and where each call's progress goes.
//!
//! MCP's 2026-07-28 revision deprecates sampling; servers of the earlier revisions use it,
//! so their requests are passed on.
#![allow(deprecated)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, RwLock, Weak};

use crate::util::sync::{self, lock};

use rmcp::model::{
    ClientCapabilities, ClientConfig, CreateMessageRequestParams, CreateMessageResult,
    ElicitRequestParams, ElicitResult, ElicitationAction, Implementation, NumberOrString,
    ProgressNotificationParam, ProgressToken,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ClientHandler, ErrorData, Peer, RoleClient};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::connection::Inner;
use crate::mcp::ask::{sampled_to_mcp, sampling_from_mcp};
use crate::{Elicitation, ElicitationHandler, ElicitationRequest, Progress, SamplingHandler};

/// What the wrapped tools share: the current link to the server, the calls waiting for
/// progress, and the calls whose callers can answer the server's questions.
pub(super) struct Remote {
    pub(super) label: String,
    pub(super) link: RwLock<Option<Arc<Link>>>,
    /// Progress token → where the call's progress goes.
    pub(super) calls: Arc<Mutex<HashMap<String, Progress>>>,
    /// The calls in flight whose callers can answer questions, by a number of their own.
    pub(super) askers: Mutex<HashMap<u64, Askers>>,
    /// How long a call waits for the server's answer.
    pub(super) call_timeout: std::time::Duration,
}

/// Who answers for one call in flight: its context's handlers, or its server's.
#[derive(Clone)]
pub(super) struct Askers {
    pub(super) tool: String,
    pub(super) call_id: u64,
    pub(super) elicitation: Option<Arc<dyn ElicitationHandler>>,
    pub(super) sampling: Option<Arc<dyn SamplingHandler>>,
}

impl Remote {
    pub(super) fn current(&self) -> Option<Arc<Link>> {
        sync::read(&self.link).clone()
    }

    pub(super) fn calls(&self) -> std::sync::MutexGuard<'_, HashMap<String, Progress>> {
        lock(&self.calls)
    }

    /// The one handler that can answer for the calls in flight, with the call it answers
    /// for. The server's question does not say which call it belongs to, so it is passed
    /// on only when every call that could answer would ask the same one: never to one
    /// client on another client's behalf.
    fn asker<H: ?Sized>(
        &self,
        pick: impl Fn(&Askers) -> Option<Arc<H>>,
    ) -> Result<(Arc<H>, String, u64), ErrorData> {
        let askers = lock(&self.askers);
        let mut found: Option<(Arc<H>, String, u64)> = None;
        for askers in askers.values() {
            let Some(handler) = pick(askers) else {
                continue;
            };
            match &found {
                None => found = Some((handler, askers.tool.clone(), askers.call_id)),
                Some((first, _, _)) if Arc::ptr_eq(first, &handler) => {}
                Some(_) => {
                    return Err(ErrorData::invalid_request(
                        "several calls from different callers are in flight, and the request does not say which one it is for",
                        None,
                    ));
                }
            }
        }
        found.ok_or_else(|| {
            ErrorData::invalid_request("no call in flight has anyone to answer this request", None)
        })
    }
}

/// One connection to the server (a new one after each reconnect).
pub(super) struct Link {
    pub(super) peer: Peer<RoleClient>,
    /// Cancel to close the connection.
    pub(super) stop: CancellationToken,
    /// Cancelled once the connection has ended, for whatever reason.
    pub(super) ended: CancellationToken,
    pub(super) why_ended: OnceLock<String>,
    pub(super) pid: Option<u32>,
}

impl Link {
    pub(super) fn why_ended(&self) -> String {
        self.why_ended
            .get()
            .cloned()
            .unwrap_or_else(|| "the connection ended".into())
    }
}

/// The client side of the connection: follows `list_changed`, routes progress.
pub(super) struct Client {
    pub(super) connection: Weak<Inner>,
    pub(super) remote: Weak<Remote>,
}

impl ClientHandler for Client {
    fn get_info(&self) -> ClientConfig {
        // Questions are passed on to whoever made the call they belong to.
        let capabilities = ClientCapabilities::builder()
            .enable_elicitation()
            .enable_sampling()
            .build();
        ClientConfig::new(
            capabilities,
            Implementation::new("aleph-tools", env!("CARGO_PKG_VERSION")),
        )
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let ElicitRequestParams::FormElicitationParams {
            message,
            requested_schema,
            ..
        } = request
        else {
            return Err(ErrorData::invalid_params(
                "only form elicitation is passed on, not URL elicitation",
                None,
            ));
        };
        let remote = self.remote()?;
        let (handler, tool, call_id) = remote.asker(|askers| askers.elicitation.clone())?;
        let schema = serde_json::to_value(requested_schema)
            .map_err(|err| ErrorData::internal_error(err.to_string(), None))?;
        let answer = handler
            .elicit(ElicitationRequest {
                tool,
                call_id,
                message,
                schema,
            })
            .await
            .map_err(|err| ErrorData::internal_error(err.to_string(), None))?;
        Ok(match answer {
            Elicitation::Accept(fields) => {
                ElicitResult::new(ElicitationAction::Accept).with_content(Value::Object(fields))
            }
            Elicitation::Decline => ElicitResult::new(ElicitationAction::Decline),
            Elicitation::Cancel => ElicitResult::new(ElicitationAction::Cancel),
        })
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        let remote = self.remote()?;
        let (handler, tool, call_id) = remote.asker(|askers| askers.sampling.clone())?;
        let mut request =
            sampling_from_mcp(&params).map_err(|why| ErrorData::invalid_params(why, None))?;
        request.tool = tool;
        request.call_id = call_id;
        let answer = handler
            .sample(request)
            .await
            .map_err(|err| ErrorData::internal_error(err.to_string(), None))?;
        sampled_to_mcp(&answer).map_err(|why| ErrorData::internal_error(why, None))
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        if let Some(connection) = self.connection.upgrade() {
            connection.refresh_after_change();
        }
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let Some(remote) = self.remote.upgrade() else {
            return;
        };
        let key = token_key(&params.progress_token);
        let progress = remote.calls().get(&key).cloned();
        if let Some(progress) = progress {
            progress.report(params.progress, params.total, params.message.as_deref());
        }
    }
}

impl Client {
    fn remote(&self) -> Result<Arc<Remote>, ErrorData> {
        self.remote
            .upgrade()
            .ok_or_else(|| ErrorData::internal_error("the connection is closing", None))
    }
}

pub(super) fn token_key(token: &ProgressToken) -> String {
    match &token.0 {
        NumberOrString::Number(n) => n.to_string(),
        NumberOrString::String(s) => s.to_string(),
    }
}
