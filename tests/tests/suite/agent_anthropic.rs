//! The agent loop against Anthropic's Messages API, through the `Anthropic` client. No
//! Anthropic server can run here: a server on loopback answers as the API reference
//! documents (whole messages, and streams of `message_start`, `content_block_*`,
//! `message_delta` and `message_stop` events, cut into 7-byte pieces), and every test
//! asserts the bodies it received.

use aleph_tools_tests::chain;
use std::time::Duration;

use aleph_tools::agent::clients::Anthropic;
use aleph_tools::agent::{Agent, AgentError, Conversation, ModelError};
use aleph_tools::prelude::*;
use aleph_tools::provider::Provider;
use aleph_tools_tests::model_api::{ModelApi, Reply};
use serde_json::{Value, json};

/// Add two integers.
#[tool(register = false)]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

fn server() -> AlephToolServer {
    AlephToolServer::builder()
        .with_tool(AddTool)
        .build()
        .unwrap()
}

fn model(api: &ModelApi) -> Anthropic {
    Anthropic::new("claude-test")
        .base_url(&api.url)
        .api_key("sk-ant-test")
        .backoff(Duration::from_millis(20))
}

fn conversation() -> Conversation {
    let mut conversation = Conversation::new(Provider::Anthropic).with_system("Be brief.");
    conversation.push_user("What is 2 + 3?");
    conversation
}

/// The events of a streamed message holding `blocks` (each a whole block; text, thinking
/// and tool input are sent in two pieces), ending with `stop_reason`.
fn streamed(blocks: &[Value], stop_reason: &str) -> Vec<Value> {
    let mut events = vec![
        json!({ "type": "message_start", "message": { "id": "msg_1", "type": "message", "role": "assistant",
            "model": "claude-test", "content": [], "stop_reason": null, "stop_sequence": null,
            "usage": { "input_tokens": 40, "output_tokens": 1 } } }),
        json!({ "type": "ping" }),
    ];
    for (index, block) in blocks.iter().enumerate() {
        let (start, key, delta_type, text) = match block["type"].as_str().unwrap() {
            "text" => (
                json!({ "type": "text", "text": "" }),
                "text",
                "text_delta",
                block["text"].as_str().unwrap().to_owned(),
            ),
            "thinking" => (
                json!({ "type": "thinking", "thinking": "" }),
                "thinking",
                "thinking_delta",
                block["thinking"].as_str().unwrap().to_owned(),
            ),
            _ => (
                json!({ "type": "tool_use", "id": block["id"], "name": block["name"], "input": {} }),
                "partial_json",
                "input_json_delta",
                match &block["input"] {
                    Value::String(raw) => raw.clone(),
                    input => input.to_string(),
                },
            ),
        };
        events
            .push(json!({ "type": "content_block_start", "index": index, "content_block": start }));
        let cut = text
            .char_indices()
            .nth(text.chars().count() / 2)
            .map_or(0, |(i, _)| i);
        for piece in [&text[..cut], &text[cut..]] {
            events.push(json!({ "type": "content_block_delta", "index": index, "delta": { "type": delta_type, key: piece } }));
        }
        if block["type"] == "thinking" {
            events.push(json!({ "type": "content_block_delta", "index": index, "delta": { "type": "signature_delta", "signature": block["signature"] } }));
        }
        events.push(json!({ "type": "content_block_stop", "index": index }));
    }
    events.push(json!({ "type": "message_delta", "delta": { "stop_reason": stop_reason, "stop_sequence": null }, "usage": { "output_tokens": 15 } }));
    events.push(json!({ "type": "message_stop" }));
    events
}

#[tokio::test]
async fn a_multi_round_task_sends_exactly_the_documented_bodies() {
    let thinking =
        json!({ "type": "thinking", "thinking": "The user wants a sum; é.", "signature": "sig-1" });
    let bad = json!({ "type": "tool_use", "id": "toolu_1", "name": "add", "input": { "a": "two", "b": 3 } });
    let unknown = json!({ "type": "tool_use", "id": "toolu_2", "name": "sum_up", "input": {} });
    let good =
        json!({ "type": "tool_use", "id": "toolu_3", "name": "add", "input": { "a": 2, "b": 3 } });
    let text = json!({ "type": "text", "text": "2 + 3 = 5." });
    let api = ModelApi::start(vec![
        Reply::stream(streamed(
            &[thinking.clone(), bad.clone(), unknown.clone()],
            "tool_use",
        )),
        Reply::stream(streamed(std::slice::from_ref(&good), "tool_use")),
        Reply::stream(streamed(&[text], "end_turn")),
    ])
    .await;
    let server = server();
    let mut conversation = conversation();
    let outcome = Agent::new()
        .run(&server, &model(&api), &mut conversation)
        .await
        .unwrap();
    assert_eq!(outcome.text, "2 + 3 = 5.");
    assert_eq!(outcome.rounds, 3);
    assert_eq!(outcome.usage.input_tokens, 120);
    assert_eq!(outcome.usage.output_tokens, 45);
    assert_eq!(outcome.stop_reason.as_deref(), Some("end_turn"));

    let bad_text = server
        .call("add", json!({ "a": "two", "b": 3 }))
        .await
        .model_text()
        .into_owned();
    let unknown_text = server
        .call("sum_up", json!({}))
        .await
        .model_text()
        .into_owned();
    let user = json!({ "role": "user", "content": "What is 2 + 3?" });
    let turn_1 = json!({ "role": "assistant", "content": [thinking, bad, unknown] });
    let results_1 = json!({ "role": "user", "content": [
        { "type": "tool_result", "tool_use_id": "toolu_1", "content": bad_text, "is_error": true },
        { "type": "tool_result", "tool_use_id": "toolu_2", "content": unknown_text, "is_error": true }
    ] });
    let turn_2 = json!({ "role": "assistant", "content": [good] });
    let results_2 = json!({ "role": "user", "content": [
        { "type": "tool_result", "tool_use_id": "toolu_3", "content": "5" }
    ] });
    let tools = server.tools().for_provider(Provider::Anthropic);
    let body = |messages: Value| {
        json!({ "model": "claude-test", "max_tokens": 8192, "system": "Be brief.",
                "messages": messages, "tools": tools, "stream": true })
    };
    let bodies = api.bodies();
    assert_eq!(bodies[0], body(json!([user])));
    assert_eq!(bodies[1], body(json!([user, turn_1, results_1])));
    assert_eq!(
        bodies[2],
        body(json!([user, turn_1, results_1, turn_2, results_2]))
    );
    for request in api.received() {
        assert_eq!(request.path, "/v1/messages");
        assert_eq!(request.header("x-api-key"), Some("sk-ant-test"));
        assert_eq!(request.header("anthropic-version"), Some("2023-06-01"));
    }
    assert_eq!(conversation.messages().len(), 6);
}

#[tokio::test]
async fn tool_input_cut_short_goes_back_as_an_object_and_an_error() {
    let cut =
        json!({ "type": "tool_use", "id": "toolu_1", "name": "add", "input": "{\"a\": 2, \"b\"" });
    let api = ModelApi::start(vec![
        Reply::stream(streamed(&[cut], "max_tokens")),
        Reply::stream(streamed(
            &[json!({ "type": "text", "text": "Sorry." })],
            "end_turn",
        )),
    ])
    .await;
    let outcome = Agent::new()
        .run(&server(), &model(&api), &mut conversation())
        .await
        .unwrap();
    assert_eq!(outcome.text, "Sorry.");
    let messages = &api.bodies()[1]["messages"];
    assert_eq!(messages[1]["content"][0]["input"], json!({}));
    let result = &messages[2]["content"][0];
    assert_eq!(result["is_error"], true);
    let text = result["content"].as_str().unwrap();
    assert!(
        text.contains("not valid JSON") && text.contains("{\\\"a\\\": 2"),
        "{result}"
    );
}

#[tokio::test]
async fn overloaded_is_retried_and_stream_failures_are_reported() {
    let done = json!({ "content": [{ "type": "text", "text": "ok" }], "stop_reason": "end_turn" });
    let api = ModelApi::start(vec![
        Reply::status(529, json!({ "type": "error", "error": { "type": "overloaded_error", "message": "Overloaded" } })),
        Reply::ok(done),
    ])
    .await;
    let outcome = Agent::new()
        .run(
            &server(),
            &model(&api).streaming(false),
            &mut conversation(),
        )
        .await
        .unwrap();
    assert_eq!(outcome.text, "ok");
    assert_eq!(api.bodies().len(), 2);
    assert!(api.bodies()[0].get("stream").is_none());

    let start =
        json!({ "type": "message_start", "message": { "role": "assistant", "content": [] } });
    for (events, expected) in [
        (
            vec![
                start.clone(),
                json!({ "type": "error", "error": { "type": "overloaded_error", "message": "Overloaded" } }),
            ],
            "sent an error: Overloaded",
        ),
        (
            vec![
                start.clone(),
                json!({ "type": "content_block_start", "index": 0, "content_block": { "type": "text", "text": "" } }),
            ],
            "broke off before `message_stop`",
        ),
        (
            vec![
                start.clone(),
                json!({ "type": "content_block_delta", "index": 4, "delta": { "type": "text_delta", "text": "x" } }),
            ],
            "block 4, which never started",
        ),
        (vec![json!("event: nonsense {")], "not JSON"),
    ] {
        let api = ModelApi::start(vec![Reply::stream(events)]).await;
        let mut conversation = conversation();
        let error = Agent::new()
            .run(&server(), &model(&api), &mut conversation)
            .await
            .unwrap_err();
        assert!(
            matches!(
                &error,
                AgentError::Model {
                    error: ModelError::Stream { .. },
                    ..
                }
            ),
            "{error:?}"
        );
        assert!(chain(&error).contains(expected), "{}", chain(&error));
        assert_eq!(conversation, self::conversation());
    }
}
