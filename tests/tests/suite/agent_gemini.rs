//! The agent loop against the Gemini API, through the `Gemini` client. No Gemini server can
//! run here: a server on loopback answers as the API reference documents
//! (`streamGenerateContent?alt=sse` streams of `GenerateContentResponse` chunks, cut into
//! 7-byte pieces, and whole `generateContent` responses), and every test asserts the bodies
//! it received.

use aleph_tools_tests::chain;
use std::time::Duration;

use aleph_tools::agent::clients::Gemini;
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

fn model(api: &ModelApi) -> Gemini {
    Gemini::new("gemini-test")
        .base_url(&api.url)
        .api_key("gm-key")
        .backoff(Duration::from_millis(20))
}

fn conversation() -> Conversation {
    let mut conversation = Conversation::new(Provider::Gemini).with_system("Be brief.");
    conversation.push_user("What is 2 + 3, and 4 + 4?");
    conversation
}

/// A stream chunk carrying `parts`, finishing when `finish` is given.
fn chunk(parts: &Value, finish: Option<&str>) -> Value {
    let mut candidate = json!({ "content": { "role": "model", "parts": parts }, "index": 0 });
    if let Some(reason) = finish {
        candidate["finishReason"] = json!(reason);
    }
    json!({ "candidates": [candidate],
            "usageMetadata": { "promptTokenCount": 30, "candidatesTokenCount": 6, "totalTokenCount": 36 },
            "modelVersion": "gemini-test" })
}

#[tokio::test]
async fn a_multi_round_task_sends_exactly_the_documented_bodies() {
    let calls = json!([
        { "functionCall": { "id": "fc_1", "name": "add", "args": { "a": 2, "b": 3 } } },
        { "functionCall": { "id": "fc_2", "name": "add", "args": { "a": 4, "b": "four" } } }
    ]);
    let api = ModelApi::start(vec![
        Reply::stream([
            chunk(
                &json!([{ "text": "Adding", "thought": true, "thoughtSignature": "c2ln" }]),
                None,
            ),
            chunk(&json!([{ "text": "Let me " }]), None),
            chunk(&json!([{ "text": "add." }]), None),
            chunk(&calls, Some("STOP")),
        ]),
        Reply::stream([
            chunk(&json!([{ "text": "5 and " }]), None),
            chunk(&json!([{ "text": "the second failed." }]), Some("STOP")),
        ]),
    ])
    .await;
    let server = server();
    let mut conversation = conversation();
    let outcome = Agent::new()
        .run(&server, &model(&api), &mut conversation)
        .await
        .unwrap();
    assert_eq!(outcome.text, "5 and the second failed.");
    assert_eq!(outcome.usage.input_tokens, 60);
    assert_eq!(outcome.stop_reason.as_deref(), Some("STOP"));

    let error = server
        .call("add", json!({ "a": 4, "b": "four" }))
        .await
        .model_text()
        .into_owned();
    let user = json!({ "role": "user", "parts": [{ "text": "What is 2 + 3, and 4 + 4?" }] });
    let turn = json!({ "role": "model", "parts": [
        { "text": "Adding", "thought": true, "thoughtSignature": "c2ln" },
        { "text": "Let me add." },
        calls[0], calls[1]
    ] });
    let results = json!({ "role": "user", "parts": [
        { "functionResponse": { "id": "fc_1", "name": "add", "response": { "output": 5 } } },
        { "functionResponse": { "id": "fc_2", "name": "add", "response": { "error": error } } }
    ] });
    let body = |contents: Value| {
        json!({ "systemInstruction": { "parts": [{ "text": "Be brief." }] },
                "contents": contents, "tools": server.tools().for_provider(Provider::Gemini) })
    };
    let bodies = api.bodies();
    assert_eq!(bodies[0], body(json!([user])));
    assert_eq!(bodies[1], body(json!([user, turn, results])));
    for request in api.received() {
        assert_eq!(
            request.path,
            "/v1beta/models/gemini-test:streamGenerateContent?alt=sse"
        );
        assert_eq!(request.header("x-goog-api-key"), Some("gm-key"));
    }
}

#[tokio::test]
async fn whole_answers_blocked_prompts_and_broken_streams() {
    let api = ModelApi::start(vec![Reply::ok(json!({
        "candidates": [{ "content": { "role": "model", "parts": [{ "text": "Hi." }] }, "finishReason": "STOP" }]
    }))])
    .await;
    let outcome = Agent::new()
        .run(
            &server(),
            &model(&api).streaming(false),
            &mut conversation(),
        )
        .await
        .unwrap();
    assert_eq!(outcome.text, "Hi.");
    assert_eq!(
        api.received()[0].path,
        "/v1beta/models/gemini-test:generateContent"
    );

    for (reply, expected) in [
        (
            Reply::stream([json!({ "promptFeedback": { "blockReason": "SAFETY" } })]),
            "blocked (SAFETY)",
        ),
        (
            Reply::stream([chunk(&json!([{ "text": "Half" }]), None)]),
            "broke off before the answer finished",
        ),
        (
            Reply::stream([
                json!({ "error": { "code": 400, "message": "API key not valid", "status": "INVALID_ARGUMENT" } }),
            ]),
            "API key not valid",
        ),
        (
            Reply::status(
                400,
                json!({ "error": { "code": 400, "message": "API key not valid. Please pass a valid API key.", "status": "INVALID_ARGUMENT" } }),
            ),
            "gemini answered 400: API key not valid",
        ),
    ] {
        let api = ModelApi::start(vec![reply]).await;
        let error = Agent::new()
            .run(&server(), &model(&api), &mut conversation())
            .await
            .unwrap_err();
        assert!(
            matches!(error, AgentError::Model { round: 1, .. }),
            "{error:?}"
        );
        assert!(chain(&error).contains(expected), "{}", chain(&error));
    }
    let api = ModelApi::start(vec![Reply::stream([json!("not json")])]).await;
    let error = Agent::new()
        .run(&server(), &model(&api), &mut conversation())
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
}
