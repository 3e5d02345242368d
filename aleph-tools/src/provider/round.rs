//! One round of tool calls: parse, run through the server, answer.

use std::time::Duration;

use futures_util::future::join_all;
use serde_json::Value;

use super::Provider;
use super::calls::{ProviderCall, ProviderError};
use super::tools::output_is_wrapped;
use crate::AlephToolServer;
use crate::error::{ArgumentProblem, ToolError};
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
    /// [`Provider::result_messages`]).
    pub messages: Vec<Value>,
}

impl ToolRound {
    /// Whether the model made no tool call: its answer is final.
    pub fn is_empty(&self) -> bool {
        self.calls.is_empty()
    }
}

impl AlephToolServer {
    /// Runs every tool call in a provider's response through the server, concurrently,
    /// and builds the messages that answer them, in call order.
    ///
    /// Each call goes the whole way a [`call`](Self::call) goes: name repair, filter,
    /// validation (and argument repair if on), confirmation, middleware, time limits. A
    /// call that fails (unknown tool, arguments that are not JSON, a tool error) is a
    /// failed result the model reads and can fix; it never fails the others.
    ///
    /// # Errors
    ///
    /// [`ProviderError`] only when the response itself cannot be read as `provider`'s.
    pub async fn run_tool_calls(
        &self,
        provider: Provider,
        response: &Value,
    ) -> Result<ToolRound, ProviderError> {
        let calls = provider.parse_calls(response)?;
        let (results, tools): (Vec<ToolResult>, Vec<Option<String>>) =
            join_all(calls.iter().map(|call| self.run_one(call)))
                .await
                .into_iter()
                .unzip();
        let messages = if provider == Provider::Mcp {
            // MCP's structured content follows the tool's output schema, so it needs the
            // tool that ran (after name repair), not the name as called.
            results
                .iter()
                .zip(&tools)
                .map(|(result, tool)| {
                    let wrap = tool
                        .as_deref()
                        .and_then(|name| self.definition(name))
                        .is_some_and(|definition| output_is_wrapped(&definition));
                    result.to_mcp(wrap)
                })
                .collect()
        } else {
            provider.result_messages(&calls, &results)
        };
        Ok(ToolRound {
            calls,
            results,
            messages,
        })
    }

    /// The result of one call, and the name of the tool that ran (after repair).
    async fn run_one(&self, call: &ProviderCall) -> (ToolResult, Option<String>) {
        match &call.arguments {
            Ok(arguments) => {
                let result = self.run(&call.name, arguments.clone(), None).await;
                let tool = result
                    .repair
                    .as_ref()
                    .map_or_else(|| call.name.clone(), |r| r.repaired_name.clone());
                (result, Some(tool))
            }
            Err(bad) => {
                let problem =
                    ArgumentProblem::new("", "a JSON object").received(bad.received.clone());
                let error = ToolError::invalid_args(&call.name, vec![problem]);
                (ToolResult::err(&error, Duration::ZERO), None)
            }
        }
    }
}
