//! The "MCP" chapter, rich results, prompts, resources and logging: a tool that answers with
//! text and an image and logs as it works, served over MCP with a prompt and resources; the
//! program then wraps that server (as a client would see it), calls the tool, shows the
//! image arriving intact, prints how each model API gets it, and with rmcp's client fetches
//! the prompt, reads a resource, subscribes to it and hears the tool's log message. Run with
//! `cargo run -p guide-examples --bin mcp_content`.

// MCP's 2026-07-28 revision deprecates logging, and rmcp marks its types so; clients of the
// earlier revisions use it.
#![allow(deprecated)]

use std::sync::{Arc, Mutex};

use aleph_tools::mcp::rmcp::model::{
    GetPromptRequestParams, LoggingLevel, LoggingMessageNotificationParam,
    ReadResourceRequestParams, ResourceContents as McpContents, ResourceUpdatedNotificationParam,
    SetLevelRequestParams, SubscribeRequestParams,
};
use aleph_tools::mcp::rmcp::service::NotificationContext;
use aleph_tools::mcp::rmcp::{ClientHandler, RoleClient, ServiceExt};
use aleph_tools::mcp::{
    McpConnection, McpEndpoint, McpPrompt, McpResource, McpResourceTemplate, McpServer,
    PromptMessage,
};
use aleph_tools::prelude::*;
use aleph_tools::provider::Provider;
use aleph_tools::{LogLevel, ResourceContents};
use serde_json::json;

/// A 1×1 PNG, the smallest picture there is.
const PIXEL: &[u8] = &[
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x02, 0x00, 0x00, 0x00, 0x90, 0x77, 0x53,
    0xde, 0x00, 0x00, 0x00, 0x0c, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0xf8, 0xcf, 0xc0, 0x00,
    0x00, 0x03, 0x01, 0x01, 0x00, 0xc9, 0xfe, 0x92, 0xef, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e,
    0x44, 0xae, 0x42, 0x60, 0x82,
];

/// Draw the sales chart of a quarter.
#[tool(register = false, read_only, title = "Sales chart")]
fn sales_chart(
    /// The quarter, such as "Q3"
    quarter: String,
    progress: Progress,
) -> ToolOutput {
    progress.log(LogLevel::Notice, format!("drawing {quarter}"));
    ToolOutput::text(format!("Sales in {quarter}:"))
        .with_image(PIXEL, "image/png")
        .with_data(json!({ "quarter": quarter, "total": 12 }))
}

fn mcp_server() -> Result<McpServer, Box<dyn std::error::Error>> {
    let tools = AlephToolServer::builder()
        .with_tool(SalesChartTool)
        .build()?;
    let summary = McpPrompt::new("summarize", "Summarize a quarter's sales.", |args| {
        vec![PromptMessage::user(format!(
            "Call sales_chart for {} and summarize it in two sentences.",
            args.text("quarter")
        ))]
    })
    .with_argument("quarter", "The quarter, such as \"Q3\"", true);
    let reports = McpResourceTemplate::new(
        "sales://{quarter}/report",
        "report",
        |uri, params| async move {
            let quarter = params.get("quarter").unwrap_or_default();
            Ok(vec![ResourceContents::text(
                uri,
                "text/plain",
                format!("{quarter}: 12 sold"),
            )])
        },
    )?
    .with_description("The sales report of a quarter.");
    Ok(McpServer::new(&tools)
        .with_prompts(summary)
        .with_resources(McpResource::text(
            "sales://targets",
            "targets",
            "text/plain",
            "Sell 10 a quarter.",
        ))
        .with_resources(reports))
}

/// A client that keeps what the server tells it.
#[derive(Clone, Default)]
struct Listener(Arc<Mutex<Vec<String>>>);

impl ClientHandler for Listener {
    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let line = format!(
            "log {:?} from {:?}: {}",
            params.level, params.logger, params.data
        );
        self.0.lock().unwrap().push(line);
    }

    async fn on_resource_updated(
        &self,
        params: ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.0
            .lock()
            .unwrap()
            .push(format!("updated {}", params.uri));
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = mcp_server()?;
    let http = server.clone().serve_http("127.0.0.1:0").await?;

    // The tool as any MCP client sees it, wrapped into another tool server.
    let agent = AlephToolServer::new();
    let _remote = McpConnection::builder(McpEndpoint::url(http.url()))
        .prefix("shop")
        .connect(&agent)
        .await?;
    let definition = agent.tools().get("shop_sales_chart").ok_or("not listed")?;
    println!("listed: {} ({:?})", definition.name, definition.title);
    let chart = agent
        .call("shop_sales_chart", json!({ "quarter": "Q3" }))
        .await;
    assert!(matches!(chart.content[1], Content::Image(_)), "{chart:?}");
    println!("the model reads: {:?}", chart.model_text());
    println!("data: {}", chart.output);

    // How each model API gets the same result.
    for provider in [
        Provider::Anthropic,
        Provider::OpenAiResponses,
        Provider::OpenAiChat,
    ] {
        let response = match provider {
            Provider::Anthropic => json!({ "content": [
                { "type": "tool_use", "id": "toolu_1", "name": "shop_sales_chart", "input": { "quarter": "Q3" } }
            ] }),
            Provider::OpenAiResponses => json!({ "output": [
                { "type": "function_call", "call_id": "call_1", "name": "shop_sales_chart", "arguments": "{\"quarter\":\"Q3\"}" }
            ] }),
            _ => json!({ "choices": [{ "message": { "role": "assistant", "tool_calls": [
                { "id": "call_1", "type": "function", "function": { "name": "shop_sales_chart", "arguments": "{\"quarter\":\"Q3\"}" } }
            ] } }] }),
        };
        let round = agent.run_tool_calls(provider, &response).await?;
        println!("{}: {}", provider.name(), round.messages[0]);
    }

    // The prompt, the resources and the log, with rmcp's client.
    let heard = Listener::default();
    let client = heard
        .clone()
        .serve(
            aleph_tools::mcp::rmcp::transport::StreamableHttpClientTransport::from_uri(http.url()),
        )
        .await?;
    let mut arguments = serde_json::Map::new();
    arguments.insert("quarter".into(), json!("Q3"));
    let prompt = client
        .get_prompt(GetPromptRequestParams::new("summarize").with_arguments(arguments))
        .await?;
    println!("prompt: {}", serde_json::to_string(&prompt.messages)?);

    let report = client
        .read_resource(ReadResourceRequestParams::new("sales://Q3/report"))
        .await?;
    if let Some(McpContents::TextResourceContents { text, .. }) = report.contents.first() {
        println!("resource: {text}");
    }
    client
        .subscribe(SubscribeRequestParams::new("sales://targets"))
        .await?;
    server.resource_updated("sales://targets");
    client
        .set_level(SetLevelRequestParams::new(LoggingLevel::Notice))
        .await?;
    let mut arguments = serde_json::Map::new();
    arguments.insert("quarter".into(), json!("Q4"));
    client
        .call_tool(
            aleph_tools::mcp::rmcp::model::CallToolRequestParams::new("sales_chart")
                .with_arguments(arguments),
        )
        .await?;
    // Both notices come before the call's result; give the handlers a moment to run.
    for _ in 0..100 {
        if heard.0.lock().unwrap().len() >= 2 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    let heard = heard.0.lock().unwrap().clone();
    for line in &heard {
        println!("{line}");
    }
    assert!(
        heard.contains(&"updated sales://targets".to_owned()),
        "{heard:?}"
    );
    assert!(
        heard.iter().any(|line| line.contains("drawing Q4")),
        "{heard:?}"
    );
    client.cancel().await?;
    http.shutdown().await?;
    Ok(())
}
