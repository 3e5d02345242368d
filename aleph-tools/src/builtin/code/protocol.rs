//! The line protocol a code-mode runtime speaks: one JSON message per line each way, read
//! with a limit on the line, and the lines that are not the protocol's kept as output.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde::Deserialize;
use serde_json::{Value, json};
use tokio::io::{AsyncBufRead, AsyncBufReadExt as _, AsyncWriteExt as _};
use tokio::sync::mpsc;

/// One line the runtime wrote, as the protocol reads it.
#[derive(Debug, Deserialize)]
#[serde(tag = "t", rename_all = "lowercase")]
pub(super) enum Message {
    Call {
        id: u64,
        tool: String,
        #[serde(default)]
        args: Value,
    },
    Log {
        text: String,
    },
    Done {
        /// Left out when the script returned nothing; `null` when it returned `null`.
        #[serde(default, deserialize_with = "present")]
        value: Option<Value>,
    },
    Error {
        message: String,
        #[serde(default)]
        line: Option<u64>,
    },
}

/// A field that is there, `null` included.
fn present<'de, D: serde::Deserializer<'de>>(field: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(field).map(Some)
}

/// What came out of the runtime's standard output.
pub(super) enum Incoming {
    Message(Message),
    /// A call line the host cannot read (cut at the line limit, or not JSON it takes): the
    /// call fails with the reason, so the script is not left waiting.
    BadCall {
        id: u64,
        reason: String,
    },
    /// A `done` or `error` line the host cannot read.
    BadEnd(String),
    /// A line that is not the protocol's (written past the `tools` object), shown as output.
    Text(Vec<u8>),
}

/// Writes each line to the runtime's standard input until the channel closes or the pipe
/// does.
pub(super) async fn write_lines(
    mut stdin: tokio::process::ChildStdin,
    mut lines: mpsc::UnboundedReceiver<String>,
    waiting: Arc<AtomicUsize>,
) {
    while let Some(mut line) = lines.recv().await {
        line.push('\n');
        if stdin.write_all(line.as_bytes()).await.is_err() {
            return;
        }
        waiting.fetch_sub(line.len(), Ordering::Relaxed);
    }
}

/// Reads the runtime's standard output line by line, each kept to `limit` bytes (a longer
/// line is cut and read as output), until it closes or nobody listens.
pub(super) async fn read_lines(
    mut stdout: impl AsyncBufRead + Unpin,
    lines: mpsc::Sender<Incoming>,
    limit: usize,
) {
    let mut line = Vec::new();
    loop {
        line.clear();
        let mut cut = false;
        loop {
            let Ok(buf) = stdout.fill_buf().await else {
                return;
            };
            if buf.is_empty() {
                if line.is_empty() {
                    return;
                }
                break;
            }
            let newline = buf.iter().position(|&b| b == b'\n');
            let piece = &buf[..newline.unwrap_or(buf.len())];
            let room = limit.saturating_sub(line.len());
            line.extend_from_slice(&piece[..piece.len().min(room)]);
            cut |= piece.len() > room;
            let used = newline.map_or(buf.len(), |at| at + 1);
            stdout.consume(used);
            if newline.is_some() {
                break;
            }
        }
        if line.is_empty() {
            continue;
        }
        let incoming = match serde_json::from_slice::<Message>(&line) {
            Ok(message) if !cut => Incoming::Message(message),
            Ok(_) => unreadable(&line, format!("the line is longer than {limit} bytes")),
            Err(error) => unreadable(&line, error.to_string()),
        };
        let incoming = match incoming {
            Incoming::Text(mut text) if cut => {
                text.extend_from_slice(b" [... the rest of this line was left out]");
                Incoming::Text(text)
            }
            other => other,
        };
        line.clear();
        if lines.send(incoming).await.is_err() {
            return;
        }
    }
}

/// A line that is not a message the host reads: a call or an ending that could not be read
/// (`reason` says why) when it starts as the runner writes them, else output.
fn unreadable(line: &[u8], reason: String) -> Incoming {
    if let Some(rest) = line.strip_prefix(br#"{"t":"call","id":"#) {
        let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
        if let Some(id) = std::str::from_utf8(&rest[..digits])
            .ok()
            .and_then(|id| id.parse().ok())
        {
            return Incoming::BadCall {
                id,
                reason: format!("the call could not be read: {reason}"),
            };
        }
    }
    if line.starts_with(br#"{"t":"done""#) || line.starts_with(br#"{"t":"error""#) {
        return Incoming::BadEnd(reason);
    }
    Incoming::Text(line.to_vec())
}

/// The line that answers the script's call `id`.
pub(super) fn answer_line(id: u64, answer: Result<Value, String>) -> String {
    match answer {
        Ok(value) => json!({ "id": id, "ok": true, "value": value }),
        Err(error) => json!({ "id": id, "ok": false, "error": error }),
    }
    .to_string()
}
