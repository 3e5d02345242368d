//! Model servers: a `retry-after` of any value, a stream of any size or none that ends, and an
//! API key from the environment that goes only where the environment meant it, never to a
//! base URL set in code. A loopback server plays the model API and records what it got.

use std::process::Command;
use std::time::Duration;

use aleph_tools::agent::clients::{Anthropic, Gemini, OpenAiChat, OpenAiResponses};
use aleph_tools::agent::{ChatModel, Conversation, ModelError, ModelRequest, ModelTurn};
use aleph_tools_tests::model_api::{ModelApi, Reply};
use serde_json::{Value, json};

/// Set in the child that [`keys_from_the_environment_go_only_where_it_meant_them`] runs as:
/// the loopback API's URL.
const KEY_CHILD: &str = "ALEPH_TOOLS_TEST_MODEL_API";

fn client(api: &ModelApi) -> OpenAiChat {
    OpenAiChat::new("m")
        .base_url(format!("{}/v1", api.url))
        .api_key("k")
        .backoff(Duration::from_millis(10))
}

async fn ask(model: &dyn ChatModel) -> Result<ModelTurn, ModelError> {
    let mut conversation = Conversation::new(model.provider());
    conversation.push_user("hi");
    let tools = json!([]);
    model
        .respond(ModelRequest::new(&conversation, &tools))
        .await
}

fn answer() -> Value {
    json!({ "choices": [{ "message": { "role": "assistant", "content": "ok" }, "finish_reason": "stop" }] })
}

fn busy(header: &str, value: &str) -> Reply {
    Reply::Json {
        status: 429,
        headers: vec![(header.into(), value.into())],
        body: json!({ "error": { "message": "slow down" } }),
    }
}

/// An OpenAI stream chunk with `delta`, and `finish_reason` when given.
fn chunk(delta: &Value, finish: Option<&str>) -> Value {
    json!({ "object": "chat.completion.chunk", "choices": [{ "index": 0, "delta": delta, "finish_reason": finish }] })
}

#[tokio::test]
async fn any_retry_after_is_bounded_and_never_panics() {
    // Longer than the client waits, or than a duration can hold: the request fails at once
    // with the provider's message and why it was not retried.
    for (header, huge) in [
        ("retry-after", "1e300"),
        ("retry-after", "inf"),
        ("retry-after", "99999999999999999999999"),
        ("retry-after", "3601"),
        ("retry-after-ms", "1e300"),
    ] {
        let api = ModelApi::start(vec![busy(header, huge), Reply::ok(answer())]).await;
        let error = ask(&client(&api).streaming(false)).await.unwrap_err();
        let text = error.to_string();
        assert!(
            text.contains("429: slow down") && text.contains("longer than the 60 s"),
            "{header}: {huge}: {text}"
        );
        assert_eq!(api.received().len(), 1, "{header}: {huge}");
    }
    // No advice (negative, not a number, not a date) or a date gone by: the client's own
    // backoff, and the retry is answered.
    for (header, none) in [
        ("retry-after", "-1"),
        ("retry-after", "NaN"),
        ("retry-after", "-inf"),
        ("retry-after", "soon"),
        ("retry-after-ms", "-5"),
        ("retry-after", "Wed, 21 Oct 2015 07:28:00 GMT"),
    ] {
        let api = ModelApi::start(vec![busy(header, none), Reply::ok(answer())]).await;
        let turn = ask(&client(&api).streaming(false))
            .await
            .unwrap_or_else(|e| panic!("{header}: {none}: {e}"));
        assert_eq!(turn.text, "ok");
        assert_eq!(api.received().len(), 2, "{header}: {none}");
    }
}

/// A stream whose one tool call carries `arguments` in a single line, written in pieces of
/// 64 KiB.
fn one_line_call(arguments: &str) -> Reply {
    let Reply::Stream { events, .. } = Reply::stream([
        chunk(
            &json!({ "role": "assistant", "tool_calls": [{ "index": 0, "id": "call_1", "type": "function", "function": { "name": "take", "arguments": arguments } }] }),
            None,
        ),
        chunk(&json!({}), Some("tool_calls")),
        json!("[DONE]"),
    ]) else {
        unreachable!("a stream")
    };
    Reply::Stream {
        events,
        piece: 64 << 10,
        pause: Duration::ZERO,
    }
}

#[tokio::test]
async fn a_16_mb_tool_call_line_is_read_and_one_over_the_limit_is_refused() {
    let arguments = json!({ "text": "x".repeat(16_000_000) }).to_string();
    let api = ModelApi::start(vec![one_line_call(&arguments), one_line_call(&arguments)]).await;
    // Within the default limit of one event (16 MiB): read whole.
    let turn = ask(&client(&api)).await.unwrap();
    let call = &turn.tool_calls[0];
    assert_eq!(call.name, "take");
    let text = call.arguments.as_ref().unwrap()["text"].as_str().unwrap();
    assert_eq!(text.len(), 16_000_000);
    // Over a limit set lower: refused, naming the limit and how to raise it.
    let error = ask(&client(&api).max_event_bytes(1 << 20))
        .await
        .unwrap_err();
    assert!(matches!(error, ModelError::Stream { .. }), "{error:?}");
    let text = error.to_string();
    assert!(
        text.contains("longer than 1048576 bytes (1 MiB)") && text.contains("max_event_bytes"),
        "{text}"
    );
}

#[tokio::test]
async fn a_stream_that_never_ends_is_refused_at_its_limit_by_every_client() {
    // Events without end: refused once the answer passes its limit.
    let event = format!(
        "data: {}\n\n",
        chunk(&json!({ "content": "y".repeat(1000) }), None)
    );
    let api = ModelApi::start(vec![
        Reply::Endless {
            head: String::new(),
            again: event.clone(),
        },
        Reply::Endless {
            head: String::new(),
            again: event,
        },
    ])
    .await;
    let error = ask(&client(&api).max_response_bytes(4 << 20))
        .await
        .unwrap_err();
    let text = error.to_string();
    assert!(
        text.contains("more than 4194304 bytes (4 MiB)") && text.contains("max_response_bytes"),
        "{text}"
    );
    // Not streamed, a body without end is refused the same way.
    let error = ask(&client(&api).streaming(false).max_response_bytes(1 << 20))
        .await
        .unwrap_err();
    assert!(error.to_string().contains("max_response_bytes"), "{error}");

    // One line that never ends: refused at the limit of one event, by each client.
    let line = || Reply::Endless {
        head: "data: ".into(),
        again: "z".repeat(4096),
    };
    let api = ModelApi::start((0..4).map(|_| line()).collect()).await;
    let url = &api.url;
    let models: [Box<dyn ChatModel>; 4] = [
        Box::new(
            OpenAiChat::new("m")
                .base_url(format!("{url}/v1"))
                .max_event_bytes(2 << 20),
        ),
        Box::new(
            OpenAiResponses::new("m")
                .base_url(format!("{url}/v1"))
                .max_event_bytes(2 << 20),
        ),
        Box::new(Anthropic::new("m").base_url(url).max_event_bytes(2 << 20)),
        Box::new(Gemini::new("m").base_url(url).max_event_bytes(2 << 20)),
    ];
    for model in &models {
        let error = ask(model.as_ref()).await.unwrap_err();
        let text = error.to_string();
        assert!(
            text.contains("longer than 2097152 bytes (2 MiB)") && text.contains("max_event_bytes"),
            "{:?}: {text}",
            model.provider()
        );
    }
}

/// A model API that answers with a redirect to another host does not get its key carried
/// there: no client follows a redirect (Anthropic's `x-api-key` and Gemini's
/// `x-goog-api-key` would survive one), and the answer is an error naming the status.
#[tokio::test]
async fn no_client_follows_a_redirect_with_its_key() {
    let elsewhere = ModelApi::start(vec![Reply::ok(answer()); 4]).await;
    let moved = || Reply::Json {
        status: 307,
        headers: vec![("location".into(), format!("{}/v1/steal", elsewhere.url))],
        body: json!({}),
    };
    let api = ModelApi::start(vec![moved(), moved(), moved(), moved()]).await;
    let url = format!("{}/v1", api.url);
    let models: [Box<dyn ChatModel>; 4] = [
        Box::new(OpenAiChat::new("m").base_url(&url).api_key("k")),
        Box::new(OpenAiResponses::new("m").base_url(&url).api_key("k")),
        Box::new(Anthropic::new("m").base_url(&api.url).api_key("k")),
        Box::new(Gemini::new("m").base_url(&api.url).api_key("k")),
    ];
    for model in &models {
        let error = ask(model.as_ref()).await.unwrap_err().to_string();
        assert!(
            error.contains("307"),
            "{}: {error}",
            model.provider().name()
        );
    }
    assert!(elsewhere.received().is_empty(), "a redirect was followed");
}

#[test]
fn no_client_shows_its_key_in_debug() {
    let secret = "sk-never-shown-0123";
    for shown in [
        format!("{:?}", OpenAiChat::new("m").api_key(secret)),
        format!("{:?}", OpenAiResponses::new("m").api_key(secret)),
        format!("{:?}", Anthropic::new("m").api_key(secret)),
        format!("{:?}", Gemini::new("m").api_key(secret)),
    ] {
        assert!(!shown.contains(secret), "{shown}");
        assert!(shown.contains("<redacted>"), "{shown}");
    }
}

/// Runs in the child: asks each client at the loopback API, moved there in code (so the
/// keys in the environment must stay home), then one with a key given in code; with
/// `paired`, asks `OpenAiChat` at the base URL the environment names beside its key.
async fn ask_as_the_child(url: &str, paired: bool) {
    if paired {
        let model = OpenAiChat::new("m").streaming(false).max_retries(0);
        println!("paired: {:?}", ask(&model).await.map(|turn| turn.text));
        return;
    }
    let models: [Box<dyn ChatModel>; 5] = [
        Box::new(OpenAiChat::new("m").base_url(format!("{url}/v1"))),
        Box::new(OpenAiResponses::new("m").base_url(format!("{url}/v1"))),
        Box::new(Anthropic::new("m").base_url(url)),
        Box::new(Gemini::new("m").base_url(url)),
        Box::new(
            OpenAiChat::new("m")
                .base_url(format!("{url}/v1"))
                .api_key("sk-given"),
        ),
    ];
    for model in &models {
        if let Err(error) = ask(model.as_ref()).await {
            println!("{:?}: {error}", model.provider());
        }
    }
}

/// Runs this test again as a child process with the keys in its environment (setting them
/// in this process would race the other tests); returns what it printed.
fn run_child(url: &str, base_url: Option<&str>) -> String {
    let (_, module) = module_path!().split_once("::").unwrap();
    let mut child = Command::new(std::env::current_exe().unwrap());
    child
        .args([
            &format!("{module}::keys_from_the_environment_go_only_where_it_meant_them"),
            "--exact",
            "--nocapture",
        ])
        .env(KEY_CHILD, url)
        .env("OPENAI_API_KEY", "sk-env-openai")
        .env("ANTHROPIC_API_KEY", "sk-env-anthropic")
        .env("GEMINI_API_KEY", "env-gemini")
        .env_remove("ANTHROPIC_BASE_URL")
        .env_remove("GEMINI_BASE_URL");
    match base_url {
        Some(base) => child.env("OPENAI_BASE_URL", base),
        None => child.env_remove("OPENAI_BASE_URL"),
    };
    let output = child.output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success() && stdout.contains("1 passed"),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_from_the_environment_go_only_where_it_meant_them() {
    if let Ok(url) = std::env::var(KEY_CHILD) {
        let paired = std::env::var("OPENAI_BASE_URL").is_ok();
        ask_as_the_child(&url, paired).await;
        return;
    }
    let refused = || {
        Reply::status(
            401,
            json!({ "error": { "message": "Incorrect API key provided" } }),
        )
    };
    let api = ModelApi::start(vec![
        refused(),
        refused(),
        refused(),
        refused(),
        refused(),
        Reply::ok(answer()),
    ])
    .await;
    let url = api.url.clone();
    let printed = tokio::task::spawn_blocking(move || run_child(&url, None))
        .await
        .unwrap();
    let received = api.received();
    assert_eq!(received.len(), 5, "{printed}");
    for request in &received[..4] {
        for (name, value) in &request.headers {
            assert!(
                !value.contains("sk-env") && !value.contains("env-gemini"),
                "{} got {name}: {value}",
                request.path
            );
        }
        assert_eq!(request.header("authorization"), None, "{}", request.path);
    }
    assert_eq!(received[4].header("authorization"), Some("Bearer sk-given"));
    // A refusal says which key was held back, and how to send one.
    assert!(
        printed.contains("no key was sent: `OPENAI_API_KEY` goes only to https://api.openai.com")
            && printed.contains("`api_key`"),
        "{printed}"
    );

    // A base URL the environment names beside the key gets it.
    let url = api.url.clone();
    let printed = tokio::task::spawn_blocking(move || run_child(&url, Some(&format!("{url}/v1"))))
        .await
        .unwrap();
    assert!(printed.contains(r#"paired: Ok("ok")"#), "{printed}");
    assert_eq!(
        api.received()[5].header("authorization"),
        Some("Bearer sk-env-openai")
    );
}
