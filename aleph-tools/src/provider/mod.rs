//! Model APIs: the tools array each provider takes, the tool calls in its responses, and
//! the messages that carry the results back.
//!
//! One loop step with any provider is three calls:
//!
//! 1. [`ToolList::for_provider`] (`server.tools().for_provider(p)`) gives the `tools` array
//!    for the request.
//! 2. [`AlephToolServer::run_tool_calls`] reads the tool calls out of the response and
//!    runs them through the server, all of them concurrently, each with the server's name
//!    repair, filter, validation, confirmation, middleware and limits.
//! 3. [`ToolRound::messages`] are the provider's tool-result messages, in call order, to
//!    append to the conversation before asking the model again.
//!
//! ```
//! use aleph_tools::prelude::*;
//! use aleph_tools::provider::Provider;
//! use serde_json::json;
//!
//! /// Add two numbers.
//! #[tool(register = false)]
//! async fn add(a: i64, b: i64) -> i64 {
//!     a + b
//! }
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let server = AlephToolServer::builder().with_tool(AddTool).build().unwrap();
//! let tools = server.tools().for_provider(Provider::Anthropic);
//! assert_eq!(tools[0]["name"], "add");
//!
//! // What the model answered:
//! let response = json!({
//!     "role": "assistant",
//!     "content": [{ "type": "tool_use", "id": "toolu_1", "name": "add", "input": { "a": 2, "b": 3 } }],
//!     "stop_reason": "tool_use"
//! });
//! let round = server.run_tool_calls(Provider::Anthropic, &response).await?;
//! assert_eq!(round.messages[0]["content"][0]["content"], "5");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```
//!
//! [`ToolList::for_provider`]: crate::ToolList::for_provider
//! [`AlephToolServer::run_tool_calls`]: crate::AlephToolServer::run_tool_calls

mod calls;
mod replies;
mod round;
mod size;
mod tools;

#[cfg(feature = "clients")]
pub(crate) use self::calls::arguments_text;
pub(crate) use self::calls::parse_arguments_text;
pub use self::calls::{BadArguments, ProviderCall, ProviderError};
pub(crate) use self::round::RoundLimits;
pub use self::round::ToolRound;
pub use self::size::{SizeReport, estimate_tokens};
pub use self::tools::ToolListError;
#[cfg(feature = "mcp")]
pub(crate) use self::tools::mcp_output_schema;
pub(crate) use self::tools::output_is_wrapped;

use crate::schema::Dialect;

/// A model API, with its wire format for tools, tool calls and tool results. Serialized as
/// its [`name`](Self::name).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub enum Provider {
    /// OpenAI Chat Completions: `tools: [{ type: "function", function: {…} }]`,
    /// `message.tool_calls`, `role: "tool"` messages.
    #[serde(rename = "openai-chat")]
    OpenAiChat,
    /// OpenAI Responses: `tools: [{ type: "function", name, … }]`, `function_call` output
    /// items, `function_call_output` input items.
    #[serde(rename = "openai-responses")]
    OpenAiResponses,
    /// Anthropic Messages: `tools: [{ name, description, input_schema }]`, `tool_use`
    /// content blocks, one user message of `tool_result` blocks.
    #[serde(rename = "anthropic")]
    Anthropic,
    /// Gemini `generateContent`: `tools: [{ functionDeclarations: […] }]`, `functionCall`
    /// parts, one user content of `functionResponse` parts.
    #[serde(rename = "gemini")]
    Gemini,
    /// MCP: `tools/list` entries (`inputSchema`, `outputSchema`, `annotations`),
    /// `tools/call` requests, `CallToolResult`s.
    #[serde(rename = "mcp")]
    Mcp,
}

impl Provider {
    /// Every provider, for reports and tests.
    pub const ALL: [Self; 5] = [
        Self::OpenAiChat,
        Self::OpenAiResponses,
        Self::Anthropic,
        Self::Gemini,
        Self::Mcp,
    ];

    /// The schema dialect this provider's tool list uses by default. OpenAI's is strict
    /// mode, as OpenAI recommends; a tool whose schema cannot be strict is sent without it.
    pub const fn dialect(self) -> Dialect {
        match self {
            Self::OpenAiChat | Self::OpenAiResponses => Dialect::OpenAi { strict: true },
            Self::Anthropic => Dialect::Anthropic,
            Self::Gemini => Dialect::Gemini,
            Self::Mcp => Dialect::MCP,
        }
    }

    /// A short name for messages (`"openai-chat"`, `"anthropic"`, …).
    pub const fn name(self) -> &'static str {
        match self {
            Self::OpenAiChat => "openai-chat",
            Self::OpenAiResponses => "openai-responses",
            Self::Anthropic => "anthropic",
            Self::Gemini => "gemini",
            Self::Mcp => "mcp",
        }
    }
}
