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
use aleph_tools::{CoercionKind, IncompatibleTools, RegistryError, ToolErrorKind, ToolFilter};
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

mod media;
mod rounds;
mod sizes;
mod tool_lists;
