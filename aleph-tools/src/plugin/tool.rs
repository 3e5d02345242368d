//! A WebAssembly plugin's tool: a [`RuntimeTool`] whose calls go to a handler export.

use serde_json::Value;

use super::wasm::{WasmCallError, WasmPlugin};
use crate::context::ToolContext;
use crate::error::ToolError;
use crate::result::ToolOutput;
use crate::tool::{BoxFuture, RuntimeTool, ToolDefinition, ToolHandler};

/// A plugin's tool.
pub(crate) type PluginTool = RuntimeTool<Handler>;

/// Runs a plugin's tool: the arguments go to the handler export as JSON, and the handler's
/// output must be JSON.
pub(crate) struct Handler {
    pub(crate) export: String,
    pub(crate) plugin: WasmPlugin,
}

impl ToolHandler for Handler {
    fn call<'a>(
        &'a self,
        definition: &'a ToolDefinition,
        args: Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let input = serde_json::to_vec(&args).map_err(ToolError::execution)?;
            let cancel = ctx.cancellation_token();
            let output = self
                .plugin
                .call(&self.export, input, &cancel)
                .await
                .map_err(|error| self.tool_error(&definition.name, error))?;
            parse_output(self.plugin.id(), &output).map(ToolOutput::json)
        })
    }
}

impl Handler {
    fn tool_error(&self, tool: &str, error: WasmCallError) -> ToolError {
        let tool = tool.to_owned();
        match error {
            WasmCallError::Timeout(after) => ToolError::Timeout { tool, after },
            WasmCallError::Cancelled => ToolError::Cancelled { tool },
            WasmCallError::Plugin(message) => ToolError::Execution(message),
            other => ToolError::Execution(format!("plugin `{}`: {other}", self.plugin.id())),
        }
    }
}

/// Reads a handler's output: UTF-8 JSON text.
pub(crate) fn parse_output(plugin: &str, output: &[u8]) -> Result<Value, ToolError> {
    let text = std::str::from_utf8(output).map_err(|e| {
        ToolError::Execution(format!(
            "plugin `{plugin}` returned output that is not UTF-8 text ({e}); tools must return JSON"
        ))
    })?;
    serde_json::from_str(text).map_err(|e| {
        let start: String = text.chars().take(80).collect();
        ToolError::Execution(format!(
            "plugin `{plugin}` returned output that is not JSON ({e}): `{start}`; tools must return JSON, such as `extism_pdk::Json(value)`"
        ))
    })
}
