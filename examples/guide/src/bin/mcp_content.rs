//! The "MCP" chapter, rich results and prompts: a tool that answers with text and an image,
//! served over MCP with a prompt; the program then wraps that server (as a client would see
//! it), calls the tool, shows the image arriving intact, and prints how each model API gets
//! it. Run with `cargo run -p guide-examples --bin mcp_content`.

use aleph_tools::mcp::rmcp::ServiceExt;
use aleph_tools::mcp::rmcp::model::GetPromptRequestParams;
use aleph_tools::mcp::{McpConnection, McpEndpoint, McpPrompt, McpServer, PromptMessage};
use aleph_tools::prelude::*;
use aleph_tools::provider::Provider;
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
) -> ToolOutput {
    ToolOutput::text(format!("Sales in {quarter}:"))
        .with_image(PIXEL, "image/png")
        .with_data(json!({ "quarter": quarter, "total": 12 }))
}

fn mcp_server() -> Result<McpServer, RegistryError> {
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
    Ok(McpServer::new(&tools).with_prompts(summary))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let http = mcp_server()?.serve_http("127.0.0.1:0").await?;

    // The tool as any MCP client sees it, wrapped into another tool server.
    let agent = AlephToolServer::new();
    let _remote = McpConnection::builder(McpEndpoint::url(http.url()))
        .prefix("shop")
        .connect(&agent)
        .await?;
    let definition = agent.definition("shop_sales_chart").ok_or("not listed")?;
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

    // The prompt, fetched with rmcp's client.
    let client = ()
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
    client.cancel().await?;
    http.shutdown().await?;
    Ok(())
}
