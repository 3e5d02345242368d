//! [`McpToolWrapper`]: one remote tool served as a dynamic tool, with cancellation and
//! progress carried across.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::util::sync::lock;

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CancelledNotification, CancelledNotificationParam,
    ClientNotification, ClientRequest, RequestId, ServerResult,
};
use rmcp::service::PeerRequestOptions;
use rmcp::{Peer, RoleClient, ServiceError};
use serde_json::Value;

use super::link::{Askers, Remote, token_key};
use super::stdio::is_unreadable;
use crate::mcp::convert::output_from_mcp;
use crate::tool::{BoxFuture, RuntimeTool, ToolDefinition, ToolHandler};
use crate::{ToolContext, ToolError, ToolOutput};

/// One tool of an MCP server, served as a dynamic tool.
///
/// Made by [`McpConnection`](super::McpConnection); calls go to the remote tool by its own
/// name, with the caller's cancellation (sent on as `notifications/cancelled`) and progress
/// (asked for when someone listens, and passed back).
pub type McpToolWrapper = RuntimeTool<McpRemoteTool>;

/// Where an [`McpToolWrapper`]'s calls go: a tool of an MCP server, by its remote name.
#[derive(Clone)]
pub struct McpRemoteTool {
    pub(super) remote_name: String,
    pub(super) remote: Arc<Remote>,
}

impl fmt::Debug for McpRemoteTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpRemoteTool")
            .field("remote_name", &self.remote_name)
            .field("server", &self.remote.label)
            .finish_non_exhaustive()
    }
}

impl McpToolWrapper {
    /// The tool's name on its MCP server.
    pub fn remote_name(&self) -> &str {
        &self.handler().remote_name
    }
}

impl McpRemoteTool {
    /// The tool's name on its MCP server.
    pub fn remote_name(&self) -> &str {
        &self.remote_name
    }

    fn down(&self, tool: &str, why: &str) -> ToolError {
        ToolError::Execution(format!(
            "the MCP server `{}` behind `{tool}` is not reachable: {why}. It has to be \
             reconnected before this tool can be called again.",
            self.remote.label
        ))
    }

    async fn call_remote(
        &self,
        tool: &str,
        args: Value,
        ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        let link = self
            .remote
            .current()
            .ok_or_else(|| self.down(tool, "the connection was closed"))?;
        if link.ended.is_cancelled() {
            return Err(self.down(tool, &link.why_ended()));
        }
        let mut params = CallToolRequestParams::new(self.remote_name.clone());
        params.arguments = match args {
            Value::Object(map) => Some(map),
            _ => None,
        };
        // Before the request goes out: the server may ask its questions at once.
        let _asking = AskingFor::register(&self.remote, tool, ctx);
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let Ok(handle) = link
            .peer
            .send_request_with_option(request, PeerRequestOptions::no_options())
            .await
        else {
            return Err(self.down(tool, "the connection closed"));
        };
        // The SDK gives every request a progress token; the server's progress for this call
        // comes back under it.
        let progress = ctx.progress();
        let _forget = progress.is_listening().then(|| {
            let token = token_key(&handle.progress_token);
            self.remote.calls().insert(token.clone(), progress);
            ForgetCall {
                remote: &self.remote,
                token,
            }
        });
        let mut abandon = CancelOnDrop {
            peer: link.peer.clone(),
            request: Some(handle.id.clone()),
        };
        let cancel = ctx.cancellation_token();
        let limit = self.remote.call_timeout;
        let outcome = tokio::select! {
            outcome = handle.await_response() => outcome,
            () = cancel.cancelled() => return Err(ToolError::Cancelled { tool: tool.to_owned() }),
            () = link.ended.cancelled() => {
                return Err(self.down(tool, &format!("{} during the call", link.why_ended())));
            }
            // `abandon` tells the server the call was given up.
            () = tokio::time::sleep(limit) => {
                return Err(ToolError::Timeout { tool: tool.to_owned(), after: limit });
            }
        };
        abandon.request = None;
        match outcome {
            Ok(ServerResult::CallToolResult(result)) => output_from_mcp(result),
            Ok(_) => Err(ToolError::Execution(format!(
                "the MCP server `{}` answered `{}` with something other than a tool result \
                 (a request for more input, or a task), which wrapped tools do not take",
                self.remote.label, self.remote_name
            ))),
            Err(ServiceError::McpError(error)) if is_unreadable(error.data.as_ref()) => {
                Err(ToolError::Execution(format!(
                    "the MCP server `{}` answered the call to `{}` with a message that is not \
                     taken: {}",
                    self.remote.label, self.remote_name, error.message
                )))
            }
            Err(ServiceError::McpError(error)) => Err(ToolError::Execution(format!(
                "the MCP server `{}` refused the call to `{}`: {}",
                self.remote.label, self.remote_name, error.message
            ))),
            Err(ServiceError::TransportClosed | ServiceError::TransportSend(_)) => {
                Err(self.down(tool, "the connection closed during the call"))
            }
            Err(other) => Err(ToolError::Execution(format!(
                "the call to `{}` on the MCP server `{}` failed: {other}",
                self.remote_name, self.remote.label
            ))),
        }
    }
}

/// Tells the server a call was given up (the caller cancelled it, or its timeout struck),
/// unless the answer came.
struct CancelOnDrop {
    pub(super) peer: Peer<RoleClient>,
    pub(super) request: Option<RequestId>,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let Some(id) = self.request.take() else {
            return;
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let peer = self.peer.clone();
        runtime.spawn(async move {
            let param = CancelledNotificationParam::new(
                Some(id),
                Some("the caller gave up the call".into()),
            );
            let notice =
                ClientNotification::CancelledNotification(CancelledNotification::new(param));
            let _ = peer.send_notification(notice).await;
        });
    }
}

/// Lets the server's questions during a call reach whoever answers for its caller, until
/// the call ends, however it ends.
struct AskingFor<'a> {
    remote: &'a Remote,
    key: u64,
}

impl<'a> AskingFor<'a> {
    fn register(remote: &'a Remote, tool: &str, ctx: &ToolContext) -> Option<Self> {
        static KEYS: AtomicU64 = AtomicU64::new(0);
        let askers = Askers {
            tool: tool.to_owned(),
            call_id: ctx.call_id(),
            elicitation: ctx.elicitation_handler(),
            sampling: ctx.sampling_handler(),
        };
        if askers.elicitation.is_none() && askers.sampling.is_none() {
            return None;
        }
        let key = KEYS.fetch_add(1, Ordering::Relaxed);
        lock(&remote.askers).insert(key, askers);
        Some(Self { remote, key })
    }
}

impl Drop for AskingFor<'_> {
    fn drop(&mut self) {
        lock(&self.remote.askers).remove(&self.key);
    }
}

/// Stops routing a call's progress when the call ends, however it ends.
struct ForgetCall<'a> {
    remote: &'a Remote,
    token: String,
}

impl Drop for ForgetCall<'_> {
    fn drop(&mut self) {
        // The SDK hands each notification to its own task, so progress the server sent just
        // before its result can arrive just after it: keep routing a little longer.
        let token = std::mem::take(&mut self.token);
        let calls = Arc::clone(&self.remote.calls);
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(async move {
                    tokio::time::sleep(LATE_PROGRESS).await;
                    lock(&calls).remove(&token);
                });
            }
            Err(_) => {
                lock(&calls).remove(&token);
            }
        }
    }
}

/// How long progress is still routed to a call after its result came.
const LATE_PROGRESS: std::time::Duration = std::time::Duration::from_millis(200);

impl ToolHandler for McpRemoteTool {
    fn call<'a>(
        &'a self,
        definition: &'a ToolDefinition,
        args: Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(self.call_remote(&definition.name, args, ctx))
    }
}
