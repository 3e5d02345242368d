//! The agent loop over HTTP: `OpenAiChat` streams from a Chat Completions server, the tools
//! run through the server, and the answer prints as it arrives.
//!
//! `cargo run -p guide-examples --bin agent -- http://localhost:11434/v1 qwen3:8b` talks to
//! a model you run (Ollama here; see the chapter "The agent loop"). With no arguments, a
//! scripted server on loopback stands in for the model, so the program runs anywhere: it
//! answers as the Chat Completions API does, streaming a tool call and then the answer.

use std::io::Write as _;

use aleph_tools::agent::clients::OpenAiChat;
use aleph_tools::agent::{Agent, AgentEvent, ChatModel, Conversation, StreamDelta};
use aleph_tools::prelude::*;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// Get the current weather in a city.
#[tool(register = false, read_only)]
fn get_weather(
    /// City name, such as "Lisbon"
    city: String,
) -> String {
    format!("{city}: 19.5 °C, light wind from the north")
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (base_url, name) = if let (Some(url), Some(model)) = (args.next(), args.next()) {
        (url, model)
    } else {
        let url = scripted_server().await?;
        println!("(a scripted Chat Completions server at {url} stands in for a model)");
        (url, "scripted".to_owned())
    };

    let server = AlephToolServer::builder()
        .with_tool(GetWeatherTool)
        .build()?;
    let model = OpenAiChat::new(name).base_url(base_url);
    let mut conversation = Conversation::new(model.provider())
        .with_system("Answer in one sentence. Use the tools for facts.");
    conversation.push_user("Do I need a jacket in Lisbon today?");

    let outcome = Agent::new()
        .max_rounds(6)
        .on_event(|event| match event {
            AgentEvent::Delta(StreamDelta::Text(text)) => {
                print!("{text}");
                let _ = std::io::stdout().flush();
            }
            AgentEvent::ToolFinished { call, result, .. } => {
                println!("[{} -> {}]", call.name, result.model_text());
            }
            _ => {}
        })
        .run(&server, &model, &mut conversation)
        .await?;
    println!(
        "\n({} rounds, {} tool calls, {} messages in the conversation)",
        outcome.rounds,
        outcome.tool_calls,
        conversation.messages().len()
    );
    Ok(())
}

/// Starts a server on loopback that answers as the Chat Completions API streams: a call to
/// `get_weather` first, then, once the result is in the conversation, an answer built from
/// it. Returns its base URL.
async fn scripted_server() -> std::io::Result<String> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/v1", listener.local_addr()?);
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let Some(body) = read_request(&mut stream).await else {
                    return;
                };
                let events = answer(&body);
                let mut out = String::from(
                    "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n",
                );
                for event in events {
                    out.push_str("data: ");
                    out.push_str(&event);
                    out.push_str("\n\n");
                }
                let _ = stream.write_all(out.as_bytes()).await;
            });
        }
    });
    Ok(url)
}

/// The JSON body of one HTTP request.
async fn read_request(stream: &mut tokio::net::TcpStream) -> Option<Value> {
    let mut data = Vec::new();
    let mut buffer = [0u8; 4096];
    loop {
        let read = stream.read(&mut buffer).await.ok()?;
        if read == 0 {
            return None;
        }
        data.extend_from_slice(&buffer[..read]);
        let text = String::from_utf8_lossy(&data);
        if let Some(end) = text.find("\r\n\r\n") {
            let length: usize = text[..end]
                .lines()
                .find_map(|line| {
                    let (name, value) = line.split_once(':')?;
                    name.eq_ignore_ascii_case("content-length")
                        .then(|| value.trim().parse().ok())?
                })
                .unwrap_or(0);
            if data.len() >= end + 4 + length {
                return serde_json::from_slice(&data[end + 4..end + 4 + length]).ok();
            }
        }
    }
}

/// The stream's events: a tool call, or the answer once the conversation holds a result.
fn answer(body: &Value) -> Vec<String> {
    let chunk = |delta: Value, finish: Option<&str>| {
        json!({ "object": "chat.completion.chunk",
                "choices": [{ "index": 0, "delta": delta, "finish_reason": finish }] })
        .to_string()
    };
    let result = body["messages"]
        .as_array()
        .and_then(|messages| messages.iter().rev().find(|m| m["role"] == "tool"))
        .and_then(|m| m["content"].as_str());
    let mut events = match result {
        None => vec![
            chunk(
                json!({ "role": "assistant", "tool_calls": [{ "index": 0, "id": "call_1", "type": "function",
                    "function": { "name": "get_weather", "arguments": "" } }] }),
                None,
            ),
            chunk(
                json!({ "tool_calls": [{ "index": 0, "function": { "arguments": "{\"city\": \"Lisbon\"}" } }] }),
                None,
            ),
            chunk(json!({}), Some("tool_calls")),
        ],
        Some(weather) => {
            let reply = format!("The tool says {weather}, so a light jacket will do.");
            let mut events: Vec<String> = reply
                .split_inclusive(' ')
                .map(|word| chunk(json!({ "content": word }), None))
                .collect();
            events.push(chunk(json!({}), Some("stop")));
            events
        }
    };
    events.push("[DONE]".to_owned());
    events
}
