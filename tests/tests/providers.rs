//! Provider tool lists and round trips: responses written from each provider's documented
//! format, run through the server, answered in the provider's format.

// Async tools without awaits are the point here.
#![allow(clippy::unused_async)]

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use aleph_tools::ToolServerBuilder;
use aleph_tools::prelude::*;
use aleph_tools::provider::{Provider, SizeReport, estimate_tokens};
use aleph_tools::schema::Dialect;
use aleph_tools::{CoercionKind, RegistryError, ToolErrorKind, ToolFilter};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::sync::Barrier;

/// A temperature unit.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Unit {
    /// Degrees Celsius
    Celsius,
    /// Degrees Fahrenheit
    Fahrenheit,
}

/// The weather in one place.
#[derive(Serialize, JsonSchema)]
pub struct Weather {
    /// The city asked about
    city: String,
    /// Temperature in `unit`
    temperature: f64,
    /// The unit of `temperature`
    unit: Unit,
}

/// Get the current weather in a city.
#[tool(register = false, read_only, open_world)]
async fn get_weather(
    /// City name, such as "Lisbon"
    city: String,
    /// Unit to report in; Celsius when absent
    unit: Option<Unit>,
    /// How many decimals to keep
    #[arg(default = 1)]
    decimals: u8,
) -> Result<Weather, String> {
    if city.is_empty() {
        return Err("`city` is empty; name a city".to_owned());
    }
    let unit = unit.unwrap_or(Unit::Celsius);
    let celsius = 21.456_f64;
    let value = match unit {
        Unit::Celsius => celsius,
        Unit::Fahrenheit => celsius * 9.0 / 5.0 + 32.0,
    };
    let scale = 10_f64.powi(i32::from(decimals));
    Ok(Weather {
        city,
        temperature: (value * scale).round() / scale,
        unit,
    })
}

/// Add two integers.
#[tool(register = false, idempotent)]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

/// Attach labels to a document.
#[tool(register = false, destructive)]
fn label(
    /// Document id
    id: String,
    /// Labels, name to value
    labels: HashMap<String, String>,
) -> String {
    format!("{} labels on {id}", labels.len())
}

/// Wait for the other call of the pair, so the pair only finishes when run concurrently.
#[tool(register = false)]
async fn rendezvous(barrier: State<Arc<Barrier>>, tag: String) -> String {
    barrier.wait().await;
    tag
}

fn server() -> AlephToolServer {
    builder().build().unwrap()
}

fn builder() -> ToolServerBuilder {
    AlephToolServer::builder()
        .with_tool(GetWeatherTool)
        .with_tool(AddTool)
        .with_tool(LabelTool)
}

async fn round(
    server: &AlephToolServer,
    provider: Provider,
    response: Value,
) -> aleph_tools::provider::ToolRound {
    server.run_tool_calls(provider, &response).await.unwrap()
}

// ---------------------------------------------------------------------------------------
// Tool lists.

#[test]
fn openai_chat_tools_are_function_entries_strict_where_possible() {
    let tools = server().tools_for(Provider::OpenAiChat).unwrap();
    let names: Vec<&str> = tools
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["add", "get_weather", "label"], "sorted by name");
    for tool in tools.as_array().unwrap() {
        assert_eq!(tool["type"], "function");
        let function = &tool["function"];
        assert!(
            function["description"]
                .as_str()
                .is_some_and(|d| !d.is_empty())
        );
        assert_eq!(function["parameters"]["type"], "object");
    }
    let weather = &tools[1]["function"];
    assert_eq!(weather["strict"], true);
    assert_eq!(
        weather["parameters"]["required"],
        json!(["city", "decimals", "unit"])
    );
    assert_eq!(weather["parameters"]["additionalProperties"], false);
    // A map cannot be strict: that tool goes without strict mode, with its plain schema.
    let label = &tools[2]["function"];
    assert_eq!(label["strict"], false);
    assert_eq!(
        label["parameters"]["properties"]["labels"]["additionalProperties"]["type"],
        "string"
    );
}

#[test]
fn openai_responses_tools_are_flat_function_entries() {
    let tools = server().tools_for(Provider::OpenAiResponses).unwrap();
    let add = &tools[0];
    assert_eq!(add["type"], "function");
    assert_eq!(add["name"], "add");
    assert_eq!(add["strict"], true);
    assert_eq!(add["parameters"]["required"], json!(["a", "b"]));
    assert!(add.get("function").is_none());
}

#[test]
fn anthropic_tools_carry_input_schema() {
    let tools = server().tools_for(Provider::Anthropic).unwrap();
    let weather = &tools[1];
    assert_eq!(
        weather.as_object().unwrap().keys().collect::<Vec<_>>(),
        ["description", "input_schema", "name"]
    );
    assert_eq!(weather["input_schema"]["required"], json!(["city"]));
    // Optional arguments are optional by `required`, without a null branch.
    assert!(
        weather["input_schema"]["properties"]["unit"]
            .get("anyOf")
            .is_none()
    );
}

#[test]
fn gemini_tools_are_one_entry_of_function_declarations() {
    let server = builder().with_tool(NoArgsTool).build().unwrap();
    let tools = server.tools_for(Provider::Gemini).unwrap();
    let tools = tools.as_array().unwrap();
    assert_eq!(tools.len(), 1);
    let declarations = tools[0]["functionDeclarations"].as_array().unwrap();
    assert_eq!(declarations.len(), 4);
    let weather = declarations
        .iter()
        .find(|d| d["name"] == "get_weather")
        .unwrap();
    assert_eq!(weather["parameters"]["type"], "OBJECT");
    assert_eq!(
        weather["parameters"]["properties"]["unit"]["enum"],
        json!(["celsius", "fahrenheit"])
    );
    // Gemini refuses an OBJECT without properties: no `parameters` for a tool without any.
    let ping = declarations
        .iter()
        .find(|d| d["name"] == "no_args")
        .unwrap();
    assert!(ping.get("parameters").is_none());
}

/// Answer with nothing.
#[tool(register = false)]
fn no_args() -> &'static str {
    "pong"
}

#[test]
fn mcp_tools_carry_output_schemas_and_annotations() {
    let tools = server().tools_for(Provider::Mcp).unwrap();
    let weather = &tools[1];
    assert_eq!(weather["inputSchema"]["type"], "object");
    assert!(
        !weather["inputSchema"].to_string().contains("$ref"),
        "inlined by default"
    );
    assert_eq!(weather["outputSchema"]["type"], "object");
    assert_eq!(
        weather["outputSchema"]["properties"]["unit"]["enum"],
        json!(["celsius", "fahrenheit"])
    );
    assert_eq!(
        weather["annotations"],
        json!({ "readOnlyHint": true, "openWorldHint": true })
    );
    // An output that is not an object is wrapped, as MCP wants an object.
    let add = &tools[0];
    assert_eq!(
        add["outputSchema"]["properties"]["result"]["type"],
        "integer"
    );
    assert_eq!(add["outputSchema"]["required"], json!(["result"]));
    assert_eq!(add["annotations"], json!({ "idempotentHint": true }));
}

#[test]
fn filtered_tools_are_left_out_of_every_list() {
    let server = builder()
        .with_filter(ToolFilter::from_json(r#"{ "blocked": ["label"] }"#).unwrap())
        .build()
        .unwrap();
    for provider in Provider::ALL {
        let tools = server.tools_for(provider).unwrap();
        assert!(
            !tools.to_string().contains("\"label\""),
            "{provider:?}: {tools}"
        );
    }
}

#[test]
fn strict_tools_whose_schema_cannot_be_strict_are_refused() {
    #[derive(Deserialize, JsonSchema)]
    struct Options {
        extra: HashMap<String, String>,
    }
    /// Strict, with a map hidden inside a struct.
    #[tool(register = false, strict)]
    fn hidden_map(options: Options) -> usize {
        options.extra.len()
    }
    let err = AlephToolServer::builder()
        .with_tool(HiddenMapTool)
        .build()
        .err()
        .unwrap();
    let RegistryError::InvalidDefinition { name, reason } = &err else {
        panic!("{err:?}");
    };
    assert_eq!(name, "hidden_map");
    assert!(
        reason.contains("/properties/options/properties/extra")
            || reason.contains("/$defs/Options/properties/extra"),
        "{reason}"
    );
    let err = AlephToolServer::new().add(HiddenMapTool).unwrap_err();
    assert!(err.to_string().contains("strict"), "{err}");
}

#[test]
fn a_recursive_tool_is_an_error_for_gemini_only() {
    #[derive(Deserialize, JsonSchema)]
    struct Node {
        name: String,
        children: Vec<Node>,
    }
    /// Store a tree.
    #[tool(register = false)]
    fn store_tree(root: Node) -> usize {
        root.children.len() + usize::from(!root.name.is_empty())
    }
    let server = AlephToolServer::builder()
        .with_tool(StoreTreeTool)
        .build()
        .unwrap();
    let err = server.tools_for(Provider::Gemini).unwrap_err();
    assert_eq!(err.tool, "store_tree");
    assert!(err.to_string().contains("recursive type `Node`"), "{err}");
    for provider in [Provider::OpenAiChat, Provider::Anthropic, Provider::Mcp] {
        let tools = server.tools_for(provider).unwrap();
        assert!(
            tools.to_string().contains("#/$defs/Node"),
            "{provider:?} keeps the recursion as a $ref"
        );
    }
}

// ---------------------------------------------------------------------------------------
// Round trips.

#[tokio::test]
async fn openai_chat_round_trip() {
    let server = server();
    // A chat completion with three calls: good, unknown name, arguments cut short.
    let response = json!({
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "choices": [{
            "index": 0,
            "finish_reason": "tool_calls",
            "message": {
                "role": "assistant",
                "content": null,
                "tool_calls": [
                    { "id": "call_a", "type": "function", "function": { "name": "get_weather", "arguments": "{\"city\":\"Lisbon\",\"unit\":\"fahrenheit\",\"decimals\":null}" } },
                    { "id": "call_b", "type": "function", "function": { "name": "get_wether", "arguments": "{\"city\":\"Porto\"}" } },
                    { "id": "call_c", "type": "function", "function": { "name": "add", "arguments": "{\"a\": 1, \"b\"" } }
                ]
            }
        }]
    });
    let round = round(&server, Provider::OpenAiChat, response).await;
    assert_eq!(round.calls.len(), 3);
    // Strict mode sent `null` for the defaulted argument: read as absent.
    assert!(round.results[0].success, "{:?}", round.results[0]);
    assert_eq!(round.results[0].output["temperature"], 70.6);
    assert_eq!(
        round.results[0].coercions[0].kind,
        CoercionKind::NullAsAbsent
    );
    assert_eq!(round.results[1].error_kind, Some(ToolErrorKind::NotFound));
    assert!(
        round.results[1]
            .error
            .as_ref()
            .unwrap()
            .contains("get_weather"),
        "suggests the right name"
    );
    assert_eq!(
        round.results[2].error_kind,
        Some(ToolErrorKind::InvalidArgs)
    );
    let message = round.results[2].error.as_ref().unwrap();
    assert!(
        message.contains("not valid JSON") && message.contains("{\\\"a\\\": 1"),
        "{message}"
    );

    assert_eq!(round.messages.len(), 3);
    for (message, id) in round.messages.iter().zip(["call_a", "call_b", "call_c"]) {
        assert_eq!(message["role"], "tool");
        assert_eq!(message["tool_call_id"], id);
        assert!(message["content"].is_string());
    }
    let first: Value =
        serde_json::from_str(round.messages[0]["content"].as_str().unwrap()).unwrap();
    assert_eq!(first["city"], "Lisbon");
}

#[tokio::test]
async fn openai_responses_round_trip() {
    let server = server();
    let response = json!({
        "id": "resp_1",
        "object": "response",
        "output": [
            { "type": "reasoning", "id": "rs_1", "summary": [] },
            { "type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "add", "arguments": "{\"a\":2,\"b\":40}", "status": "completed" },
            { "type": "function_call", "id": "fc_2", "call_id": "call_2", "name": "add", "arguments": "[1, 2]", "status": "completed" }
        ]
    });
    let round = round(&server, Provider::OpenAiResponses, response).await;
    assert_eq!(round.calls.len(), 2, "the reasoning item is not a call");
    assert_eq!(
        round.messages,
        vec![
            json!({ "type": "function_call_output", "call_id": "call_1", "output": "42" }),
            json!({ "type": "function_call_output", "call_id": "call_2", "output": round.results[1].error.clone().unwrap() }),
        ]
    );
    assert!(
        round.results[1]
            .error
            .as_ref()
            .unwrap()
            .contains("an array of 2 items"),
        "{:?}",
        round.results[1].error
    );
}

#[tokio::test]
async fn anthropic_round_trip() {
    let server = server();
    let response = json!({
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "stop_reason": "tool_use",
        "content": [
            { "type": "text", "text": "Checking two things." },
            { "type": "tool_use", "id": "toolu_1", "name": "GetWeather", "input": { "city": "Oslo" } },
            { "type": "tool_use", "id": "toolu_2", "name": "get_weather", "input": { "city": "Oslo", "unit": "kelvin" } },
            { "type": "tool_use", "id": "toolu_3", "name": "add", "input": "1 + 2" }
        ]
    });
    let round = round(&server, Provider::Anthropic, response).await;
    assert_eq!(round.calls.len(), 3);
    assert!(
        round.results[0].success,
        "the name was repaired: {:?}",
        round.results[0]
    );
    assert_eq!(
        round.messages.len(),
        1,
        "one user message holds every result"
    );
    let message = &round.messages[0];
    assert_eq!(message["role"], "user");
    let blocks = message["content"].as_array().unwrap();
    assert_eq!(blocks.len(), 3);
    assert_eq!(blocks[0]["tool_use_id"], "toolu_1");
    assert!(blocks[0].get("is_error").is_none());
    assert_eq!(blocks[1]["tool_use_id"], "toolu_2");
    assert_eq!(blocks[1]["is_error"], true);
    let text = blocks[1]["content"].as_str().unwrap();
    assert!(
        text.contains("/unit") && text.contains("\"celsius\""),
        "names the argument and the allowed values: {text}"
    );
    assert_eq!(blocks[2]["is_error"], true);
    assert!(
        blocks[2]["content"]
            .as_str()
            .unwrap()
            .contains("the string \"1 + 2\"")
    );
}

#[tokio::test]
async fn gemini_round_trip() {
    let server = server();
    let response = json!({
        "candidates": [{
            "content": {
                "role": "model",
                "parts": [
                    { "functionCall": { "name": "get_weather", "args": { "city": "Rome", "decimals": 0 } } },
                    { "functionCall": { "id": "fc-2", "name": "add", "args": { "a": "3", "b": 4 } } },
                    { "functionCall": { "name": "no_such_tool" } }
                ]
            },
            "finishReason": "STOP"
        }]
    });
    let round = round(&server, Provider::Gemini, response).await;
    assert_eq!(round.messages.len(), 1);
    let parts = round.messages[0]["parts"].as_array().unwrap();
    assert_eq!(round.messages[0]["role"], "user");
    assert_eq!(parts.len(), 3);
    // Structured output goes back as structured data.
    assert_eq!(
        parts[0]["functionResponse"],
        json!({ "name": "get_weather", "response": { "output": { "city": "Rome", "temperature": 21.0, "unit": "celsius" } } })
    );
    // A string where a number goes is refused without argument repair, and the error says so.
    assert_eq!(parts[1]["functionResponse"]["id"], "fc-2");
    assert!(
        parts[1]["functionResponse"]["response"]["error"]
            .as_str()
            .unwrap()
            .contains("/a")
    );
    assert_eq!(parts[2]["functionResponse"]["name"], "no_such_tool");
    assert!(parts[2]["functionResponse"]["response"]["error"].is_string());

    // With argument repair on, the same response succeeds where it can.
    let repaired = server.clone();
    let repairing = AlephToolServer::builder()
        .with_tool(AddTool)
        .with_argument_repair(true)
        .build()
        .unwrap();
    let round2 = repairing
        .run_tool_calls(Provider::Gemini, &json!({ "parts": [{ "functionCall": { "name": "add", "args": { "a": "3", "b": 4 } } }] }))
        .await
        .unwrap();
    assert_eq!(
        round2.messages[0]["parts"][0]["functionResponse"]["response"]["output"],
        7
    );
    drop(repaired);
}

#[tokio::test]
async fn mcp_round_trip_returns_text_and_structured_content() {
    let server = server();
    let request = json!({ "jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": { "name": "get_weather", "arguments": { "city": "Kyiv" } } });
    let round = round(&server, Provider::Mcp, request).await;
    let result = &round.messages[0];
    assert_eq!(result["isError"], false);
    assert_eq!(result["structuredContent"]["city"], "Kyiv");
    let text: Value = serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(text, result["structuredContent"]);
    assert_eq!(round.calls[0].id.as_deref(), Some("7"));

    let add = round_for(
        &server,
        json!({ "name": "add", "arguments": { "a": 1, "b": 2 } }),
    )
    .await;
    assert_eq!(
        add["structuredContent"],
        json!({ "result": 3 }),
        "wrapped like its output schema"
    );

    // Also when the name was repaired on the way.
    let add = round_for(
        &server,
        json!({ "name": "Add", "arguments": { "a": 1, "b": 2 } }),
    )
    .await;
    assert_eq!(add["structuredContent"], json!({ "result": 3 }));

    let failed = round_for(
        &server,
        json!({ "name": "get_weather", "arguments": { "city": "" } }),
    )
    .await;
    assert_eq!(failed["isError"], true);
    assert!(failed.get("structuredContent").is_none());
    assert_eq!(failed["content"][0]["text"], "`city` is empty; name a city");
}

async fn round_for(server: &AlephToolServer, params: Value) -> Value {
    let round = server.run_tool_calls(Provider::Mcp, &params).await.unwrap();
    round.messages[0].clone()
}

#[tokio::test]
async fn calls_run_concurrently_and_results_keep_call_order() {
    let server = AlephToolServer::builder()
        .with_tool(RendezvousTool)
        .with_state(Arc::new(Barrier::new(2)))
        .build()
        .unwrap();
    let response = json!({
        "content": [
            { "type": "tool_use", "id": "t1", "name": "rendezvous", "input": { "tag": "first" } },
            { "type": "tool_use", "id": "t2", "name": "rendezvous", "input": { "tag": "second" } }
        ]
    });
    // Run one after the other, the first call would wait on the barrier forever.
    let round = tokio::time::timeout(
        Duration::from_secs(30),
        server.run_tool_calls(Provider::Anthropic, &response),
    )
    .await
    .expect("the calls ran one after the other")
    .unwrap();
    let blocks = round.messages[0]["content"].as_array().unwrap();
    assert_eq!(blocks[0]["content"], "first");
    assert_eq!(blocks[1]["content"], "second");
}

#[tokio::test]
async fn the_whole_pipeline_applies_filter_and_confirmation() {
    /// Delete everything.
    #[tool(register = false, confirm)]
    fn wipe() -> &'static str {
        "wiped"
    }
    let server = builder()
        .with_tool(WipeTool)
        .with_filter(ToolFilter::from_json(r#"{ "blocked": ["label"] }"#).unwrap())
        .build()
        .unwrap();
    let response = json!({ "output": [
        { "type": "function_call", "call_id": "c1", "name": "label", "arguments": "{\"id\":\"d\",\"labels\":{}}" },
        { "type": "function_call", "call_id": "c2", "name": "wipe", "arguments": "{}" }
    ]});
    let round = round(&server, Provider::OpenAiResponses, response).await;
    assert_eq!(
        round.results[0].error_kind,
        Some(ToolErrorKind::PermissionDenied)
    );
    assert!(
        !round.results[1].success,
        "no confirmation handler: refused"
    );
    assert!(
        round.results[1]
            .error
            .as_ref()
            .unwrap()
            .contains("with_confirmation_handler")
    );
}

#[tokio::test]
async fn a_response_without_calls_is_an_empty_round() {
    let server = server();
    let cases = [
        (
            Provider::OpenAiChat,
            json!({ "choices": [{ "message": { "role": "assistant", "content": "Done." } }] }),
        ),
        (
            Provider::OpenAiResponses,
            json!({ "output": [{ "type": "message", "content": [] }] }),
        ),
        (
            Provider::Anthropic,
            json!({ "content": [{ "type": "text", "text": "Done." }] }),
        ),
        (
            Provider::Gemini,
            json!({ "candidates": [{ "content": { "parts": [{ "text": "Done." }] } }] }),
        ),
    ];
    for (provider, response) in cases {
        let round = server.run_tool_calls(provider, &response).await.unwrap();
        assert!(round.is_empty(), "{provider:?}");
        assert!(round.messages.is_empty(), "{provider:?}");
    }
}

#[tokio::test]
async fn responses_of_the_wrong_shape_are_errors() {
    let server = server();
    let cases = [
        (Provider::OpenAiChat, json!("not a response")),
        (
            Provider::OpenAiChat,
            json!({ "choices": [{ "message": { "tool_calls": {} } }] }),
        ),
        (
            Provider::OpenAiChat,
            json!({ "tool_calls": [{ "type": "function", "function": { "name": "add", "arguments": "{}" } }] }),
        ),
        (
            Provider::OpenAiChat,
            json!({ "tool_calls": [{ "id": "c" }] }),
        ),
        (Provider::OpenAiResponses, json!({ "output": "nope" })),
        (
            Provider::OpenAiResponses,
            json!([{ "type": "function_call", "name": "add", "arguments": "{}" }]),
        ),
        (Provider::Anthropic, json!({ "content": 5 })),
        (
            Provider::Anthropic,
            json!([{ "type": "tool_use", "name": "add", "input": {} }]),
        ),
        (Provider::Gemini, json!({ "candidates": [] })),
        (Provider::Mcp, json!([1, 2])),
    ];
    for (provider, response) in cases {
        let err = server
            .run_tool_calls(provider, &response)
            .await
            .unwrap_err();
        assert_eq!(err.provider, provider);
        assert!(err.to_string().starts_with("this is not a"), "{err}");
    }
    // The server still serves.
    assert!(server.call("add", json!({ "a": 1, "b": 1 })).await.success);
}

#[tokio::test]
async fn hostile_arguments_are_tool_errors() {
    let server = server();
    let huge = "x".repeat(1_000_000);
    let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    let arguments = [
        huge.clone(),
        deep,
        "null".to_owned(),
        "\"just a string\"".to_owned(),
        "{\"a\": 1, \"a\": 2, \"b\": 3}".to_owned(),
        "\u{0}".to_owned(),
        "{\"a\": 1e400, \"b\": 1}".to_owned(),
    ];
    let calls: Vec<Value> = arguments
        .iter()
        .enumerate()
        .map(|(i, a)| json!({ "id": format!("c{i}"), "type": "function", "function": { "name": "add", "arguments": a } }))
        .collect();
    let round = round(
        &server,
        Provider::OpenAiChat,
        json!({ "tool_calls": calls }),
    )
    .await;
    assert_eq!(round.results.len(), arguments.len());
    for (result, message) in round.results.iter().zip(&round.messages) {
        if result.success {
            continue;
        }
        let text = message["content"].as_str().unwrap();
        assert!(
            text.len() < 2_000,
            "the error quotes only the start of what was sent"
        );
    }
    assert!(!round.results[0].success);
}

// ---------------------------------------------------------------------------------------
// Sizes.

#[test]
fn size_report_covers_every_provider() {
    let server = server();
    let sizes = server.tool_list_sizes();
    assert_eq!(sizes.len(), Provider::ALL.len());
    for (size, provider) in sizes.iter().zip(Provider::ALL) {
        let size = size.as_ref().unwrap();
        assert_eq!(size.provider, provider);
        assert_eq!(size.tools, 3);
        let list = server.tools_for(provider).unwrap();
        assert_eq!(size.bytes, list.to_string().len());
        assert!(
            size.tokens > size.bytes / 8 && size.tokens < size.bytes,
            "{size:?}"
        );
    }
}

#[test]
fn token_estimate_counts_words_digits_and_marks() {
    assert_eq!(estimate_tokens(""), 0);
    assert_eq!(estimate_tokens("hello"), 1);
    assert_eq!(estimate_tokens("hello world"), 2);
    assert_eq!(estimate_tokens("123456"), 2);
    assert_eq!(estimate_tokens("\":\""), 2);
    assert_eq!(estimate_tokens("héllo"), 3);
    assert!(estimate_tokens(&"a".repeat(70)) == 10);
}

#[test]
fn sharing_defs_makes_a_list_with_repeated_types_smaller() {
    #[derive(Deserialize, JsonSchema)]
    struct Address {
        /// Street and number
        street: String,
        /// City name
        city: String,
        /// Postal code
        postal_code: String,
        /// ISO country code
        country: String,
    }
    /// Ship a parcel.
    #[tool(register = false)]
    fn ship(from: Address, to: Address, return_to: Option<Address>) -> String {
        let _ = (
            from.street,
            from.postal_code,
            to.city,
            return_to.map(|r| r.country),
        );
        "shipped".to_owned()
    }
    let definition = ShipTool.definition();
    let size = |dialect: Dialect| {
        let list = Provider::Mcp.tool_list([&definition], dialect).unwrap();
        SizeReport::measure(Provider::Mcp, &list)
    };
    let inline = size(Dialect::MCP);
    let smallest = size(Dialect::Mcp {
        refs: aleph_tools::schema::Refs::Smallest,
    });
    assert!(smallest.bytes < inline.bytes, "{smallest:?} vs {inline:?}");
    assert!(smallest.tokens < inline.tokens);
}
