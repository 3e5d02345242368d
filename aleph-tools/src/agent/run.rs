//! The loop: ask the model, run the tools it calls, answer it, until it answers in text.

use std::collections::BTreeSet;
use std::fmt;
use std::sync::Arc;

use super::conversation::Conversation;
use super::model::{ChatModel, ModelError, ModelRequest, StreamDelta};
use super::turn::{ModelTurn, Usage};
use futures_util::future::{Either, select};

use crate::context::ToolContext;
use crate::provider::{Provider, ProviderCall, RoundLimits};
use crate::result::{Content, ToolResult};
use crate::server::AlephToolServer;

/// The rounds a loop runs unless told otherwise.
const DEFAULT_MAX_ROUNDS: usize = 16;

/// Something the loop did, for a caller that shows progress.
#[derive(Debug)]
#[non_exhaustive]
pub enum AgentEvent<'a> {
    /// A round begins: the model is asked (rounds count from 1).
    RoundStarted {
        /// The round.
        round: usize,
    },
    /// A piece of the model's turn, from a streaming model.
    Delta(&'a StreamDelta),
    /// The model answered.
    ModelTurn {
        /// The round.
        round: usize,
        /// Its turn.
        turn: &'a ModelTurn,
    },
    /// One of the model's tool calls finished.
    ToolFinished {
        /// The round.
        round: usize,
        /// The call, as the model made it.
        call: &'a ProviderCall,
        /// Its result, as the model reads it.
        result: &'a ToolResult,
    },
}

type EventHandler = Arc<dyn Fn(&AgentEvent<'_>) + Send + Sync>;

/// How a loop ended well: the model answered in text.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct AgentOutcome {
    /// The model's final text.
    pub text: String,
    /// The rounds it took (one per model answer).
    pub rounds: usize,
    /// The tool calls made across the rounds.
    pub tool_calls: usize,
    /// Tokens used across the rounds, as far as the provider said.
    pub usage: Usage,
    /// Why the model stopped, in the provider's words.
    pub stop_reason: Option<String>,
}

/// Why a loop ended without a final answer. The conversation holds every turn and result
/// up to the failure, so the loop can be run again on it.
///
/// [`Model`](Self::Model)'s message names the round; the model's error is its
/// [`source`](std::error::Error::source) (print the chain, as `{:#}` of an `anyhow::Error`
/// does, or match on the field).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AgentError {
    /// The model could not be asked, or its answer could not be read.
    #[error("asking the model failed in round {round}")]
    Model {
        /// The round.
        round: usize,
        /// Why.
        #[source]
        error: ModelError,
    },
    /// The model was still calling tools when the rounds ran out.
    #[error(
        "the model still called tools after {rounds} rounds; raise `Agent::max_rounds` or \
         look at the conversation for a call it repeats"
    )]
    MaxRounds {
        /// The rounds run.
        rounds: usize,
    },
    /// The loop was cancelled.
    #[error("cancelled in round {round}")]
    Cancelled {
        /// The round.
        round: usize,
    },
    /// The model speaks another provider's format than the conversation.
    #[error(
        "the conversation is in {conversation}'s format and the model speaks {model}'s; \
         make the conversation with `Conversation::new(model.provider())`",
        conversation = conversation.name(),
        model = model.name()
    )]
    WrongFormat {
        /// The conversation's.
        conversation: Provider,
        /// The model's.
        model: Provider,
    },
}

/// The agent loop, with its settings: each round asks the model, runs the tools it calls
/// through the server (name repair, filter, validation, confirmation, middleware and limits
/// all apply) and appends its turn and their results to the conversation, until the model
/// answers without calling a tool.
///
/// On a server with a [`ToolSearch`](crate::builtin::ToolSearch), deferred tools are left
/// out of the tools array until a search finds them; found tools join the array from the
/// next round to the end of the run (Anthropic's API loads them itself).
///
/// ```
/// use aleph_tools::agent::{Agent, AgentEvent, Conversation};
/// # use aleph_tools::agent::{ChatModel, ModelError, ModelRequest, ModelTurn};
/// use aleph_tools::prelude::*;
/// # use aleph_tools::provider::Provider;
/// # use aleph_tools::BoxFuture;
/// # use serde_json::json;
///
/// /// Add two integers.
/// #[tool(register = false)]
/// fn add(a: i64, b: i64) -> i64 {
///     a + b
/// }
///
/// # /// Calls `add`, then answers with what it returned.
/// # struct Script;
/// # impl ChatModel for Script {
/// #     fn provider(&self) -> Provider { Provider::Anthropic }
/// #     fn respond<'a>(&'a self, request: ModelRequest<'a>) -> BoxFuture<'a, Result<ModelTurn, ModelError>> {
/// #         let last = request.conversation.messages().last().cloned().unwrap_or_default();
/// #         Box::pin(async move {
/// #             let response = match last.pointer("/content/0/content").and_then(|c| c.as_str()) {
/// #                 Some(sum) => json!({ "content": [{ "type": "text", "text": format!("It is {sum}.") }] }),
/// #                 None => json!({ "content": [{ "type": "tool_use", "id": "toolu_1", "name": "add", "input": { "a": 2, "b": 2 } }] }),
/// #             };
/// #             Ok(ModelTurn::from_response(Provider::Anthropic, &response)?)
/// #         })
/// #     }
/// # }
/// # let model = Script;
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let server = AlephToolServer::builder().with_tool(AddTool).build()?;
/// let mut conversation = Conversation::new(Provider::Anthropic);
/// conversation.push_user("What is 2 + 2?");
///
/// let outcome = Agent::new()
///     .max_rounds(8)
///     .on_event(|event| {
///         if let AgentEvent::ToolFinished { call, result, .. } = event {
///             println!("{} -> {}", call.name, result.model_text());
///         }
///     })
///     .run(&server, &model, &mut conversation)
///     .await?;
/// assert_eq!(outcome.text, "It is 4.");
/// assert_eq!(conversation.messages().len(), 4); // question, call, result, answer
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
#[derive(Clone)]
#[must_use = "an agent does nothing until `run` is awaited"]
pub struct Agent {
    max_rounds: usize,
    limits: RoundLimits,
    on_event: Option<EventHandler>,
    context: Option<ToolContext>,
}

impl Default for Agent {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for Agent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Agent")
            .field("max_rounds", &self.max_rounds)
            .field("max_calls_per_round", &self.limits.per_round)
            .field("max_concurrent_calls", &self.limits.concurrent)
            .finish_non_exhaustive()
    }
}

impl Agent {
    /// A loop of at most 16 rounds, running at most 32 of a turn's tool calls, 8 at once,
    /// reporting to nobody, calling tools with the server's defaults.
    pub fn new() -> Self {
        Self {
            max_rounds: DEFAULT_MAX_ROUNDS,
            limits: RoundLimits::default(),
            on_event: None,
            context: None,
        }
    }

    /// The most rounds (model answers) before the loop gives up with
    /// [`AgentError::MaxRounds`].
    pub fn max_rounds(mut self, rounds: usize) -> Self {
        self.max_rounds = rounds.max(1);
        self
    }

    /// The most tool calls of one model turn that run (32 unless set). A model that asks for
    /// more in one turn gets the rest answered with an error saying the limit, so it can make
    /// them in its next turn; nothing past the limit runs.
    pub fn max_calls_per_round(mut self, calls: usize) -> Self {
        self.limits.per_round = calls.max(1);
        self
    }

    /// The most tool calls that run at the same time (8 unless set); a turn's other calls
    /// wait for one of them to finish.
    pub fn max_concurrent_calls(mut self, calls: usize) -> Self {
        self.limits.concurrent = calls.max(1);
        self
    }

    /// Hears each [`AgentEvent`] as it happens.
    pub fn on_event(mut self, handler: impl Fn(&AgentEvent<'_>) + Send + Sync + 'static) -> Self {
        self.on_event = Some(Arc::new(handler));
        self
    }

    /// The context each tool call gets a copy of: caller, identity, state, allowed
    /// directories, and the cancellation token, which also stops the loop between and
    /// during rounds. The model is offered only the tools this context is
    /// ([`ToolList::context`](crate::ToolList::context)).
    pub fn with_context(mut self, ctx: ToolContext) -> Self {
        self.context = Some(ctx);
        self
    }

    /// Runs the loop on `conversation`, which must be in `model`'s format and end where
    /// the model is to answer (a user message, or tool results).
    ///
    /// # Errors
    ///
    /// See [`AgentError`]; the conversation keeps what happened up to it.
    pub async fn run(
        &self,
        server: &AlephToolServer,
        model: &dyn ChatModel,
        conversation: &mut Conversation,
    ) -> Result<AgentOutcome, AgentError> {
        let provider = model.provider();
        if provider != conversation.provider() {
            return Err(AgentError::WrongFormat {
                conversation: conversation.provider(),
                model: provider,
            });
        }
        let cancel = self
            .context
            .as_ref()
            .map(ToolContext::cancellation_token)
            .unwrap_or_default();
        let emit = |event: &AgentEvent<'_>| {
            if let Some(handler) = &self.on_event {
                handler(event);
            }
        };
        let on_delta = |delta: StreamDelta| emit(&AgentEvent::Delta(&delta));
        let mut usage = Usage::default();
        let mut tool_calls = 0;
        // Deferred tools a search found in this run: they join the next rounds' tools.
        let mut found = BTreeSet::new();
        for round in 1..=self.max_rounds {
            if cancel.is_cancelled() {
                return Err(AgentError::Cancelled { round });
            }
            emit(&AgentEvent::RoundStarted { round });
            let tools = server.tools_with_found(provider, self.context.as_ref(), &found);
            let mut request = ModelRequest::new(conversation, &tools);
            if self.on_event.is_some() {
                request = request.with_delta_handler(&on_delta);
            }
            let stop = std::pin::pin!(cancel.cancelled());
            let turn = match select(model.respond(request), stop).await {
                Either::Left((turn, _)) => {
                    turn.map_err(|error| AgentError::Model { round, error })?
                }
                Either::Right(((), _)) => return Err(AgentError::Cancelled { round }),
            };
            emit(&AgentEvent::ModelTurn { round, turn: &turn });
            conversation.push_turn(&turn);
            if let Some(used) = turn.usage {
                usage += used;
            }
            if turn.tool_calls.is_empty() {
                return Ok(AgentOutcome {
                    text: turn.text,
                    rounds: round,
                    tool_calls,
                    usage,
                    stop_reason: turn.stop_reason,
                });
            }
            tool_calls += turn.tool_calls.len();
            let answered = server
                .answer_calls(
                    provider,
                    turn.tool_calls,
                    self.context.as_ref(),
                    self.limits,
                )
                .await;
            for (call, result) in answered.calls.iter().zip(&answered.results) {
                emit(&AgentEvent::ToolFinished {
                    round,
                    call,
                    result,
                });
            }
            found.extend(answered.results.iter().flat_map(references));
            conversation.push_results(&answered);
        }
        Err(AgentError::MaxRounds {
            rounds: self.max_rounds,
        })
    }
}

/// The tools a successful result refers to (a tool search's answer).
fn references(result: &ToolResult) -> impl Iterator<Item = String> + '_ {
    result
        .content
        .iter()
        .filter(|_| result.success)
        .filter_map(|block| match block {
            Content::ToolReference(reference) => Some(reference.tool_name.clone()),
            _ => None,
        })
}
