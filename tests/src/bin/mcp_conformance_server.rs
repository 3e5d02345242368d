//! The tools the MCP conformance suite's server scenarios call, served over streamable
//! HTTP on loopback. Prints its URL on the first line of stdout and serves until stdin
//! closes.
//!
//! Scenarios that need what the server cannot do yet (log notifications, sampling,
//! elicitation, resources) have no tool here; the suite's baseline in
//! `tests/interop/conformance-baseline.yml` lists them.

use std::time::Duration;

use aleph_tools::mcp::{McpPrompt, McpServer, PromptMessage};
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

/// A 1×1 red PNG.
const RED_PIXEL: &[u8] = aleph_tools_tests::RED_PIXEL;

/// Eight samples of silence, as WAV.
const SILENCE: &[u8] = include_bytes!("../silence.wav");

/// Returns a one-pixel PNG.
#[tool(register = false)]
fn test_image_content() -> ToolOutput {
    ToolOutput::image(RED_PIXEL, "image/png")
}

/// Returns a short WAV sound.
#[tool(register = false)]
fn test_audio_content() -> ToolOutput {
    ToolOutput::audio(SILENCE, "audio/wav")
}

/// Returns a text resource carried inline.
#[tool(register = false)]
fn test_embedded_resource() -> ToolOutput {
    ToolOutput::blocks([Content::embedded_text(
        "test://embedded-resource",
        "text/plain",
        "This is an embedded resource content.",
    )])
}

/// Returns text, an image and a resource together.
#[tool(register = false)]
fn test_multiple_content_types() -> ToolOutput {
    ToolOutput::text("Multiple content types test:")
        .with_image(RED_PIXEL, "image/png")
        .with(Content::embedded_text(
            "test://mixed-content-resource",
            "application/json",
            r#"{"test":"data","value":123}"#,
        ))
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

/// The prompts the suite's prompt scenarios fetch.
fn prompts() -> Vec<McpPrompt> {
    vec![
        McpPrompt::text(
            "test_simple_prompt",
            "A prompt without arguments.",
            "This is a simple prompt for testing.",
        ),
        McpPrompt::new(
            "test_prompt_with_arguments",
            "A prompt with two arguments.",
            |args| {
                vec![PromptMessage::user(format!(
                    "Prompt with arguments: arg1='{}', arg2='{}'",
                    args.text("arg1"),
                    args.text("arg2")
                ))]
            },
        )
        .with_argument("arg1", "First test argument", true)
        .with_argument("arg2", "Second test argument", true),
        McpPrompt::new(
            "test_prompt_with_embedded_resource",
            "A prompt that embeds a resource.",
            |args| {
                vec![
                    PromptMessage::user(Content::embedded_text(
                        args.text("resourceUri"),
                        "text/plain",
                        "Embedded resource content for testing.",
                    )),
                    PromptMessage::user("Please process the embedded resource above."),
                ]
            },
        )
        .with_argument("resourceUri", "URI of the resource to embed", true),
        McpPrompt::new("test_prompt_with_image", "A prompt with an image.", |_| {
            vec![
                PromptMessage::user(Content::image(RED_PIXEL, "image/png")),
                PromptMessage::user("Please analyze the image above."),
            ]
        }),
    ]
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let tools = AlephToolServer::builder()
        .with_tool(TestSimpleTextTool)
        .with_tool(TestErrorHandlingTool)
        .with_tool(TestToolWithProgressTool)
        .with_tool(TestImageContentTool)
        .with_tool(TestAudioContentTool)
        .with_tool(TestEmbeddedResourceTool)
        .with_tool(TestMultipleContentTypesTool)
        .with_dyn_tool(SchemaKeywords)
        .build()?;
    let http = McpServer::new(&tools)
        .with_name("aleph-tools-conformance", env!("CARGO_PKG_VERSION"))
        .with_schema_refs(Refs::Keep)
        .with_prompts(prompts())
        .serve_http("127.0.0.1:0")
        .await?;
    println!("{}", http.url());
    // Serve until whoever started this closes its end of stdin.
    let mut rest = Vec::new();
    tokio::io::stdin().read_to_end(&mut rest).await?;
    http.shutdown().await?;
    Ok(())
}
