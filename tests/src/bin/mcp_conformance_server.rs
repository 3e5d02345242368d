//! The tools the MCP conformance suite's server scenarios call, served over streamable
//! HTTP on loopback. Prints its URL on the first line of stdout and serves until stdin
//! closes.
//!
//! Scenarios that need what the server cannot do yet would have no tool here; the suite's
//! baseline in `tests/interop/conformance-baseline.yml` lists them.

use std::time::Duration;

use aleph_tools::mcp::{McpPrompt, McpResource, McpResourceTemplate, McpServer, PromptMessage};
use aleph_tools::prelude::*;
use aleph_tools::schema::Refs;
use aleph_tools::{
    AlephToolDyn, AlephToolServer, BoxFuture, Elicitation, LogLevel, ResourceContents,
    SamplingRequest, ToolLogLayer,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::io::AsyncReadExt;
use tracing_subscriber::layer::SubscriberExt as _;

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

/// Logs three messages at info level, 50 ms apart: the first through the progress reporter,
/// the others through `tracing`, which [`ToolLogLayer`] forwards.
#[tool(register = false)]
async fn test_tool_with_logging(progress: Progress) -> String {
    progress.log(LogLevel::Info, "Tool execution started");
    tokio::time::sleep(Duration::from_millis(50)).await;
    tracing::info!("Tool processing data");
    tokio::time::sleep(Duration::from_millis(50)).await;
    tracing::info!("Tool execution completed");
    // As for progress: let the client's handlers see the last notification first.
    tokio::time::sleep(Duration::from_millis(20)).await;
    "logged three messages".to_owned()
}

/// Asks the client's model to answer the prompt.
#[tool(register = false)]
async fn test_sampling(
    /// The prompt to send to the model
    prompt: String,
    ctx: &ToolContext,
) -> Result<String, ToolError> {
    let answer = ctx
        .sample(SamplingRequest::new(prompt).with_max_tokens(100))
        .await?;
    Ok(format!("LLM response: {}", answer.text()))
}

/// The user's name and email, as the elicitation scenario asks for them.
#[derive(Deserialize, JsonSchema)]
struct Contact {
    /// User's response
    username: String,
    /// User's email address
    email: String,
}

/// Asks the user for a name and an email.
#[tool(register = false)]
async fn test_elicitation(
    /// The message to show the user
    message: String,
    ctx: &ToolContext,
) -> Result<String, ToolError> {
    Ok(match ctx.elicit::<Contact>(message).await? {
        Elicitation::Accept(Contact { username, email }) => {
            format!(
                "User response: action=accept, content={{username: {username}, email: {email}}}"
            )
        }
        other => format!("User response: action={}", other.action()),
    })
}

/// A form whose every field has a default (SEP-1034).
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
struct Defaults {
    #[serde(default = "john_doe")]
    name: String,
    #[serde(default = "thirty")]
    age: i64,
    #[serde(default = "ninety_five_and_a_half")]
    score: f64,
    #[serde(default)]
    status: Status,
    #[serde(default = "yes")]
    verified: bool,
}

#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Status {
    #[default]
    Active,
    Inactive,
    Pending,
}

fn john_doe() -> String {
    "John Doe".to_owned()
}

fn thirty() -> i64 {
    30
}

fn ninety_five_and_a_half() -> f64 {
    95.5
}

fn yes() -> bool {
    true
}

/// Asks for a form whose fields all have defaults.
#[tool(register = false)]
async fn test_elicitation_sep1034_defaults(ctx: &ToolContext) -> Result<String, ToolError> {
    let answer = ctx.elicit::<Defaults>("Check your details").await?;
    Ok(format!("Elicitation completed: {answer:?}"))
}

/// Asks for a form with every kind of choice (SEP-1330): titled choices need a schema of
/// their own, which `elicit_form` takes as JSON.
#[tool(register = false)]
async fn test_elicitation_sep1330_enums(ctx: &ToolContext) -> Result<String, ToolError> {
    let titled = |values: [(&str, &str); 3]| -> Vec<Value> {
        values
            .iter()
            .map(|(value, title)| json!({ "const": value, "title": title }))
            .collect()
    };
    let form = json!({
        "type": "object",
        "properties": {
            "untitledSingle": { "type": "string", "enum": ["option1", "option2", "option3"] },
            "titledSingle": {
                "type": "string",
                "oneOf": titled([("value1", "First Option"), ("value2", "Second Option"), ("value3", "Third Option")])
            },
            "legacyEnum": {
                "type": "string",
                "enum": ["opt1", "opt2", "opt3"],
                "enumNames": ["Option One", "Option Two", "Option Three"]
            },
            "untitledMulti": {
                "type": "array",
                "items": { "type": "string", "enum": ["option1", "option2", "option3"] }
            },
            "titledMulti": {
                "type": "array",
                "items": { "anyOf": titled([("value1", "First Choice"), ("value2", "Second Choice"), ("value3", "Third Choice")]) }
            }
        }
    });
    let answer = ctx.elicit_form("Pick your options", &form).await?;
    Ok(format!("Elicitation completed: {answer:?}"))
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

/// How long a request's event stream stays open before the server closes it for the client
/// to poll (SEP-1699).
const SSE_POLLING: Duration = Duration::from_secs(1);

/// Outlives its event stream: the server closes the stream two thirds of the way through,
/// and the answer reaches the client on the stream it reconnects with `Last-Event-ID`
/// (before that one is closed in turn).
#[tool(register = false)]
async fn test_reconnection() -> String {
    tokio::time::sleep(SSE_POLLING * 3 / 2).await;
    "Reconnection test completed".to_owned()
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

/// The resources the suite's resource scenarios read and subscribe to.
fn resources() -> anyhow::Result<(Vec<McpResource>, McpResourceTemplate)> {
    let fixed = vec![
        McpResource::text(
            "test://static-text",
            "static-text",
            "text/plain",
            "This is the content of the static text resource.",
        )
        .with_description("A fixed text resource."),
        McpResource::blob(
            "test://static-binary",
            "static-binary",
            "image/png",
            RED_PIXEL,
        )
        .with_description("A fixed PNG."),
        McpResource::text(
            "test://watched-resource",
            "watched-resource",
            "text/plain",
            "Watch me.",
        )
        .with_description("A resource to subscribe to."),
    ];
    let template = McpResourceTemplate::new(
        "test://template/{id}/data",
        "template-data",
        |uri, params| async move {
            let id = params.get("id").unwrap_or_default();
            let data =
                json!({ "id": id, "templateTest": true, "data": format!("Data for ID: {id}") });
            Ok(vec![ResourceContents::text(
                uri,
                "application/json",
                data.to_string(),
            )])
        },
    )?
    .with_description("Data for any id.")
    .with_mime_type("application/json");
    Ok((fixed, template))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing::subscriber::set_global_default(
        tracing_subscriber::registry().with(ToolLogLayer::new()),
    )?;
    let tools = AlephToolServer::builder()
        .with_tool(TestSimpleTextTool)
        .with_tool(TestErrorHandlingTool)
        .with_tool(TestToolWithProgressTool)
        .with_tool(TestToolWithLoggingTool)
        .with_tool(TestImageContentTool)
        .with_tool(TestAudioContentTool)
        .with_tool(TestEmbeddedResourceTool)
        .with_tool(TestMultipleContentTypesTool)
        .with_tool(TestSamplingTool)
        .with_tool(TestElicitationTool)
        .with_tool(TestElicitationSep1034DefaultsTool)
        .with_tool(TestElicitationSep1330EnumsTool)
        .with_tool(TestReconnectionTool)
        .with_dyn_tool(SchemaKeywords)
        .build()?;
    let (fixed, template) = resources()?;
    let http = McpServer::new(&tools)
        .with_name("aleph-tools-conformance", env!("CARGO_PKG_VERSION"))
        .with_schema_refs(Refs::Keep)
        .with_prompts(prompts())
        .with_resources(fixed)
        .with_resources(template)
        .with_sse_polling(SSE_POLLING)
        .serve_http("127.0.0.1:0")
        .await?;
    println!("{}", http.url());
    // Serve until whoever started this closes its end of stdin.
    let mut rest = Vec::new();
    tokio::io::stdin().read_to_end(&mut rest).await?;
    http.shutdown().await?;
    Ok(())
}
