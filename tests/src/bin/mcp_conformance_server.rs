//! The tools the MCP conformance suite's server scenarios call, served over streamable
//! HTTP on loopback. Prints its URL on the first line of stdout and serves until stdin
//! closes.
//!
//! Scenarios whose tools need what the server cannot express yet (image, audio and
//! resource content, log notifications, sampling, elicitation) have no tool here; the
//! suite's baseline in `tests/interop/conformance-baseline.yml` lists them.

use std::time::Duration;

use aleph_tools::mcp::McpServer;
use aleph_tools::prelude::*;
use aleph_tools::schema::Refs;
use aleph_tools::{AlephToolDyn, AlephToolServer, BoxFuture};
use serde_json::{Value, json};
use tokio::io::AsyncReadExt;

/// Answers with a fixed sentence.
#[tool(register = false)]
fn test_simple_text() -> String {
    "This is a simple text response for testing.".to_owned()
}

/// Always fails, with a message for the model.
#[tool(register = false)]
fn test_error_handling() -> Result<String, String> {
    Err("This tool intentionally returns an error for testing".to_owned())
}

/// Reports progress 0, 50 and 100 of 100, 50 ms apart.
#[tool(register = false)]
async fn test_tool_with_progress(progress: Progress) -> String {
    for (step, done) in [0.0, 50.0, 100.0].into_iter().enumerate() {
        if step > 0 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        progress.report(done, Some(100.0), None);
    }
    // The suite's client (the TypeScript SDK) handles a notification a microtask after
    // reading it but a response at once: a last notification read in the same chunk as the
    // result would miss its handler. Give it a moment before answering.
    tokio::time::sleep(Duration::from_millis(20)).await;
    "progress reported: 0, 50 and 100 of 100".to_owned()
}

/// A tool whose hand-written schema uses JSON Schema 2020-12 keywords (`$schema`, `$defs`,
/// `additionalProperties`) that a listing must keep.
struct SchemaKeywords;

impl AlephToolDyn for SchemaKeywords {
    fn name(&self) -> &'static str {
        "json_schema_2020_12_tool"
    }

    fn definition(&self) -> ToolDefinition {
        ToolDefinition::new(
            "json_schema_2020_12_tool",
            "Tool with JSON Schema 2020-12 features",
            json!({
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "type": "object",
                "$defs": {
                    "address": {
                        "type": "object",
                        "properties": {
                            "street": { "type": "string" },
                            "city": { "type": "string" }
                        }
                    }
                },
                "properties": {
                    "name": { "type": "string" },
                    "address": { "$ref": "#/$defs/address" }
                },
                "additionalProperties": false
            }),
        )
    }

    fn call<'a>(
        &'a self,
        args: Value,
        _ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move { Ok(ToolOutput::json(args)) })
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let tools = AlephToolServer::builder()
        .with_tool(TestSimpleTextTool)
        .with_tool(TestErrorHandlingTool)
        .with_tool(TestToolWithProgressTool)
        .with_dyn_tool(SchemaKeywords)
        .build()?;
    let http = McpServer::new(&tools)
        .with_name("aleph-tools-conformance", env!("CARGO_PKG_VERSION"))
        .with_schema_refs(Refs::Keep)
        .serve_http("127.0.0.1:0")
        .await?;
    println!("{}", http.url());
    // Serve until whoever started this closes its end of stdin.
    let mut rest = Vec::new();
    tokio::io::stdin().read_to_end(&mut rest).await?;
    http.shutdown().await?;
    Ok(())
}
