//! Schemas and providers: the agent loop against each model API, with a scripted model in
//! place of the network. The model first gets a unit wrong and sends arguments cut short,
//! reads the errors, fixes its call, and answers.
//!
//! Run with `cargo run -p guide-examples --bin providers`.

use std::sync::atomic::{AtomicUsize, Ordering};

use aleph_tools::BoxFuture;
use aleph_tools::agent::{
    Agent, AgentEvent, ChatModel, Conversation, ModelError, ModelRequest, ModelTurn,
};
use aleph_tools::prelude::*;
use aleph_tools::provider::Provider;
use serde_json::{Value, json};

/// A temperature unit.
#[derive(Clone, Copy, serde::Deserialize, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Unit {
    /// Degrees Celsius
    Celsius,
    /// Degrees Fahrenheit
    Fahrenheit,
}

/// The weather in one place.
#[derive(serde::Serialize, schemars::JsonSchema)]
struct Weather {
    /// The city asked about
    city: String,
    /// Temperature in `unit`
    temperature: f64,
    /// The unit of `temperature`
    unit: Unit,
}

/// Get the current weather in a city.
#[tool(register = false, read_only)]
fn get_weather(
    /// City name, such as "Lisbon"
    city: String,
    /// Unit to report in; Celsius when absent
    unit: Option<Unit>,
) -> Weather {
    let unit = unit.unwrap_or(Unit::Celsius);
    let temperature = match unit {
        Unit::Celsius => 19.5,
        Unit::Fahrenheit => 67.1,
    };
    Weather {
        city,
        temperature,
        unit,
    }
}

/// Add two integers.
#[tool(register = false)]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

/// A model that follows a script, answering in `provider`'s format.
struct Scripted {
    provider: Provider,
    turns: AtomicUsize,
}

impl ChatModel for Scripted {
    fn provider(&self) -> Provider {
        self.provider
    }

    fn respond<'a>(
        &'a self,
        request: ModelRequest<'a>,
    ) -> BoxFuture<'a, Result<ModelTurn, ModelError>> {
        let turn = self.turns.fetch_add(1, Ordering::Relaxed);
        // What the model has read so far: the conversation, tool results included.
        let read = serde_json::to_string(request.conversation.messages()).unwrap_or_default();
        let response = scripted_response(self.provider, turn, &read);
        Box::pin(async move { Ok(ModelTurn::from_response(self.provider, &response)?) })
    }
}

/// What the script answers in `turn`, having read `read`.
fn scripted_response(provider: Provider, turn: usize, read: &str) -> Value {
    match turn {
        // A unit the tool does not know, and arguments cut short.
        0 => calls(
            provider,
            &[
                ("get_weather", json!({ "city": "Lisbon", "unit": "kelvin" })),
                ("add", json!("{\"a\": 2, \"b\"")),
            ],
        ),
        // The errors list the allowed units and say the JSON was cut: fix both.
        1 => {
            let unit = if read.contains("celsius") {
                "celsius"
            } else {
                "kelvin"
            };
            calls(
                provider,
                &[
                    ("get_weather", json!({ "city": "Lisbon", "unit": unit })),
                    ("add", json!({ "a": 2, "b": 40 })),
                ],
            )
        }
        _ => text(provider, "It is 19.5 °C in Lisbon, and 2 + 40 = 42."),
    }
}

/// A response with tool calls, as `provider` writes one. A JSON string as arguments stands
/// for arguments the model sent as broken text.
fn calls(provider: Provider, calls: &[(&str, Value)]) -> Value {
    let as_text = |args: &Value| match args {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    };
    let calls = calls.iter().enumerate();
    match provider {
        Provider::OpenAiChat => {
            let tool_calls: Vec<Value> = calls
                .map(|(i, (name, args))| json!({ "id": format!("call_{i}"), "type": "function", "function": { "name": name, "arguments": as_text(args) } }))
                .collect();
            json!({ "choices": [{ "message": { "role": "assistant", "content": null, "tool_calls": tool_calls }, "finish_reason": "tool_calls" }] })
        }
        Provider::OpenAiResponses => {
            let output: Vec<Value> = calls
                .map(|(i, (name, args))| json!({ "type": "function_call", "call_id": format!("call_{i}"), "name": name, "arguments": as_text(args) }))
                .collect();
            json!({ "output": output })
        }
        Provider::Anthropic => {
            let content: Vec<Value> = calls
                .map(|(i, (name, args))| json!({ "type": "tool_use", "id": format!("toolu_{i}"), "name": name, "input": args }))
                .collect();
            json!({ "role": "assistant", "content": content, "stop_reason": "tool_use" })
        }
        _ => {
            let parts: Vec<Value> = calls
                .map(|(i, (name, args))| json!({ "functionCall": { "id": format!("fc_{i}"), "name": name, "args": args } }))
                .collect();
            json!({ "candidates": [{ "content": { "role": "model", "parts": parts } }] })
        }
    }
}

/// A final answer, as `provider` writes one.
fn text(provider: Provider, text: &str) -> Value {
    match provider {
        Provider::OpenAiChat => {
            json!({ "choices": [{ "message": { "role": "assistant", "content": text } }] })
        }
        Provider::OpenAiResponses => {
            json!({ "output": [{ "type": "message", "content": [{ "type": "output_text", "text": text }] }] })
        }
        Provider::Anthropic => {
            json!({ "role": "assistant", "content": [{ "type": "text", "text": text }] })
        }
        _ => {
            json!({ "candidates": [{ "content": { "role": "model", "parts": [{ "text": text }] } }] })
        }
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = AlephToolServer::builder()
        .with_tool(GetWeatherTool)
        .with_tool(AddTool)
        .build()
        .unwrap();

    for size in server.tools().sizes() {
        println!(
            "{:<17} {} tools, {:>4} bytes, ~{} tokens",
            size.provider.name(),
            size.tools,
            size.bytes,
            size.tokens
        );
    }

    for provider in [
        Provider::OpenAiChat,
        Provider::OpenAiResponses,
        Provider::Anthropic,
        Provider::Gemini,
    ] {
        println!("\n== {}", provider.name());
        let tools = server.tools().for_provider(provider);
        let model = Scripted {
            provider,
            turns: AtomicUsize::new(0),
        };
        let mut conversation = Conversation::new(provider);
        conversation.push_user("How warm is Lisbon, and what is 2 + 40?");
        let outcome = Agent::new()
            .on_event(|event| {
                if let AgentEvent::ToolFinished { call, result, .. } = event {
                    println!("  {} -> {}", call.name, result.model_text());
                }
            })
            .run(&server, &model, &mut conversation)
            .await?;
        println!("model: {}", outcome.text);
        println!(
            "({} tools offered; {} rounds; {} messages in the conversation)",
            count_tools(provider, &tools),
            outcome.rounds,
            conversation.messages().len()
        );
    }
    Ok(())
}

fn count_tools(provider: Provider, tools: &Value) -> usize {
    match provider {
        Provider::Gemini => tools[0]["functionDeclarations"]
            .as_array()
            .map_or(0, Vec::len),
        _ => tools.as_array().map_or(0, Vec::len),
    }
}
