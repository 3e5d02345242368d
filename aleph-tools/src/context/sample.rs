//! Asking the client's model for a completion while a tool runs: MCP's sampling, answered
//! by the client over MCP or by the application's [`SamplingHandler`] in process.

use std::future::Future;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::ToolContext;
use super::elicit::AskResult;
use crate::error::ToolError;
use crate::result::Content;
use crate::util::BoxFuture;

/// Who speaks a [`SamplingMessage`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SamplingRole {
    /// The user's side of the conversation: the tool's question.
    User,
    /// The model's side.
    Assistant,
}

/// One message of the conversation a tool hands the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SamplingMessage {
    /// Who speaks.
    pub role: SamplingRole,
    /// What they say: text, an image or a sound.
    pub content: Content,
}

impl SamplingMessage {
    /// A message from the user's side.
    pub fn user(content: impl Into<Content>) -> Self {
        Self {
            role: SamplingRole::User,
            content: content.into(),
        }
    }

    /// A message from the model's side, as earlier turns of the conversation.
    pub fn assistant(content: impl Into<Content>) -> Self {
        Self {
            role: SamplingRole::Assistant,
            content: content.into(),
        }
    }
}

/// A tool's request for a completion from the client's model.
///
/// ```
/// use aleph_tools::SamplingRequest;
///
/// let request = SamplingRequest::new("Summarize in one line: …")
///     .with_system_prompt("You write terse summaries.")
///     .with_max_tokens(60);
/// assert_eq!(request.max_tokens, 60);
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct SamplingRequest {
    /// The tool asking; filled in by [`ToolContext::sample`](super::ToolContext::sample).
    pub tool: String,
    /// The server-assigned id of the call that asks; filled in the same way.
    pub call_id: u64,
    /// The conversation, oldest first.
    pub messages: Vec<SamplingMessage>,
    /// A system prompt the tool asks for; the client may change or drop it.
    pub system_prompt: Option<String>,
    /// The most tokens the answer may take.
    pub max_tokens: u32,
    /// Sampling temperature, when the tool cares.
    pub temperature: Option<f32>,
    /// Sequences that end the answer.
    pub stop_sequences: Vec<String>,
    /// Model names the tool would like, best first (`"claude-3-5-sonnet"`, `"gpt-4o"`); the
    /// client picks.
    pub model_hints: Vec<String>,
}

impl SamplingRequest {
    /// A request of one user message, answered in at most 1,024 tokens.
    pub fn new(prompt: impl Into<Content>) -> Self {
        Self::from_messages([SamplingMessage::user(prompt)])
    }

    /// A request of a whole conversation.
    pub fn from_messages(messages: impl IntoIterator<Item = SamplingMessage>) -> Self {
        Self {
            tool: String::new(),
            call_id: 0,
            messages: messages.into_iter().collect(),
            system_prompt: None,
            max_tokens: 1024,
            temperature: None,
            stop_sequences: Vec::new(),
            model_hints: Vec::new(),
        }
    }

    /// Sets the system prompt.
    #[must_use]
    pub fn with_system_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.system_prompt = Some(prompt.into());
        self
    }

    /// Sets the most tokens the answer may take.
    #[must_use]
    pub fn with_max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = max_tokens;
        self
    }

    /// Sets the temperature.
    #[must_use]
    pub fn with_temperature(mut self, temperature: f32) -> Self {
        self.temperature = Some(temperature);
        self
    }

    /// Adds a sequence that ends the answer.
    #[must_use]
    pub fn with_stop_sequence(mut self, stop: impl Into<String>) -> Self {
        self.stop_sequences.push(stop.into());
        self
    }

    /// Adds a model the tool would like, after those already named.
    #[must_use]
    pub fn with_model_hint(mut self, model: impl Into<String>) -> Self {
        self.model_hints.push(model.into());
        self
    }
}

impl From<&str> for SamplingRequest {
    fn from(prompt: &str) -> Self {
        Self::new(prompt)
    }
}

impl From<String> for SamplingRequest {
    fn from(prompt: String) -> Self {
        Self::new(prompt)
    }
}

/// The model's answer to a [`SamplingRequest`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Sampled {
    /// The model that answered.
    pub model: String,
    /// What it answered.
    pub content: Vec<Content>,
    /// Why it stopped (`"endTurn"`, `"maxTokens"`, `"stopSequence"`), when the client says.
    pub stop_reason: Option<String>,
}

impl Sampled {
    /// An answer of `content` from `model`.
    pub fn new(model: impl Into<String>, content: impl Into<Content>) -> Self {
        Self {
            model: model.into(),
            content: vec![content.into()],
            stop_reason: None,
        }
    }

    /// Sets why the model stopped.
    #[must_use]
    pub fn with_stop_reason(mut self, reason: impl Into<String>) -> Self {
        self.stop_reason = Some(reason.into());
        self
    }

    /// The text of the answer: its text blocks, joined by newlines.
    pub fn text(&self) -> String {
        let texts: Vec<&str> = self.content.iter().filter_map(Content::as_text).collect();
        texts.join("\n")
    }
}

/// Asking the client's model.
impl ToolContext {
    /// Asks the client's model for a completion and waits for it: a prompt (`&str`,
    /// `String`) or a whole [`SamplingRequest`]. Over MCP the client runs its model, usually
    /// after its user approves; in process the server's [`SamplingHandler`] does.
    ///
    /// ```
    /// use aleph_tools::prelude::*;
    ///
    /// /// Names a branch for a change.
    /// #[tool]
    /// async fn branch_name(change: String, ctx: &ToolContext) -> Result<String, ToolError> {
    ///     let answer = ctx.sample(format!("A git branch name for: {change}")).await?;
    ///     Ok(answer.text())
    /// }
    /// ```
    ///
    /// # Errors
    ///
    /// [`ToolError::Execution`] when nobody can answer (no client that takes sampling, no
    /// handler) or when the model could not be asked.
    pub async fn sample(&self, request: impl Into<SamplingRequest>) -> Result<Sampled, ToolError> {
        let Some(handler) = self.sampling_handler() else {
            return Err(self.ask_error(
                "no model can be asked here: serve the tool over MCP to a client that takes sampling, or give the server a SamplingHandler".to_owned(),
            ));
        };
        let mut request = request.into();
        self.tool_name()
            .unwrap_or_default()
            .clone_into(&mut request.tool);
        request.call_id = self.call_id;
        handler
            .sample(request)
            .await
            .map_err(|err| self.ask_error(format!("asking the model failed: {err}")))
    }

    /// Who answers this call's requests for a completion: its own handler, or its server's.
    pub(crate) fn sampling_handler(&self) -> Option<Arc<dyn SamplingHandler>> {
        self.sampling
            .clone()
            .or_else(|| self.server.as_ref()?.sampling_handler())
    }
}

/// Answers a tool's [`SamplingRequest`] in process, with whatever model the application
/// uses.
///
/// Over MCP the client answers, and a server needs no handler; give one to the tool server
/// ([`with_sampling_handler`](crate::ToolServerBuilder::with_sampling_handler)) for the
/// calls an application makes itself. Any
/// `Fn(SamplingRequest) -> impl Future<Output = AskResult<Sampled>>` is a handler.
pub trait SamplingHandler: Send + Sync + 'static {
    /// Runs the request through a model.
    ///
    /// # Errors
    ///
    /// Why no answer came; the tool sees it as a failed call to
    /// [`sample`](super::ToolContext::sample).
    fn sample(&self, request: SamplingRequest) -> BoxFuture<'_, AskResult<Sampled>>;
}

impl<F, Fut> SamplingHandler for F
where
    F: Fn(SamplingRequest) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = AskResult<Sampled>> + Send + 'static,
{
    fn sample(&self, request: SamplingRequest) -> BoxFuture<'_, AskResult<Sampled>> {
        Box::pin(self(request))
    }
}
