//! Round trips: a provider's response in, its tool-result messages out.

use super::*;

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
