//! A model cannot flood the server with tool calls: the agent loop runs a bounded number of
//! one turn's calls, a bounded number at once, and answers the rest with the limit.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use aleph_tools::BoxFuture;
use aleph_tools::agent::{Agent, ChatModel, Conversation, ModelError, ModelRequest, ModelTurn};
use aleph_tools::prelude::*;
use aleph_tools::provider::Provider;
use serde_json::{Value, json};

/// Calls running now, and the most seen at once.
#[derive(Default)]
struct Gauge {
    now: AtomicUsize,
    most: AtomicUsize,
    runs: AtomicUsize,
}

/// Counts itself while it runs, yielding so that other calls can start beside it.
#[tool(register = false)]
async fn count_me(gauge: State<Arc<Gauge>>) -> u64 {
    let now = gauge.now.fetch_add(1, Ordering::SeqCst) + 1;
    gauge.most.fetch_max(now, Ordering::SeqCst);
    gauge.runs.fetch_add(1, Ordering::SeqCst);
    for _ in 0..20 {
        tokio::task::yield_now().await;
    }
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    gauge.now.fetch_sub(1, Ordering::SeqCst);
    1
}

/// Asks for `calls` calls of `count_me` in its first turn, then answers in text.
struct Flood {
    calls: usize,
}

impl ChatModel for Flood {
    fn provider(&self) -> Provider {
        Provider::Anthropic
    }

    fn respond<'a>(
        &'a self,
        request: ModelRequest<'a>,
    ) -> BoxFuture<'a, Result<ModelTurn, ModelError>> {
        let answered = request.conversation.messages().len() > 1;
        let calls = self.calls;
        Box::pin(async move {
            let content: Vec<Value> = if answered {
                vec![json!({ "type": "text", "text": "done" })]
            } else {
                (0..calls)
                    .map(|i| {
                        json!({ "type": "tool_use", "id": format!("toolu_{i}"), "name": "count_me", "input": {} })
                    })
                    .collect()
            };
            Ok(ModelTurn::from_response(
                Provider::Anthropic,
                &json!({ "content": content }),
            )?)
        })
    }
}

async fn flood(agent: Agent, calls: usize) -> (Arc<Gauge>, Vec<ToolResultSummary>) {
    let gauge = Arc::new(Gauge::default());
    let server = AlephToolServer::builder()
        .with_tool(CountMeTool)
        .with_state(Arc::clone(&gauge))
        .build()
        .unwrap();
    let results = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = Arc::clone(&results);
    let mut conversation = Conversation::new(Provider::Anthropic);
    conversation.push_user("count");
    let outcome = agent
        .on_event(move |event| {
            if let aleph_tools::agent::AgentEvent::ToolFinished { result, .. } = event {
                seen.lock().unwrap().push(ToolResultSummary {
                    success: result.success,
                    text: result.model_text().into_owned(),
                });
            }
        })
        .run(&server, &Flood { calls }, &mut conversation)
        .await
        .unwrap();
    assert_eq!(outcome.text, "done");
    let results = std::mem::take(&mut *results.lock().unwrap());
    (gauge, results)
}

struct ToolResultSummary {
    success: bool,
    text: String,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_turn_of_a_hundred_calls_runs_thirty_two_eight_at_once() {
    let (gauge, results) = flood(Agent::new(), 100).await;
    assert_eq!(results.len(), 100, "every call is answered");
    assert_eq!(gauge.runs.load(Ordering::SeqCst), 32);
    assert!(results[..32].iter().all(|r| r.success));
    for refused in &results[32..] {
        assert!(!refused.success);
        assert!(
            refused.text.contains("at most 32 run in one turn"),
            "{}",
            refused.text
        );
    }
    let most = gauge.most.load(Ordering::SeqCst);
    assert!(most <= 8, "{most} calls ran at once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_limits_are_the_agents_to_set() {
    let agent = Agent::new().max_calls_per_round(5).max_concurrent_calls(2);
    let (gauge, results) = flood(agent, 12).await;
    assert_eq!(gauge.runs.load(Ordering::SeqCst), 5);
    assert_eq!(results.iter().filter(|r| !r.success).count(), 7);
    assert!(gauge.most.load(Ordering::SeqCst) <= 2);
}
