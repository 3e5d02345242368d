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
