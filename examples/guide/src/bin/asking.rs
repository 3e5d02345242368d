//! Tools that ask: a form for the user (`ToolContext::elicit`) and a completion from the
//! client's model (`ToolContext::sample`). In process the server's handlers answer; over
//! MCP the client does.
//!
//! Run with `cargo run -p guide-examples --bin asking`.
#![allow(deprecated)] // sampling, which MCP 2026-07-28 deprecates; rmcp marks its types so

use aleph_tools::mcp::McpServer;
use aleph_tools::mcp::rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, CreateMessageRequestParams,
    CreateMessageResult, ElicitRequestParams, ElicitResult, ElicitationAction, Implementation,
    SamplingMessage,
};
use aleph_tools::mcp::rmcp::service::RequestContext;
use aleph_tools::mcp::rmcp::{ClientHandler, ErrorData, RoleClient, ServiceExt};
use aleph_tools::prelude::*;
use aleph_tools::{Elicitation, ElicitationRequest, Sampled, SamplingRequest};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

/// What the user fills in before a deploy.
#[derive(Deserialize, JsonSchema)]
struct Approval {
    /// Who approves the deploy
    approver: String,
    /// Roll back on the first error
    #[serde(default = "yes")]
    rollback: bool,
}

fn yes() -> bool {
    true
}

/// Deploy a service, once someone approves it; the release note comes from the model.
#[tool(register = false)]
async fn deploy(service: String, ctx: &ToolContext) -> Result<String, ToolError> {
    let approval = match ctx.elicit::<Approval>(format!("Deploy {service}?")).await? {
        Elicitation::Accept(approval) => approval,
        Elicitation::Decline | Elicitation::Cancel => return Ok("not deployed".to_owned()),
    };
    let note = ctx
        .sample(
            SamplingRequest::new(format!("A one-line release note for {service}"))
                .with_max_tokens(40),
        )
        .await?;
    Ok(format!(
        "{service} deployed, approved by {} (rollback {}); note: {}",
        approval.approver,
        approval.rollback,
        note.text()
    ))
}

/// An MCP client that answers every form and writes every completion itself.
struct Client;

impl ClientHandler for Client {
    fn get_info(&self) -> ClientConfig {
        let capabilities = ClientCapabilities::builder()
            .enable_elicitation()
            .enable_sampling()
            .build();
        ClientConfig::new(capabilities, Implementation::new("guide-client", "1.0.0"))
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        if let ElicitRequestParams::FormElicitationParams { message, .. } = &request {
            println!("  client shows a form: {message}");
        }
        Ok(ElicitResult::new(ElicitationAction::Accept)
            .with_content(json!({ "approver": "grace" })))
    }

    async fn create_message(
        &self,
        request: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        println!(
            "  client's model gets {} message(s)",
            request.messages.len()
        );
        let answer = SamplingMessage::assistant_text("faster cold starts");
        Ok(CreateMessageResult::new(answer, "client-model".to_owned()))
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // In process: the application answers through the server's handlers.
    let tools = AlephToolServer::builder()
        .with_tool(DeployTool)
        .with_elicitation_handler(|request: ElicitationRequest| async move {
            println!("  the application asks: {}", request.message);
            let fields = json!({ "approver": "ada", "rollback": false });
            Ok(Elicitation::Accept(serde_json::from_value(fields)?))
        })
        .with_sampling_handler(|request: SamplingRequest| async move {
            println!(
                "  the application's model gets {} message(s)",
                request.messages.len()
            );
            Ok(Sampled::new("local-model", "smaller images"))
        })
        .build()?;
    println!("in process:");
    let result = tools.call("deploy", json!({ "service": "api" })).await;
    println!("  {}", result.output.as_str().unwrap_or_default());
    assert_eq!(
        result.output,
        "api deployed, approved by ada (rollback false); note: smaller images"
    );

    // Over MCP: the client answers, whatever handlers the server has.
    let (client_end, server_end) = tokio::io::duplex(64 * 1024);
    let (read, write) = tokio::io::split(server_end);
    tokio::spawn(McpServer::new(&tools).serve(read, write));
    let client = Client.serve(tokio::io::split(client_end)).await?;
    println!("over MCP:");
    let call = CallToolRequestParams::new("deploy").with_arguments(
        json!({ "service": "web" })
            .as_object()
            .cloned()
            .unwrap_or_default(),
    );
    let result = client.call_tool(call).await?;
    let text = serde_json::to_value(&result.content)?[0]["text"].clone();
    println!("  {}", text.as_str().unwrap_or_default());
    assert_eq!(
        text,
        "web deployed, approved by grace (rollback true); note: faster cold starts"
    );
    client.cancel().await?;
    Ok(())
}
