//! [`ChatModel`]: what the agent loop needs of a model, whatever serves it.

use std::time::Duration;

use serde_json::Value;

use super::conversation::Conversation;
use super::turn::ModelTurn;
use crate::provider::{Provider, ProviderError};
use crate::tool::BoxFuture;

/// A model the agent loop can talk to: given the conversation and the tools, it returns its
/// next turn.
///
/// The clients of feature `clients` implement it for each provider's HTTP API; implement it
/// for any other backend (a local model, a test script, a gateway). A model speaks one
/// [`Provider`]'s format: the conversation it gets and the turn it returns are in it, and
/// [`ModelTurn::from_response`] reads a whole response of that format into a turn.
///
/// ```
/// use aleph_tools::agent::{ChatModel, ModelError, ModelRequest, ModelTurn};
/// use aleph_tools::provider::Provider;
/// use aleph_tools::BoxFuture;
/// use serde_json::json;
///
/// /// Always answers "Hello" (in Anthropic's format).
/// struct Hello;
///
/// impl ChatModel for Hello {
///     fn provider(&self) -> Provider {
///         Provider::Anthropic
///     }
///
///     fn respond<'a>(&'a self, _request: ModelRequest<'a>) -> BoxFuture<'a, Result<ModelTurn, ModelError>> {
///         Box::pin(async {
///             let response = json!({ "role": "assistant", "content": [{ "type": "text", "text": "Hello" }] });
///             Ok(ModelTurn::from_response(Provider::Anthropic, &response)?)
///         })
///     }
/// }
/// ```
pub trait ChatModel: Send + Sync {
    /// The format of the conversations it reads and the turns it returns.
    fn provider(&self) -> Provider;

    /// Sends the conversation and the tools; returns the model's next turn. A model that
    /// streams passes each piece to [`ModelRequest::delta`] as it arrives.
    fn respond<'a>(
        &'a self,
        request: ModelRequest<'a>,
    ) -> BoxFuture<'a, Result<ModelTurn, ModelError>>;
}

/// What a [`ChatModel`] is asked.
#[non_exhaustive]
pub struct ModelRequest<'a> {
    /// The conversation so far.
    pub conversation: &'a Conversation,
    /// The `tools` array, in the provider's format
    /// ([`ToolList::for_provider`](crate::ToolList::for_provider)); empty when there are none.
    pub tools: &'a Value,
    /// Where a streaming model sends pieces of its turn as they arrive; `None` when
    /// nobody listens.
    pub on_delta: Option<&'a (dyn Fn(StreamDelta) + Send + Sync)>,
}

impl<'a> ModelRequest<'a> {
    /// A request for the model's next turn in `conversation`, offering `tools`.
    pub fn new(conversation: &'a Conversation, tools: &'a Value) -> Self {
        Self {
            conversation,
            tools,
            on_delta: None,
        }
    }

    /// Sends streamed pieces to `on_delta`.
    #[must_use]
    pub fn with_delta_handler(mut self, on_delta: &'a (dyn Fn(StreamDelta) + Send + Sync)) -> Self {
        self.on_delta = Some(on_delta);
        self
    }

    /// Passes a streamed piece on, when somebody listens.
    pub fn delta(&self, delta: StreamDelta) {
        if let Some(on_delta) = self.on_delta {
            on_delta(delta);
        }
    }
}

/// A piece of a turn, as a streaming model sends it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum StreamDelta {
    /// More of the text.
    Text(String),
    /// More of a tool call: its id and name come first, then its arguments in pieces.
    ToolCall {
        /// Which call of the turn (0 for the first).
        index: usize,
        /// The call's id, in the first piece.
        id: Option<String>,
        /// The tool's name, in the first piece.
        name: Option<String>,
        /// More of the arguments' JSON text.
        arguments: String,
    },
}

/// Why a model gave no turn.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ModelError {
    /// The API answered with an error status; `message` is the provider's own.
    #[error("{provider} answered {status}: {message}", provider = provider.name())]
    Status {
        /// The provider.
        provider: Provider,
        /// The HTTP status.
        status: u16,
        /// The provider's message, or the start of the body.
        message: String,
    },
    /// The API could not be reached, or the connection broke.
    #[error("cannot reach {url}: {message}")]
    Connection {
        /// Where the request went.
        url: String,
        /// Why.
        message: String,
    },
    /// No answer in time.
    #[error("no answer from {url} within {after:?}")]
    Timeout {
        /// Where the request went.
        url: String,
        /// The time limit.
        after: Duration,
    },
    /// A stream that broke off or held something that is not the provider's.
    #[error("the {provider} stream {problem}", provider = provider.name())]
    Stream {
        /// The provider.
        provider: Provider,
        /// What went wrong.
        problem: String,
    },
    /// An answer that is not in the provider's format.
    #[error(transparent)]
    Response(#[from] ProviderError),
    /// Anything else a model implementation reports.
    #[error("{0}")]
    Other(String),
}
