//! Several tools collected at link time, listed with their schemas, and called by name.

use aleph_tools::prelude::*;
use aleph_tools::provider::Provider;
use serde::{Deserialize, Serialize};
use serde_json::json;

/// Temperature units.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Unit {
    /// Degrees Celsius
    Celsius,
    /// Degrees Fahrenheit
    Fahrenheit,
}

/// A weather report.
#[derive(Serialize, schemars::JsonSchema)]
struct Report {
    city: String,
    temperature: f64,
    unit: Unit,
}

/// Get the current weather for a city.
#[tool(read_only, open_world, tags = ["weather"], timeout = "5s")]
async fn get_weather(
    /// City name, such as "Lisbon"
    city: String,
    /// Unit for the temperature
    #[arg(default = Unit::Celsius)]
    unit: Unit,
) -> anyhow::Result<Report> {
    anyhow::ensure!(
        !city.trim().is_empty(),
        "the city is empty; give a city name"
    );
    // A real tool would ask a weather service here.
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    let celsius = 21.5;
    let temperature = match unit {
        Unit::Celsius => celsius,
        Unit::Fahrenheit => celsius * 9.0 / 5.0 + 32.0,
    };
    Ok(Report {
        city,
        temperature,
        unit,
    })
}

/// Add two integers.
#[tool(read_only, idempotent)]
fn add(
    /// First addend
    a: i64,
    /// Second addend
    b: i64,
) -> Result<i64, String> {
    a.checked_add(b)
        .ok_or_else(|| format!("{a} + {b} overflows a 64-bit integer"))
}

/// Count the words of a text, streaming progress while it works.
#[tool]
fn count_words(
    /// The text to count
    text: String,
    progress: Progress,
) -> ToolOutput {
    let words = text.split_whitespace().count();
    progress.report(1.0, Some(1.0), Some("counted"));
    ToolOutput::new(format!("{words} words"), json!({ "words": words }))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let server = AlephToolServer::from_registry()?;

    println!("== {} tools, collected at link time ==", server.len());
    for definition in server.list_tools() {
        println!("{}", serde_json::to_string_pretty(&*definition)?);
    }

    println!("\n== calls ==");
    let calls = [
        ("get_weather", json!({ "city": "Lisbon" })),
        (
            "get_weather",
            json!({ "city": "Oslo", "unit": "fahrenheit" }),
        ),
        ("add", json!({ "a": 2, "b": 40 })),
        ("count_words", json!({ "text": "the quick brown fox" })),
        // Mistakes come back as results the model can act on:
        ("add", json!({ "a": "two", "b": 40 })),
        ("get_weather", json!({ "unit": "kelvin" })),
        ("add", json!({ "a": i64::MAX, "b": 1 })),
        ("get_wether", json!({ "city": "Rome" })),
    ];
    for (name, args) in calls {
        let result = server.call(name, args.clone()).await;
        let status = if result.success { "ok " } else { "err" };
        println!("{status} {name}({args}) -> {}", result.model_text());
    }

    println!("\n== the same tools for each model API ==");
    for size in server.tool_list_sizes() {
        let size = size?;
        println!(
            "{:<17} {} tools, {:>5} bytes, ~{} tokens",
            size.provider.name(),
            size.tools,
            size.bytes,
            size.tokens
        );
    }
    // One model turn, as Anthropic's API returns it, answered in Anthropic's format.
    let response = json!({
        "role": "assistant",
        "content": [
            { "type": "tool_use", "id": "toolu_1", "name": "GetWeather", "input": { "city": "Lisbon" } },
            { "type": "tool_use", "id": "toolu_2", "name": "add", "input": { "a": 1, "b": 2 } }
        ]
    });
    let round = server
        .run_tool_calls(Provider::Anthropic, &response)
        .await?;
    println!("{}", serde_json::to_string_pretty(&round.messages)?);
    Ok(())
}
