//! `subscriptions/listen`, the 2026-07-28 way to hear of changes, driven by hand: a change
//! made the moment the acknowledgment arrives, filters the server cannot honour, and
//! malformed requests. (The Python SDK listens in `mcp_serve`.)

use std::time::Duration;

use aleph_tools::AlephToolServer;
use aleph_tools::mcp::{McpResource, McpServer};
use aleph_tools_tests::{Echo, RawMcp};
use serde_json::{Value, json};

const NOTE: &str = "memo://note";

/// A server of no tools and one resource, and its MCP server (whose clones reach every
/// session).
fn served() -> (AlephToolServer, McpServer) {
    let tools = AlephToolServer::new();
    let mcp =
        McpServer::new(&tools).with_resources(McpResource::text(NOTE, "note", "text/plain", "hi"));
    (tools, mcp)
}

/// Opens a listen stream for `filter` and returns the filter the acknowledgment says is
/// honoured.
async fn listen(raw: &mut RawMcp, filter: Value) -> Value {
    let id = raw
        .send("subscriptions/listen", json!({ "notifications": filter }))
        .await;
    let message = until(raw, |message| {
        message["method"] == "notifications/subscriptions/acknowledged" || message["id"] == id
    })
    .await;
    assert_eq!(
        message["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        json!(id),
        "{message}"
    );
    message["params"]["notifications"].clone()
}

/// The next message `wanted` picks, within ten seconds.
async fn until(raw: &mut RawMcp, wanted: impl Fn(&Value) -> bool) -> Value {
    tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            let message = raw.next_message().await;
            if wanted(&message) {
                return message;
            }
        }
    })
    .await
    .expect("the message came within ten seconds")
}

/// The server takes where a stream starts when it accepts it, before it acknowledges: a
/// change made as soon as the client hears the acknowledgment is never lost in between.
/// Many sessions on a runtime of two threads give the race room to happen.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_made_as_the_acknowledgment_arrives_is_heard() {
    for round in 0..50 {
        let (tools, mcp) = served();
        let mut raw = RawMcp::start(mcp.clone(), json!({}));
        let honoured = listen(
            &mut raw,
            json!({ "resourceSubscriptions": [NOTE], "toolsListChanged": true }),
        )
        .await;
        assert_eq!(
            honoured,
            json!({ "resourceSubscriptions": [NOTE], "toolsListChanged": true })
        );
        mcp.resource_updated(NOTE);
        tools
            .add(Echo::named(format!("echo_{round}")))
            .expect("a new name");
        let mut heard = Vec::new();
        while heard.len() < 2 {
            let message = until(&mut raw, |message| message.get("method").is_some()).await;
            heard.push(message["method"].as_str().unwrap_or_default().to_owned());
        }
        heard.sort();
        assert_eq!(
            heard,
            [
                "notifications/resources/updated",
                "notifications/tools/list_changed"
            ],
            "round {round}"
        );
    }
}

/// Only what the stream asked for and the server serves is heard: another URI's update
/// is not, and resource filters on a server without resources are left out of the
/// acknowledgment.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_hears_only_what_it_asked_for_and_the_server_serves() {
    let (tools, mcp) = served();
    let mut raw = RawMcp::start(mcp.clone(), json!({}));
    listen(
        &mut raw,
        json!({ "resourceSubscriptions": ["memo://other"] }),
    )
    .await;
    mcp.resource_updated(NOTE);
    mcp.resource_updated("memo://other");
    let heard = until(&mut raw, |message| message.get("method").is_some()).await;
    assert_eq!(heard["method"], "notifications/resources/updated");
    assert_eq!(heard["params"]["uri"], "memo://other", "{heard}");

    let bare = McpServer::new(&tools);
    let mut raw = RawMcp::start(bare, json!({}));
    let honoured = listen(
        &mut raw,
        json!({ "resourceSubscriptions": [NOTE], "resourcesListChanged": true, "toolsListChanged": true }),
    )
    .await;
    assert_eq!(honoured, json!({ "toolsListChanged": true }));
}

/// Filters that are not filters are invalid params saying what does not fit (not "method
/// not found", as rmcp alone answers any request it cannot read), and the session serves
/// on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_listen_requests_are_invalid_params() {
    let (_tools, mcp) = served();
    let mut raw = RawMcp::start(mcp, json!({}));
    for params in [
        json!({}),
        json!({ "notifications": "everything" }),
        json!({ "notifications": { "resourceSubscriptions": NOTE } }),
        json!({ "notifications": { "toolsListChanged": "yes" } }),
    ] {
        let answer = raw.request("subscriptions/listen", params.clone()).await;
        assert_eq!(answer["code"], -32602, "{params}: {answer}");
        let message = answer["message"].as_str().unwrap_or_default();
        assert!(
            message.starts_with("the params of `subscriptions/listen` do not fit it: "),
            "{message}"
        );
    }
    let unknown = raw.request("subscriptions/everything", json!({})).await;
    assert_eq!(unknown["code"], -32601, "{unknown}");
    let call = raw.request("tools/call", json!({ "name": 7 })).await;
    assert_eq!(call["code"], -32602, "{call}");
    assert!(
        call["message"]
            .as_str()
            .unwrap_or_default()
            .contains("invalid type"),
        "{call}"
    );
    let listed = raw.request("tools/list", json!({})).await;
    assert_eq!(listed["tools"], json!([]), "{listed}");
}
