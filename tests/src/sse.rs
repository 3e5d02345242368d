//! Server-sent events as an MCP client over streamable HTTP reads them: whole streams, the
//! first events of one (the connection dropped after them), and streams resumed with
//! `Last-Event-ID`.

use std::time::Duration;

use serde_json::Value;

use crate::mcp_http::VERSION;

/// One server-sent event.
#[derive(Debug, Default, Clone)]
pub struct Event {
    /// Its `id:`, where the client resumes after it.
    pub id: Option<String>,
    /// Its `retry:`, in milliseconds.
    pub retry: Option<u64>,
    /// Its `data:` lines, joined.
    pub data: String,
}

impl Event {
    /// The JSON-RPC message the event carries, if any.
    pub fn message(&self) -> Option<Value> {
        serde_json::from_str(&self.data).ok()
    }
}

/// The events in `text`, and the rest of it that does not end an event yet.
fn parse(text: &str) -> (Vec<Event>, &str) {
    let mut all = Vec::new();
    let mut rest = text;
    while let Some(end) = rest.find("\n\n") {
        let mut event = Event::default();
        let mut seen = false;
        for line in rest[..end].lines() {
            seen = true;
            let (field, value) = line.split_once(':').unwrap_or((line, ""));
            let value = value.strip_prefix(' ').unwrap_or(value);
            match field {
                "id" => event.id = Some(value.to_owned()),
                "retry" => event.retry = value.parse().ok(),
                "data" => event.data.push_str(value),
                _ => {}
            }
        }
        if seen {
            all.push(event);
        }
        rest = &rest[end + 2..];
    }
    (all, rest)
}

/// Every event of a stream, read until the server ends it.
///
/// # Panics
///
/// When the stream does not end within 20 seconds or cannot be read.
pub async fn events(response: reqwest::Response) -> Vec<Event> {
    let text = tokio::time::timeout(Duration::from_secs(20), response.text())
        .await
        .expect("the server ends the stream")
        .expect("the stream reads");
    let (mut all, rest) = parse(&text);
    all.extend(parse(&format!("{rest}\n\n")).0);
    all
}

/// The events of a stream until one satisfies `enough`, then the connection is dropped, as
/// a network that fails drops it.
///
/// # Panics
///
/// When no such event comes within 20 seconds, or the stream ends first (saying what it
/// carried).
pub async fn events_until(
    mut response: reqwest::Response,
    enough: impl Fn(&Event) -> bool,
) -> Vec<Event> {
    let mut text = String::new();
    let mut all = Vec::new();
    loop {
        let chunk = tokio::time::timeout(Duration::from_secs(20), response.chunk())
            .await
            .expect("an event comes")
            .expect("the stream reads")
            .unwrap_or_else(|| {
                panic!("the stream ended before the event looked for; it carried {all:?}, then {text:?}")
            });
        text.push_str(&String::from_utf8_lossy(&chunk));
        let (found, rest) = parse(&text);
        let rest = rest.to_owned();
        let done = found.iter().any(&enough);
        all.extend(found);
        if done {
            return all;
        }
        text = rest;
    }
}

/// Reconnects to `session`'s stream after the event `last_event_id`.
///
/// # Panics
///
/// When the server cannot be reached.
pub async fn resume(
    http: &reqwest::Client,
    url: &str,
    session: &str,
    last_event_id: &str,
) -> reqwest::Response {
    http.get(url)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", session)
        .header("mcp-protocol-version", VERSION)
        .header("last-event-id", last_event_id)
        .send()
        .await
        .unwrap()
}

/// The id of the last event of a stream that had one: where the client resumes.
///
/// # Panics
///
/// When no event had an id.
pub fn last_id(stream: &[Event]) -> String {
    stream
        .iter()
        .rev()
        .find_map(|event| event.id.clone())
        .expect("a stream has events with ids")
}

/// The answer to request `id` among `events`, if there.
pub fn answer(events: &[Event], id: u64) -> Option<Value> {
    events
        .iter()
        .filter_map(Event::message)
        .find(|message| message["id"] == id)
}

/// The `progress` values of the progress notifications among `events`, in order.
pub fn progress(events: &[Event]) -> Vec<f64> {
    events
        .iter()
        .filter_map(Event::message)
        .filter(|message| message["method"] == "notifications/progress")
        .filter_map(|message| message["params"]["progress"].as_f64())
        .collect()
}
