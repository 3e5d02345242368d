//! The agent loop against OpenAI's Chat Completions API, through the `OpenAiChat` client.
//! No OpenAI server can run here: a server on loopback answers as the API reference
//! documents (whole responses, and streams of `chat.completion.chunk` events ending in
//! `[DONE]`, cut into 7-byte pieces), and every test asserts the bodies it received.

use aleph_tools_tests::chain;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use aleph_tools::agent::clients::OpenAiChat;
use aleph_tools::agent::{
    Agent, AgentError, AgentEvent, ChatModel, Conversation, ModelError, StreamDelta, Usage,
};
use aleph_tools::prelude::*;
use aleph_tools::provider::Provider;
use aleph_tools_tests::model_api::{ModelApi, Reply};
use serde_json::{Value, json};

/// A temperature unit.
#[derive(Clone, Copy, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Unit {
    /// Degrees Celsius
    Celsius,
    /// Degrees Fahrenheit
    Fahrenheit,
}

/// Get the weather in a city.
#[tool(register = false)]
fn get_weather(city: String, unit: Unit) -> String {
    match unit {
        Unit::Celsius => format!("{city}: 19.5 °C"),
        Unit::Fahrenheit => format!("{city}: 67.1 °F"),
    }
}

/// Add two integers.
#[tool(register = false)]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

/// Dump a big log.
#[tool(register = false)]
fn dump() -> String {
    "log line é\n".repeat(200_000)
}

fn server() -> AlephToolServer {
    AlephToolServer::builder()
        .with_tool(GetWeatherTool)
        .with_tool(AddTool)
        .with_tool(DumpTool)
        .with_output_limit(2_000)
        .build()
        .unwrap()
}

fn model(api: &ModelApi) -> OpenAiChat {
    OpenAiChat::new("gpt-test")
        .base_url(format!("{}/v1", api.url))
        .api_key("test-key")
        .backoff(Duration::from_millis(20))
}

fn conversation() -> Conversation {
    let mut conversation = Conversation::new(Provider::OpenAiChat).with_system("Be brief.");
    conversation.push_user("Weather in Lisbon, and 2 + 3?");
    conversation
}

/// A stream chunk with `delta`, and `finish_reason` when given.
fn chunk(delta: &Value, finish: Option<&str>) -> Value {
    json!({
        "id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-test",
        "choices": [{ "index": 0, "delta": delta, "finish_reason": finish }]
    })
}

/// The chunks of a streamed turn that calls `calls` (name, id, arguments text), the
/// arguments cut in two.
fn streamed_calls(calls: &[(&str, &str, &str)]) -> Vec<Value> {
    let mut chunks = vec![chunk(
        &json!({ "role": "assistant", "content": null }),
        None,
    )];
    for (index, (name, id, arguments)) in calls.iter().enumerate() {
        let cut = arguments.len() / 2;
        chunks.push(chunk(
            &json!({ "tool_calls": [{ "index": index, "id": id, "type": "function", "function": { "name": name, "arguments": "" } }] }),
            None,
        ));
        for piece in [&arguments[..cut], &arguments[cut..]] {
            chunks.push(chunk(
                &json!({ "tool_calls": [{ "index": index, "function": { "arguments": piece } }] }),
                None,
            ));
        }
    }
    chunks.push(chunk(&json!({}), Some("tool_calls")));
    chunks.push(json!({ "id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": [], "usage": { "prompt_tokens": 50, "completion_tokens": 20, "total_tokens": 70 } }));
    chunks.push(json!("[DONE]"));
    chunks
}

/// The chunks of a streamed text answer, in pieces.
fn streamed_text(pieces: &[&str]) -> Vec<Value> {
    let mut chunks = vec![chunk(&json!({ "role": "assistant", "content": "" }), None)];
    chunks.extend(pieces.iter().map(|p| chunk(&json!({ "content": p }), None)));
    chunks.push(chunk(&json!({}), Some("stop")));
    chunks.push(json!({ "choices": [], "usage": { "prompt_tokens": 90, "completion_tokens": 8 } }));
    chunks.push(json!("[DONE]"));
    chunks
}

/// The assistant message a turn that calls `calls` must be sent back as.
fn assistant_calls(calls: &[(&str, &str, &str)]) -> Value {
    let calls: Vec<Value> = calls
        .iter()
        .map(|(name, id, arguments)| json!({ "id": id, "type": "function", "function": { "name": name, "arguments": arguments } }))
        .collect();
    json!({ "role": "assistant", "content": null, "tool_calls": calls })
}

async fn text_of(server: &AlephToolServer, name: &str, args: Value) -> String {
    server.call(name, args).await.model_text().into_owned()
}

#[tokio::test]
async fn a_multi_round_task_sends_exactly_the_documented_bodies() {
    let calls_1 = [
        (
            "get_weather",
            "call_w1",
            r#"{"city":"Lisbon","unit":"kelvin"}"#,
        ),
        ("add", "call_a1", r#"{"a":2,"b":3}"#),
        ("get_wether_now", "call_x1", "{}"),
    ];
    let calls_2 = [(
        "get_weather",
        "call_w2",
        r#"{"city":"Lisbon","unit":"celsius"}"#,
    )];
    let api = ModelApi::start(vec![
        Reply::stream(streamed_calls(&calls_1)),
        Reply::stream(streamed_calls(&calls_2)),
        Reply::stream(streamed_text(&["Lisbon: 19.5 °C; ", "2 + 3 = 5."])),
    ])
    .await;
    let server = server();
    let deltas = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&deltas);
    let mut conversation = conversation();
    let outcome = Agent::new()
        .on_event(move |event| {
            if let AgentEvent::Delta(delta) = event {
                seen.lock().unwrap().push((*delta).clone());
            }
        })
        .run(&server, &model(&api), &mut conversation)
        .await
        .unwrap();
    assert_eq!(outcome.text, "Lisbon: 19.5 °C; 2 + 3 = 5.");
    assert_eq!(outcome.rounds, 3);
    assert_eq!(outcome.tool_calls, 4);
    assert_eq!(outcome.usage.input_tokens, 190);
    assert_eq!(outcome.usage.output_tokens, 48);
    assert_eq!(outcome.stop_reason.as_deref(), Some("stop"));

    let tools = server.tools().for_provider(Provider::OpenAiChat);
    let system = json!({ "role": "system", "content": "Be brief." });
    let user = json!({ "role": "user", "content": "Weather in Lisbon, and 2 + 3?" });
    let bad_unit = text_of(
        &server,
        "get_weather",
        json!({ "city": "Lisbon", "unit": "kelvin" }),
    )
    .await;
    let unknown = text_of(&server, "get_wether_now", json!({})).await;
    assert!(bad_unit.contains("celsius") && unknown.contains("get_weather"));
    let results_1 = vec![
        json!({ "role": "tool", "tool_call_id": "call_w1", "content": bad_unit }),
        json!({ "role": "tool", "tool_call_id": "call_a1", "content": "5" }),
        json!({ "role": "tool", "tool_call_id": "call_x1", "content": unknown }),
    ];
    let result_2 =
        json!({ "role": "tool", "tool_call_id": "call_w2", "content": "Lisbon: 19.5 °C" });
    let body = |messages: Vec<Value>| {
        json!({
            "model": "gpt-test", "messages": messages, "tools": tools,
            "stream": true, "stream_options": { "include_usage": true }
        })
    };
    let mut round_2 = vec![system.clone(), user.clone(), assistant_calls(&calls_1)];
    round_2.extend(results_1);
    let mut round_3 = round_2.clone();
    round_3.push(assistant_calls(&calls_2));
    round_3.push(result_2);
    let bodies = api.bodies();
    assert_eq!(bodies.len(), 3);
    assert_eq!(bodies[0], body(vec![system, user]));
    assert_eq!(bodies[1], body(round_2));
    assert_eq!(bodies[2], body(round_3.clone()));
    for request in api.received() {
        assert_eq!(request.path, "/v1/chat/completions");
        assert_eq!(request.header("authorization"), Some("Bearer test-key"));
    }
    // The conversation is what the next request would send, minus the instructions.
    round_3.push(json!({ "role": "assistant", "content": "Lisbon: 19.5 °C; 2 + 3 = 5." }));
    assert_eq!(conversation.messages(), &round_3[1..]);

    // The stream reached the caller piece by piece: the text, and each call's arguments.
    let deltas = deltas.lock().unwrap();
    let text: String = deltas
        .iter()
        .filter_map(|d| match d {
            StreamDelta::Text(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(text, "Lisbon: 19.5 °C; 2 + 3 = 5.");
    let arguments: String = deltas
        .iter()
        .filter_map(|d| match d {
            StreamDelta::ToolCall {
                index: 1,
                arguments,
                ..
            } => Some(arguments.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(arguments, r#"{"a":2,"b":3}"#);
}

#[tokio::test]
async fn a_stored_conversation_resumes_where_it_stopped() {
    let api = ModelApi::start(vec![Reply::ok(json!({
        "choices": [{ "index": 0, "message": { "role": "assistant", "content": "Still 5." }, "finish_reason": "stop" }]
    }))])
    .await;
    let stored = serde_json::to_string(&conversation()).unwrap();
    let mut resumed: Conversation = serde_json::from_str(&stored).unwrap();
    assert_eq!(resumed, conversation());
    let outcome = Agent::new()
        .run(&server(), &model(&api).streaming(false), &mut resumed)
        .await
        .unwrap();
    assert_eq!(outcome.text, "Still 5.");
    assert_eq!(outcome.usage, Usage::default());
    assert_eq!(
        api.bodies()[0]["messages"][1]["content"],
        "Weather in Lisbon, and 2 + 3?"
    );
    assert!(api.bodies()[0].get("stream").is_none());
}

#[tokio::test]
async fn busy_and_failing_answers_are_retried() {
    let answer = json!({ "choices": [{ "message": { "role": "assistant", "content": "ok" }, "finish_reason": "stop" }] });
    let api = ModelApi::start(vec![
        Reply::Json {
            status: 429,
            headers: vec![("retry-after-ms".into(), "300".into())],
            body: json!({ "error": { "message": "Rate limit reached", "type": "requests" } }),
        },
        Reply::status(
            500,
            json!({ "error": { "message": "The server had an error" } }),
        ),
        Reply::Json {
            status: 503,
            headers: vec![("retry-after".into(), "0".into())],
            body: json!({ "error": { "message": "overloaded" } }),
        },
        Reply::ok(answer),
    ])
    .await;
    let started = Instant::now();
    let outcome = Agent::new()
        .run(
            &server(),
            &model(&api).streaming(false),
            &mut conversation(),
        )
        .await
        .unwrap();
    assert_eq!(outcome.text, "ok");
    assert!(
        started.elapsed() >= Duration::from_millis(300),
        "retry-after was not honoured"
    );
    let bodies = api.bodies();
    assert_eq!(bodies.len(), 4);
    assert!(
        bodies.iter().all(|b| *b == bodies[0]),
        "every retry sends the same body"
    );

    // Out of retries: the provider's own message.
    let api = ModelApi::start(vec![
        Reply::status(503, json!({ "error": { "message": "overloaded" } })),
        Reply::status(503, json!({ "error": { "message": "still overloaded" } })),
    ])
    .await;
    let error = Agent::new()
        .run(&server(), &model(&api).max_retries(1), &mut conversation())
        .await
        .unwrap_err();
    assert_eq!(
        error,
        AgentError::Model {
            round: 1,
            error: ModelError::Status {
                provider: Provider::OpenAiChat,
                status: 503,
                message: "still overloaded".into()
            }
        }
    );
    // A retry-after longer than a minute fails at once rather than hanging.
    let api = ModelApi::start(vec![Reply::Json {
        status: 429,
        headers: vec![("retry-after".into(), "3600".into())],
        body: json!({ "error": { "message": "quota exceeded" } }),
    }])
    .await;
    let error = Agent::new()
        .run(&server(), &model(&api), &mut conversation())
        .await
        .unwrap_err();
    assert!(
        chain(&error).contains("429: quota exceeded"),
        "{}",
        chain(&error)
    );
    assert_eq!(api.bodies().len(), 1);
}

#[tokio::test]
async fn provider_errors_are_not_retried_and_keep_their_message() {
    let api = ModelApi::start(vec![Reply::status(
        400,
        json!({ "error": { "message": "The model `gpt-test` does not exist", "type": "invalid_request_error" } }),
    )])
    .await;
    let error = Agent::new()
        .run(&server(), &model(&api), &mut conversation())
        .await
        .unwrap_err();
    // The message names the round; the model's error is its source, said once.
    assert_eq!(error.to_string(), "asking the model failed in round 1");
    let source = std::error::Error::source(&error)
        .expect("the model's error")
        .to_string();
    assert_eq!(
        source,
        "openai-chat answered 400: The model `gpt-test` does not exist"
    );
    assert_eq!(
        format!("{:#}", anyhow::Error::new(error)),
        "asking the model failed in round 1: openai-chat answered 400: The model `gpt-test` does not exist"
    );
    assert_eq!(api.bodies().len(), 1);
}

#[tokio::test]
async fn malformed_answers_fail_the_round_with_what_was_wrong() {
    let cases: Vec<(Reply, &str)> = vec![
        (
            Reply::ok(json!({ "id": "x", "choices": [] })),
            "`choices` is empty",
        ),
        (
            Reply::ok(json!({ "object": "error" })),
            "no `choices` array",
        ),
        (
            Reply::ok(
                json!({ "choices": [{ "message": { "role": "assistant", "tool_calls": [{ "type": "function", "function": { "name": "add", "arguments": "{}" } }] } }] }),
            ),
            "id",
        ),
        (
            Reply::stream([json!("{\"choices\": [{\"delta\": "), json!("[DONE]")]),
            "not JSON",
        ),
        (
            Reply::stream([chunk(&json!({ "content": "Hal" }), None)]),
            "broke off before the answer finished",
        ),
        (
            Reply::stream([json!({ "error": { "message": "context length exceeded" } })]),
            "context length exceeded",
        ),
        (
            Reply::stream([
                chunk(
                    &json!({ "tool_calls": [{ "index": 0, "function": { "name": "add", "arguments": "{}" } }] }),
                    Some("tool_calls"),
                ),
                json!("[DONE]"),
            ]),
            "id",
        ),
        (
            Reply::stream([chunk(
                &json!({ "tool_calls": [{ "index": 3, "id": "c", "function": { "name": "add", "arguments": "{}" } }] }),
                None,
            )]),
            "tool call 3 before call 0",
        ),
    ];
    for (reply, expected) in cases {
        let api = ModelApi::start(vec![reply.clone()]).await;
        let streaming = matches!(reply, Reply::Stream { .. });
        let mut conversation = conversation();
        let error = Agent::new()
            .run(
                &server(),
                &model(&api).streaming(streaming),
                &mut conversation,
            )
            .await
            .unwrap_err();
        assert!(
            matches!(error, AgentError::Model { round: 1, .. }),
            "{reply:?}: {error:?}"
        );
        assert!(
            chain(&error).contains(expected),
            "{reply:?}: {}",
            chain(&error)
        );
        assert_eq!(conversation, self::conversation(), "nothing was appended");
    }
}

#[tokio::test]
async fn arguments_cut_short_are_an_error_the_model_fixes() {
    let cut = [("add", "call_1", r#"{"a": 2, "b""#)];
    let fixed = [("add", "call_2", r#"{"a": 2, "b": 3}"#)];
    let api = ModelApi::start(vec![
        Reply::stream(streamed_calls(&cut)),
        Reply::stream(streamed_calls(&fixed)),
        Reply::stream(streamed_text(&["5"])),
    ])
    .await;
    let outcome = Agent::new()
        .run(&server(), &model(&api), &mut conversation())
        .await
        .unwrap();
    assert_eq!(outcome.text, "5");
    let error = &api.bodies()[1]["messages"][3];
    assert_eq!(error["tool_call_id"], "call_1");
    assert!(
        error["content"]
            .as_str()
            .unwrap()
            .contains("not valid JSON"),
        "{error}"
    );
}

#[tokio::test]
async fn a_model_that_calls_tools_forever_stops_at_max_rounds() {
    let call = [("add", "call_n", r#"{"a":1,"b":1}"#)];
    let api = ModelApi::start(
        (0..5)
            .map(|_| Reply::stream(streamed_calls(&call)))
            .collect(),
    )
    .await;
    let mut conversation = conversation();
    let error = Agent::new()
        .max_rounds(3)
        .run(&server(), &model(&api), &mut conversation)
        .await
        .unwrap_err();
    assert_eq!(error, AgentError::MaxRounds { rounds: 3 });
    assert_eq!(api.bodies().len(), 3);
    // user + 3 × (call, result): resumable as it is.
    assert_eq!(conversation.messages().len(), 7);
}

#[tokio::test]
async fn a_two_megabyte_result_goes_back_shortened_to_the_output_limit() {
    let call = [("dump", "call_d", "{}")];
    let api = ModelApi::start(vec![
        Reply::stream(streamed_calls(&call)),
        Reply::stream(streamed_text(&["A long log."])),
    ])
    .await;
    Agent::new()
        .run(&server(), &model(&api), &mut conversation())
        .await
        .unwrap();
    let sent = api.bodies()[1]["messages"][3]["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        sent.chars().count() <= 2_000,
        "{} chars",
        sent.chars().count()
    );
    assert!(sent.starts_with("log line é"), "{sent}");
}

#[tokio::test]
async fn cancelling_stops_a_round_that_waits_on_the_model() {
    let api = ModelApi::start(vec![Reply::Silence(Duration::from_secs(30))]).await;
    let token = CancellationToken::new();
    let agent = Agent::new().with_context(ToolContext::new().with_cancellation(token.clone()));
    let cancel = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        token.cancel();
    });
    let error = agent
        .run(&server(), &model(&api), &mut conversation())
        .await
        .unwrap_err();
    cancel.await.unwrap();
    assert_eq!(error, AgentError::Cancelled { round: 1 });
}

#[tokio::test]
async fn a_model_of_another_format_is_refused() {
    let api = ModelApi::start(Vec::new()).await;
    let mut conversation = Conversation::new(Provider::Anthropic);
    conversation.push_user("hi");
    let error = Agent::new()
        .run(&server(), &model(&api), &mut conversation)
        .await
        .unwrap_err();
    assert!(
        error
            .to_string()
            .contains("Conversation::new(model.provider())"),
        "{error}"
    );
    assert_eq!(model(&api).provider(), Provider::OpenAiChat);
    assert!(api.bodies().is_empty());
}

#[tokio::test]
async fn an_unreachable_api_is_a_connection_error() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    let model = OpenAiChat::new("m")
        .base_url(url)
        .max_retries(1)
        .backoff(Duration::from_millis(10));
    let error = Agent::new()
        .run(&server(), &model, &mut conversation())
        .await
        .unwrap_err();
    assert!(
        matches!(
            &error,
            AgentError::Model {
                error: ModelError::Connection { .. },
                ..
            }
        ),
        "{error:?}"
    );
}

#[tokio::test]
async fn the_model_is_offered_only_the_tools_the_context_may_call() {
    let server = AlephToolServer::builder()
        .with_tool(GetWeatherTool)
        .with_tool(AddTool)
        .with_middleware(
            aleph_tools::middleware::Permission::new()
                .require("weather", ["get_weather"])
                .unwrap(),
        )
        .build()
        .unwrap();
    let offered = |bodies: Vec<Value>| -> Vec<String> {
        bodies[0]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|tool| tool["function"]["name"].as_str().unwrap().to_owned())
            .collect()
    };
    for (context, expected) in [
        (ToolContext::new(), vec!["add"]),
        (
            ToolContext::new().with_capabilities(["weather"]),
            vec!["add", "get_weather"],
        ),
    ] {
        let api = ModelApi::start(vec![Reply::stream(streamed_text(&["Hi."]))]).await;
        Agent::new()
            .with_context(context)
            .run(&server, &model(&api), &mut conversation())
            .await
            .unwrap();
        assert_eq!(offered(api.bodies()), expected);
    }
}
