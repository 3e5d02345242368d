//! A model API on loopback for the agent tests: it answers each request with the next
//! scripted reply (a JSON body with a status and headers, or a server-sent-event stream cut
//! into pieces), and records every request it received, so a test can assert the exact
//! bodies the client sent.

use std::io;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// One scripted answer.
#[derive(Debug, Clone)]
pub enum Reply {
    /// A status, extra headers, and a JSON body.
    Json {
        /// The HTTP status.
        status: u16,
        /// Extra headers (`retry-after`, …).
        headers: Vec<(String, String)>,
        /// The body.
        body: Value,
    },
    /// `200` with `text/event-stream`: `events` (each the `data:` of one event) written in
    /// pieces of `piece` bytes, `pause` apart, then the connection closed.
    Stream {
        /// The `data:` of each event, in order.
        events: Vec<String>,
        /// How many bytes each write carries.
        piece: usize,
        /// The pause between writes.
        pause: Duration,
    },
    /// Nothing for this long, then a `200` with an empty JSON object.
    Silence(Duration),
    /// `200` with `text/event-stream`: `head`, then `again` over and over until the client
    /// hangs up (`again` with no line end makes one line that never ends).
    Endless {
        /// Written once, first.
        head: String,
        /// Written again and again.
        again: String,
    },
}

impl Reply {
    /// `200` with `body`.
    pub fn ok(body: Value) -> Self {
        Self::Json {
            status: 200,
            headers: Vec::new(),
            body,
        }
    }

    /// `status` with `body`.
    pub fn status(status: u16, body: Value) -> Self {
        Self::Json {
            status,
            headers: Vec::new(),
            body,
        }
    }

    /// A stream of these events, cut into pieces of 7 bytes (so lines, and characters,
    /// are cut between writes). A JSON string is sent as its text (`"[DONE]"`, or a chunk
    /// that is not JSON); anything else as JSON.
    pub fn stream(events: impl IntoIterator<Item = Value>) -> Self {
        Self::Stream {
            events: events
                .into_iter()
                .map(|event| match event {
                    Value::String(text) => text,
                    other => other.to_string(),
                })
                .collect(),
            piece: 7,
            pause: Duration::from_millis(1),
        }
    }
}

/// A request the API received.
#[derive(Debug, Clone)]
pub struct Received {
    /// The request line's target (`/v1/chat/completions`).
    pub path: String,
    /// Header names (lower case) and values.
    pub headers: Vec<(String, String)>,
    /// The body, as JSON.
    pub body: Value,
}

impl Received {
    /// The value of header `name` (lower case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// The API, running until the test's runtime ends.
#[derive(Debug, Clone)]
pub struct ModelApi {
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    received: Arc<Mutex<Vec<Received>>>,
}

impl ModelApi {
    /// Starts the API with its script: the n-th request gets the n-th reply; requests past
    /// the script get a `500` saying so.
    ///
    /// # Panics
    ///
    /// When no loopback port can be bound.
    pub async fn start(script: Vec<Reply>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind loopback");
        let url = format!("http://{}", listener.local_addr().expect("an address"));
        let received = Arc::new(Mutex::new(Vec::new()));
        let script = Arc::new(Mutex::new(script.into_iter()));
        let log = Arc::clone(&received);
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let log = Arc::clone(&log);
                let script = Arc::clone(&script);
                tokio::spawn(async move {
                    let _ = answer(stream, &log, &script).await;
                });
            }
        });
        Self { url, received }
    }

    /// Every request so far, in order.
    ///
    /// # Panics
    ///
    /// When a thread panicked holding the log.
    pub fn received(&self) -> Vec<Received> {
        self.received.lock().expect("the log").clone()
    }

    /// The bodies of every request so far, in order.
    pub fn bodies(&self) -> Vec<Value> {
        self.received().into_iter().map(|r| r.body).collect()
    }
}

type Script = Mutex<std::vec::IntoIter<Reply>>;

async fn answer(
    mut stream: TcpStream,
    log: &Mutex<Vec<Received>>,
    script: &Script,
) -> io::Result<()> {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if stream.read(&mut byte).await? == 0 {
            return Ok(());
        }
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    let path = head.split_whitespace().nth(1).unwrap_or("/").to_owned();
    let headers: Vec<(String, String)> = head
        .lines()
        .skip(1)
        .filter_map(|line| line.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0u8; length];
    stream.read_exact(&mut body).await?;
    let body = serde_json::from_slice(&body).unwrap_or(Value::Null);
    log.lock().expect("the log").push(Received {
        path,
        headers,
        body,
    });
    let reply = script.lock().expect("the script").next();
    write_reply(&mut stream, reply).await?;
    stream.shutdown().await
}

/// Writes `reply`, or a `500` saying none was scripted.
async fn write_reply(stream: &mut TcpStream, reply: Option<Reply>) -> io::Result<()> {
    match reply {
        Some(Reply::Json {
            status,
            headers,
            body,
        }) => {
            let body = body.to_string();
            let mut out = format!(
                "HTTP/1.1 {status} Scripted\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
                body.len()
            );
            for (name, value) in headers {
                out.push_str(&name);
                out.push_str(": ");
                out.push_str(&value);
                out.push_str("\r\n");
            }
            out.push_str("\r\n");
            out.push_str(&body);
            stream.write_all(out.as_bytes()).await?;
        }
        Some(Reply::Stream {
            events,
            piece,
            pause,
        }) => {
            stream
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n")
                .await?;
            let text: String = events
                .iter()
                .flat_map(|e| ["data: ", e.as_str(), "\n\n"])
                .collect();
            for chunk in text.as_bytes().chunks(piece.max(1)) {
                stream.write_all(chunk).await?;
                stream.flush().await?;
                tokio::time::sleep(pause).await;
            }
        }
        Some(Reply::Endless { head, again }) => {
            stream
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n")
                .await?;
            stream.write_all(head.as_bytes()).await?;
            let block = again.repeat((64 << 10) / again.len().max(1) + 1);
            // Until the write fails: the client hung up.
            loop {
                stream.write_all(block.as_bytes()).await?;
            }
        }
        Some(Reply::Silence(wait)) => {
            tokio::time::sleep(wait).await;
            stream
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}")
                .await?;
        }
        None => {
            let body = r#"{"error":{"message":"no reply scripted for this request"}}"#;
            stream
                .write_all(
                    format!(
                        "HTTP/1.1 500 Unscripted\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                        body.len()
                    )
                    .as_bytes(),
                )
                .await?;
        }
    }
    Ok(())
}
