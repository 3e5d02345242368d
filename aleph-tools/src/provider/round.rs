//! One round of tool calls: parse, run through the server, answer.

use serde_json::Value;

use super::calls::ProviderCall;
use crate::result::ToolResult;

/// The tool calls of one model response, their results, and the messages that answer
/// them.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ToolRound {
    /// The calls, in the order the model made them.
    pub calls: Vec<ProviderCall>,
    /// One result per call, in the same order.
    pub results: Vec<ToolResult>,
    /// The provider's messages carrying the results (see
    /// [`Provider::result_messages`](super::Provider::result_messages)).
    pub messages: Vec<Value>,
}

impl ToolRound {
    /// Whether the model made no tool call: its answer is final.
    pub fn is_empty(&self) -> bool {
        self.calls.is_empty()
    }
}

/// How many of one model turn's tool calls run, and how many at once: a model can ask for
/// any number of calls in one turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RoundLimits {
    /// The most calls of one turn that run; the rest are answered with an error.
    pub(crate) per_round: usize,
    /// The most calls that run at the same time.
    pub(crate) concurrent: usize,
}

impl Default for RoundLimits {
    fn default() -> Self {
        Self {
            per_round: 32,
            concurrent: 8,
        }
    }
}
