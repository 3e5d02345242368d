//! Code mode: the same task (fetch 20 items, add up their prices) done by a scripted model
//! three ways through the agent loop, counting the model's round trips and what is sent to
//! it: one tool call per round, twenty calls in one round, and one `code` call whose script
//! makes the twenty calls in the sandbox.
//!
//! Run with `cargo run -p guide-examples --bin code_mode` (it needs `node`).

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use aleph_tools::BoxFuture;
use aleph_tools::agent::{Agent, ChatModel, Conversation, ModelError, ModelRequest, ModelTurn};
use aleph_tools::builtin::CodeMode;
use aleph_tools::prelude::*;
use aleph_tools::provider::Provider;
use serde_json::{Value, json};

// ANCHOR: tool
/// An item of the catalogue.
#[derive(serde::Serialize, schemars::JsonSchema)]
struct Item {
    /// Its number
    id: u32,
    /// What it is called
    name: String,
    /// What the catalogue says about it
    description: String,
    /// Its price in cents
    price: u64,
    /// How many are in stock
    stock: u32,
}

/// Look up an item of the catalogue by its number.
#[tool(register = false, read_only, callers = [human, code_execution])]
fn get_item(
    /// The item's number, from 1 to 20
    id: u32,
) -> Result<Item, String> {
    if !(1..=20).contains(&id) {
        return Err(format!("there is no item {id}; items are numbered 1 to 20"));
    }
    Ok(Item {
        id,
        name: format!("Item {id}"),
        description: format!(
            "Item {id} of the spring catalogue: sturdy, light, and made to last; ships in two days."
        ),
        price: u64::from(id) * 125,
        stock: id % 7,
    })
}
// ANCHOR_END: tool

/// The script the model writes for the task.
const SCRIPT: &str = r"
// ANCHOR: script
const items = await Promise.all(
  Array.from({ length: 20 }, (_, i) => tools.get_item({ id: i + 1 })),
);
return { items: items.length, total: items.reduce((sum, item) => sum + item.price, 0) };
// ANCHOR_END: script
";

/// How the scripted model goes about the task.
#[derive(Clone, Copy, Debug)]
enum Plan {
    /// One `get_item` call per round.
    OneCallPerRound,
    /// Twenty `get_item` calls in one round.
    AllCallsInOneRound,
    /// One `code` call.
    OneScript,
}

/// A model in the Chat Completions format that follows `plan`, recording what it is sent.
struct Scripted {
    plan: Plan,
    turns: AtomicUsize,
    /// Bytes of each request: the conversation and the tools array.
    sent: Mutex<Vec<usize>>,
}

impl ChatModel for Scripted {
    fn provider(&self) -> Provider {
        Provider::OpenAiChat
    }

    fn respond<'a>(
        &'a self,
        request: ModelRequest<'a>,
    ) -> BoxFuture<'a, Result<ModelTurn, ModelError>> {
        let turn = self.turns.fetch_add(1, Ordering::Relaxed);
        let messages = serde_json::to_value(request.conversation.messages()).unwrap_or_default();
        let bytes = messages.to_string().len() + request.tools.to_string().len();
        self.sent.lock().unwrap().push(bytes);
        let response = self.next(turn, &messages);
        Box::pin(async move { Ok(ModelTurn::from_response(Provider::OpenAiChat, &response)?) })
    }
}

impl Scripted {
    fn new(plan: Plan) -> Self {
        Self {
            plan,
            turns: AtomicUsize::new(0),
            sent: Mutex::new(Vec::new()),
        }
    }

    /// The response for `turn`, having read `messages`.
    fn next(&self, turn: usize, messages: &Value) -> Value {
        let results: Vec<Value> = messages
            .as_array()
            .into_iter()
            .flatten()
            .filter(|m| m["role"] == "tool")
            .filter_map(|m| serde_json::from_str(m["content"].as_str()?).ok())
            .collect();
        match (self.plan, turn) {
            (Plan::OneCallPerRound, 0..20) => calls(&[("get_item", json!({ "id": turn + 1 }))]),
            (Plan::AllCallsInOneRound, 0) => {
                let ids: Vec<(&str, Value)> = (1..=20)
                    .map(|id| ("get_item", json!({ "id": id })))
                    .collect();
                calls(&ids)
            }
            (Plan::OneScript, 0) => calls(&[("code", json!({ "code": SCRIPT }))]),
            (Plan::OneScript, _) => {
                let returned = messages
                    .as_array()
                    .and_then(|all| all.iter().rev().find(|m| m["role"] == "tool"))
                    .and_then(|m| m["content"].as_str())
                    .and_then(|text| text.split("--- returned ---\n").nth(1))
                    .and_then(|rest| rest.lines().next())
                    .and_then(|line| serde_json::from_str::<Value>(line).ok())
                    .unwrap_or_default();
                answer(&format!(
                    "The 20 items cost {} cents in all.",
                    returned["total"]
                ))
            }
            _ => {
                let total: u64 = results.iter().filter_map(|r| r["price"].as_u64()).sum();
                answer(&format!("The 20 items cost {total} cents in all."))
            }
        }
    }
}

fn calls(calls: &[(&str, Value)]) -> Value {
    let tool_calls: Vec<Value> = calls
        .iter()
        .enumerate()
        .map(|(i, (name, args))| json!({ "id": format!("call_{i}"), "type": "function", "function": { "name": name, "arguments": args.to_string() } }))
        .collect();
    json!({ "choices": [{ "message": { "role": "assistant", "content": null, "tool_calls": tool_calls }, "finish_reason": "tool_calls" }] })
}

fn answer(text: &str) -> Value {
    json!({ "choices": [{ "message": { "role": "assistant", "content": text }, "finish_reason": "stop" }] })
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // ANCHOR: server
    let server = AlephToolServer::builder()
        .with_tool(GetItemTool)
        .with_builtin(CodeMode::new())
        .build()?;
    // ANCHOR_END: server
    println!(
        "{:<20} {:>6} {:>10} {:>15} {:>17}",
        "plan", "rounds", "tool calls", "bytes to model", "tool result bytes"
    );
    for plan in [
        Plan::OneCallPerRound,
        Plan::AllCallsInOneRound,
        Plan::OneScript,
    ] {
        let model = Scripted::new(plan);
        let mut conversation = Conversation::new(Provider::OpenAiChat);
        conversation.push_user("What do items 1 to 20 cost in all?");
        let outcome = Agent::new()
            .max_rounds(25)
            .run(&server, &model, &mut conversation)
            .await?;
        let results: usize = serde_json::to_value(conversation.messages())?
            .as_array()
            .into_iter()
            .flatten()
            .filter(|m| m["role"] == "tool")
            .map(|m| m["content"].as_str().map_or(0, str::len))
            .sum();
        let sent: usize = model.sent.lock().unwrap().iter().sum();
        println!(
            "{:<20} {:>6} {:>10} {:>15} {:>17}",
            format!("{plan:?}"),
            outcome.rounds,
            outcome.tool_calls,
            sent,
            results
        );
        let answer = outcome.text;
        assert!(answer.contains("26250 cents"), "{plan:?}: {answer}");
    }
    Ok(())
}
