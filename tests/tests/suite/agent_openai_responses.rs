//! The agent loop against OpenAI's Responses API, through the `OpenAiResponses` client. No
//! OpenAI server can run here: a server on loopback answers as the API reference documents
//! (streams of `response.*` events ending in `response.completed`, cut into 7-byte pieces),
//! and every test asserts the bodies it received.

use aleph_tools_tests::chain;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use aleph_tools::agent::clients::OpenAiResponses;
use aleph_tools::agent::{Agent, AgentEvent, Conversation, StreamDelta};
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

fn model(api: &ModelApi) -> OpenAiResponses {
    OpenAiResponses::new("gpt-test")
        .base_url(format!("{}/v1", api.url))
        .api_key("sk-test")
        .backoff(Duration::from_millis(20))
}

/// The events of a streamed response whose output is `output`, with deltas for its text
/// and function-call arguments, in two pieces each.
fn streamed(output: &[Value]) -> Vec<Value> {
    let response = |status: &str, output: Value| {
        json!({ "id": "resp_1", "object": "response", "status": status, "model": "gpt-test", "output": output,
                "usage": { "input_tokens": 25, "output_tokens": 9, "total_tokens": 34 } })
    };
    let mut events = vec![
        json!({ "type": "response.created", "sequence_number": 0, "response": response("in_progress", json!([])) }),
    ];
    for (index, item) in output.iter().enumerate() {
        events.push(
            json!({ "type": "response.output_item.added", "output_index": index, "item": item }),
        );
        let (kind, text) = match item["type"].as_str().unwrap() {
            "message" => (
                "response.output_text.delta",
                item["content"][0]["text"].as_str().unwrap(),
            ),
            "function_call" => (
                "response.function_call_arguments.delta",
                item["arguments"].as_str().unwrap(),
            ),
            _ => ("", ""),
        };
        if !kind.is_empty() {
            let cut = text.len() / 2;
            for piece in [&text[..cut], &text[cut..]] {
                events.push(json!({ "type": kind, "item_id": item["id"], "output_index": index, "content_index": 0, "delta": piece }));
            }
        }
        events.push(
            json!({ "type": "response.output_item.done", "output_index": index, "item": item }),
        );
    }
    events.push(json!({ "type": "response.completed", "response": response("completed", Value::Array(output.to_vec())) }));
    events
}

#[tokio::test]
async fn a_multi_round_task_sends_exactly_the_documented_bodies() {
    let reasoning = json!({ "type": "reasoning", "id": "rs_1", "summary": [] });
    let call = json!({ "type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "add", "arguments": "{\"a\":2,\"b\":3}", "status": "completed" });
    let answer = json!({ "type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
        "content": [{ "type": "output_text", "text": "2 + 3 = 5.", "annotations": [] }] });
    let api = ModelApi::start(vec![
        Reply::stream(streamed(&[reasoning.clone(), call.clone()])),
        Reply::stream(streamed(std::slice::from_ref(&answer))),
    ])
    .await;
    let server = server();
    let deltas = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&deltas);
    let mut conversation = Conversation::new(Provider::OpenAiResponses).with_system("Be brief.");
    conversation.push_user("What is 2 + 3?");
    let outcome = Agent::new()
        .on_event(move |event| {
            if let AgentEvent::Delta(delta) = event {
                seen.lock().unwrap().push((*delta).clone());
            }
        })
        .run(&server, &model(&api), &mut conversation)
        .await
        .unwrap();
    assert_eq!(outcome.text, "2 + 3 = 5.");
    assert_eq!(outcome.usage.output_tokens, 18);

    let user = json!({ "role": "user", "content": "What is 2 + 3?" });
    let result = json!({ "type": "function_call_output", "call_id": "call_1", "output": "5" });
    let tools = server.tools().for_provider(Provider::OpenAiResponses);
    let body = |input: Value| json!({ "model": "gpt-test", "instructions": "Be brief.", "input": input, "tools": tools, "stream": true });
    let bodies = api.bodies();
    assert_eq!(bodies[0], body(json!([user])));
    assert_eq!(bodies[1], body(json!([user, reasoning, call, result])));
    assert_eq!(api.received()[0].path, "/v1/responses");
    assert_eq!(
        api.received()[0].header("authorization"),
        Some("Bearer sk-test")
    );
    assert_eq!(conversation.messages().len(), 5);

    let deltas = deltas.lock().unwrap();
    let mut text = String::new();
    let mut arguments = String::new();
    for delta in deltas.iter() {
        match delta {
            StreamDelta::Text(piece) => text.push_str(piece),
            StreamDelta::ToolCall {
                index: 0,
                arguments: piece,
                ..
            } => arguments.push_str(piece),
            _ => {}
        }
    }
    assert_eq!(text, "2 + 3 = 5.");
    assert_eq!(arguments, r#"{"a":2,"b":3}"#);
    assert!(
        matches!(&deltas[0], StreamDelta::ToolCall { id: Some(id), name: Some(name), .. } if id == "call_1" && name == "add"),
        "{deltas:?}"
    );
}

#[tokio::test]
async fn failed_and_broken_streams_are_reported() {
    for (events, expected) in [
        (
            vec![
                json!({ "type": "response.failed", "response": { "status": "failed", "error": { "code": "server_error", "message": "The model failed" } } }),
            ],
            "failed: The model failed",
        ),
        (
            vec![
                json!({ "type": "error", "code": "rate_limit_exceeded", "message": "Slow down", "param": null }),
            ],
            "sent an error: Slow down",
        ),
        (
            vec![
                json!({ "type": "response.created", "response": { "status": "in_progress", "output": [] } }),
            ],
            "broke off before `response.completed`",
        ),
    ] {
        let api = ModelApi::start(vec![Reply::stream(events)]).await;
        let mut conversation = Conversation::new(Provider::OpenAiResponses);
        conversation.push_user("hi");
        let error = Agent::new()
            .run(&server(), &model(&api), &mut conversation)
            .await
            .unwrap_err();
        assert!(chain(&error).contains(expected), "{}", chain(&error));
    }
}
