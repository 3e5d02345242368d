//! Tools asking their MCP client, at the protocol's edges: a client that cannot answer, and
//! 2026-07-28 `input_required` rounds driven by hand with wrong, partial and garbage
//! answers. (The official SDKs' clients answer in `mcp_serve`.)

use aleph_tools::mcp::McpServer;
use aleph_tools::mcp::rmcp::ServiceExt;
use aleph_tools::mcp::rmcp::model::CallToolRequestParams;
use aleph_tools::prelude::*;
use aleph_tools::{Elicitation, SamplingRequest};
use aleph_tools_tests::RawMcp;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

#[derive(Deserialize, JsonSchema)]
struct Name {
    /// Your name
    name: String,
}

/// Asks for a name.
#[tool(register = false)]
async fn greet(ctx: &ToolContext) -> Result<String, ToolError> {
    Ok(match ctx.elicit::<Name>("Who are you?").await? {
        Elicitation::Accept(Name { name }) => format!("hello {name}"),
        other => other.action().to_owned(),
    })
}

/// Asks two questions at once, then one more.
#[tool(register = false)]
async fn survey(ctx: &ToolContext) -> Result<String, ToolError> {
    let (first, second) = tokio::join!(ctx.elicit::<Name>("First?"), ctx.elicit::<Name>("Second?"));
    let model = ctx.sample("And the model?").await?;
    let name = |answer: Elicitation<Name>| answer.accepted().map_or("-".to_owned(), |n| n.name);
    Ok(format!(
        "{} {} {}",
        name(first?),
        name(second?),
        model.text()
    ))
}

/// Asks the model.
#[tool(register = false)]
async fn muse(ctx: &ToolContext) -> Result<String, ToolError> {
    Ok(ctx
        .sample(SamplingRequest::new("Say something"))
        .await?
        .text())
}

fn server() -> McpServer {
    let tools = AlephToolServer::builder()
        .with_tool(GreetTool)
        .with_tool(SurveyTool)
        .with_tool(MuseTool)
        .build()
        .unwrap();
    McpServer::new(&tools)
}

fn text_of(result: &Value) -> String {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handshake_client_without_the_capabilities_gets_a_tool_error_naming_them() {
    let (client, ours) = tokio::io::duplex(64 * 1024);
    let (read, write) = tokio::io::split(ours);
    tokio::spawn(server().serve(read, write));
    // rmcp's client as `()` declares no capabilities.
    let client = ().serve(tokio::io::split(client)).await.unwrap();
    let greeted = client
        .call_tool(CallToolRequestParams::new("greet"))
        .await
        .unwrap();
    assert_eq!(greeted.is_error, Some(true));
    let text = serde_json::to_value(&greeted.content).unwrap()[0]["text"].clone();
    assert!(
        text.as_str()
            .unwrap()
            .contains("did not declare the `elicitation` capability"),
        "{text}"
    );
    let mused = client
        .call_tool(CallToolRequestParams::new("muse"))
        .await
        .unwrap();
    let text = serde_json::to_value(&mused.content).unwrap()[0]["text"].clone();
    assert!(
        text.as_str()
            .unwrap()
            .contains("did not declare the `sampling` capability"),
        "{text}"
    );
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2026_client_without_the_capability_gets_a_tool_error_not_a_question() {
    let mut raw = RawMcp::start(server(), json!({}));
    let result = raw.call("greet", json!({})).await;
    assert_eq!(result["isError"], true, "{result}");
    assert!(
        text_of(&result).contains("`elicitation` capability"),
        "{result}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rounds_survive_wrong_partial_and_garbage_answers() {
    let mut raw = RawMcp::start(server(), json!({ "elicitation": {}, "sampling": {} }));

    // Two questions asked together go out together.
    let first = raw.call("survey", json!({})).await;
    assert_eq!(first["resultType"], "input_required", "{first}");
    let state = first["requestState"].as_str().unwrap().to_owned();
    let asks = first["inputRequests"].as_object().unwrap();
    let mut keys: Vec<&String> = asks.keys().collect();
    keys.sort();
    assert_eq!(keys, ["elicitation-1", "elicitation-2"], "{first}");
    assert_eq!(asks["elicitation-1"]["method"], "elicitation/create");
    assert_eq!(
        asks["elicitation-1"]["params"]["requestedSchema"]["properties"]["name"]["description"],
        "Your name"
    );

    // A state nobody gave, and the right state for another tool, are refused; the call
    // keeps waiting.
    let made_up = raw
        .call(
            "survey",
            json!({ "requestState": "nope", "inputResponses": {} }),
        )
        .await;
    assert_eq!(made_up["code"], -32602, "{made_up}");
    let other_tool = raw
        .call(
            "greet",
            json!({ "requestState": state, "inputResponses": {} }),
        )
        .await;
    assert_eq!(other_tool["code"], -32602, "{other_tool}");
    assert!(
        other_tool["message"]
            .as_str()
            .unwrap()
            .contains("belongs to a call of `survey`")
    );

    // One answer of two: the other question is asked again.
    let accept = |name: &str| json!({ "action": "accept", "content": { "name": name } });
    let partial = raw
        .call(
            "survey",
            json!({ "requestState": state, "inputResponses": { "elicitation-1": accept("Ada"), "unasked": 1 } }),
        )
        .await;
    assert_eq!(partial["resultType"], "input_required", "{partial}");
    let state = partial["requestState"].as_str().unwrap().to_owned();
    let keys: Vec<&String> = partial["inputRequests"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(keys, ["elicitation-2"], "{partial}");

    // The second answer lets the tool go on to its sampling question.
    let sampling = raw
        .call(
            "survey",
            json!({ "requestState": state, "inputResponses": { "elicitation-2": { "action": "decline" } } }),
        )
        .await;
    let state = sampling["requestState"].as_str().unwrap().to_owned();
    let ask = &sampling["inputRequests"]["sampling-3"];
    assert_eq!(ask["method"], "sampling/createMessage", "{sampling}");
    assert_eq!(
        ask["params"]["messages"][0]["content"]["text"],
        "And the model?"
    );

    // Garbage for an answer fails the tool, with the reason.
    let done = raw
        .call(
            "survey",
            json!({ "requestState": state, "inputResponses": { "sampling-3": 42 } }),
        )
        .await;
    assert_eq!(done["isError"], true, "{done}");
    assert!(text_of(&done).contains("not a sampling result"), "{done}");

    // A finished call's state is gone.
    let again = raw
        .call(
            "survey",
            json!({ "requestState": state, "inputResponses": {} }),
        )
        .await;
    assert_eq!(again["code"], -32602, "{again}");

    // And the server serves on: a whole round trip that succeeds.
    let first = raw.call("greet", json!({})).await;
    let state = first["requestState"].as_str().unwrap().to_owned();
    let done = raw
        .call(
            "greet",
            json!({ "requestState": state, "inputResponses": { "elicitation-1": accept("Lin") } }),
        )
        .await;
    assert_eq!(text_of(&done), "hello Lin", "{done}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sampling_round_carries_the_models_answer() {
    let mut raw = RawMcp::start(server(), json!({ "sampling": {} }));
    let first = raw.call("muse", json!({})).await;
    let state = first["requestState"].as_str().unwrap().to_owned();
    let answer = json!({ "role": "assistant", "content": { "type": "text", "text": "hi there" }, "model": "m" });
    let done = raw
        .call(
            "muse",
            json!({ "requestState": state, "inputResponses": { "sampling-1": answer } }),
        )
        .await;
    assert_eq!(text_of(&done), "hi there", "{done}");
}
