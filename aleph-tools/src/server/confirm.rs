//! Confirmation: tools marked `confirm` (or listed in the filter's `requireConfirmation`) run
//! only after the application's [`ConfirmationHandler`] approves the call.

use std::future::Future;
use std::sync::Arc;

use serde_json::Value;

use crate::context::Caller;
use crate::tool::{BoxFuture, ToolDefinition};

/// A call waiting for a person's approval. Its arguments have already been checked against
/// the tool's schema.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ConfirmationRequest {
    /// The tool about to run.
    pub tool: String,
    /// The arguments it will run with.
    pub arguments: Value,
    /// The tool's definition (description, annotations), to show the person.
    pub definition: Arc<ToolDefinition>,
    /// Who is calling.
    pub caller: Caller,
    /// The server-assigned id of the call.
    pub call_id: u64,
}

/// The answer to a [`ConfirmationRequest`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Confirmation {
    /// Run the call.
    Approve,
    /// Do not run it; the reason reaches the model.
    Deny {
        /// Why, in words for the model.
        reason: String,
    },
}

impl Confirmation {
    /// A refusal with a reason.
    pub fn deny(reason: impl Into<String>) -> Self {
        Self::Deny {
            reason: reason.into(),
        }
    }
}

/// Asks a person (or a policy) whether a call may run.
///
/// Any `Fn(ConfirmationRequest) -> impl Future<Output = Confirmation>` is a handler:
///
/// ```
/// use aleph_tools::prelude::*;
/// use aleph_tools::{Confirmation, ConfirmationRequest};
///
/// let server = AlephToolServer::builder()
///     .with_confirmation_handler(|request: ConfirmationRequest| async move {
///         if request.tool.starts_with("delete") {
///             Confirmation::deny("deleting is not allowed in this session")
///         } else {
///             Confirmation::Approve
///         }
///     })
///     .build()?;
/// # let _ = server;
/// # Ok::<(), aleph_tools::RegistryError>(())
/// ```
pub trait ConfirmationHandler: Send + Sync + 'static {
    /// Decides about one call.
    fn confirm(&self, request: ConfirmationRequest) -> BoxFuture<'_, Confirmation>;
}

impl<F, Fut> ConfirmationHandler for F
where
    F: Fn(ConfirmationRequest) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Confirmation> + Send + 'static,
{
    fn confirm(&self, request: ConfirmationRequest) -> BoxFuture<'_, Confirmation> {
        Box::pin(self(request))
    }
}
