//! Newline-delimited JSON-RPC over a byte stream pair (stdio, a socket, a pipe), for
//! serving. The session reads the lines itself, as it asks for the next message: each
//! message it can read is handed over, and each it cannot is answered at once with the
//! JSON-RPC error that says why (see [`unreadable`](super::unreadable)), so a client never
//! waits on a line the server dropped. Lines are read up to a limit, past which the rest of
//! the line is skipped unread.
//!
//! No task stands between the stream and the session: a message is read, parsed and
//! handled on the task that serves the session, and each answer is one write of its line
//! and newline.

use std::sync::Arc;

use rmcp::RoleServer;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::Mutex;
use tokio::task::JoinHandle;

use super::decode::client_message;
use super::unreadable::{ID_SEARCHED, Unreadable};

/// The writing half, shared by the session's answers and the answers to unreadable lines.
type Writer<W> = Arc<Mutex<Option<W>>>;

/// One client's stream pair, as an rmcp transport.
pub(super) struct LineTransport<R, W> {
    reader: BufReader<R>,
    /// The line being read. The session stops waiting for a message whenever something
    /// else comes first (an answer to send, a cancellation), which drops the read where it
    /// stood: what it had taken from the stream is kept here, and the next read goes on.
    line: Vec<u8>,
    /// Whether the line in `line` went past `max_line` (its start kept, the rest skipped).
    too_long: bool,
    /// Whether `line` holds a line handed over already, to be cleared before the next.
    read: bool,
    max_line: usize,
    writer: Writer<W>,
    /// The write of an answer to an unreadable line, finished before the next line is
    /// read, so that what comes after that line is answered after it.
    answering: Option<JoinHandle<()>>,
}

impl<R, W> LineTransport<R, W>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    /// Reads `reader`, lines of at most `max_line` bytes, and writes to `writer`.
    pub(super) fn start(reader: R, writer: W, max_line: usize) -> Self {
        Self {
            reader: BufReader::new(reader),
            line: Vec::new(),
            too_long: false,
            read: false,
            max_line,
            writer: Arc::new(Mutex::new(Some(writer))),
            answering: None,
        }
    }

    /// Reads one line into `self.line` (without its newline), at most `max_line` bytes of
    /// it. Stopped at an await, it loses nothing: the buffered reader keeps what it has not
    /// handed out, and what it has is in `self.line`.
    async fn next_line(&mut self) -> Line {
        if self.read {
            self.line.clear();
            self.too_long = false;
            self.read = false;
        }
        let line = loop {
            let available = match self.reader.fill_buf().await {
                // A last line without its newline is a line all the same.
                Ok([]) if self.too_long => break Line::TooLong,
                Ok([]) if !self.line.is_empty() => break Line::Whole,
                Ok([]) | Err(_) => return Line::End,
                Ok(available) => available,
            };
            let newline = available.iter().position(|&byte| byte == b'\n');
            let take = newline.map_or(available.len(), |at| at + 1);
            if !self.too_long {
                let part = &available[..newline.unwrap_or(available.len())];
                if self.line.len() + part.len() > self.max_line {
                    // Keep the start, to find the request's id in; skip the rest.
                    let room = ID_SEARCHED.saturating_sub(self.line.len()).min(part.len());
                    self.line.extend_from_slice(&part[..room]);
                    self.line.truncate(ID_SEARCHED);
                    self.line.shrink_to(ID_SEARCHED);
                    self.too_long = true;
                } else {
                    self.line.extend_from_slice(part);
                }
            }
            self.reader.consume(take);
            if newline.is_some() {
                break if self.too_long {
                    Line::TooLong
                } else {
                    Line::Whole
                };
            }
        };
        self.read = true;
        line
    }
}

/// Writes `line`, which ends with its newline, in one write, and flushes; an error once the
/// transport is closed.
async fn write_line<W>(writer: &Writer<W>, line: &[u8]) -> std::io::Result<()>
where
    W: AsyncWrite + Unpin,
{
    let mut writer = writer.lock().await;
    let Some(writer) = writer.as_mut() else {
        return Err(std::io::Error::new(
            std::io::ErrorKind::NotConnected,
            "the transport is closed",
        ));
    };
    writer.write_all(line).await?;
    writer.flush().await
}

impl<R, W> Transport<RoleServer> for LineTransport<R, W>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: ServerJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let writer = Arc::clone(&self.writer);
        async move {
            let mut line = Vec::with_capacity(256);
            serde_json::to_writer(&mut line, &item)?;
            line.push(b'\n');
            write_line(&writer, &line).await
        }
    }

    async fn receive(&mut self) -> Option<ClientJsonRpcMessage> {
        loop {
            if let Some(answering) = &mut self.answering {
                // Waiting on the task leaves it running if the session stops waiting.
                let _ = answering.await;
                self.answering = None;
            }
            let unreadable = match self.next_line().await {
                Line::End => return None,
                Line::TooLong => Unreadable::too_large(&self.line, self.max_line),
                Line::Whole => {
                    let message = trimmed(&self.line);
                    if message.is_empty() {
                        continue;
                    }
                    match client_message(message) {
                        Ok(message) => return Some(message),
                        Err(error) => Unreadable::of(message, &error),
                    }
                }
            };
            if unreadable.notification {
                // JSON-RPC answers no notification, not even with an error; other protocols'
                // notifications on the same pipe are passed over this way too.
                tracing::debug!(
                    "an MCP client sent a notification the server cannot read: {}",
                    unreadable.message()
                );
                continue;
            }
            let mut answer = unreadable.to_response().to_string().into_bytes();
            answer.push(b'\n');
            // On a task of its own: a write the session stopped halfway would leave half a
            // line on the stream. The lock keeps it whole beside the session's answers.
            let writer = Arc::clone(&self.writer);
            self.answering = Some(tokio::spawn(async move {
                let _ = write_line(&writer, &answer).await;
            }));
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        let writer = self.writer.lock().await.take();
        if let Some(mut writer) = writer {
            writer.shutdown().await?;
        }
        Ok(())
    }
}

/// What reading a line gave.
enum Line {
    /// A whole line is in the buffer.
    Whole,
    /// The line was longer than the limit: its start is in the buffer, the rest skipped.
    TooLong,
    /// The stream ended, or failed.
    End,
}

/// `line` without a trailing carriage return, surrounding blanks or a byte order mark.
fn trimmed(line: &[u8]) -> &[u8] {
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    line.trim_ascii()
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn id_of(message: &ClientJsonRpcMessage) -> serde_json::Value {
        serde_json::to_value(message).unwrap()["id"].clone()
    }

    #[tokio::test]
    async fn a_read_the_session_stops_halfway_goes_on_where_it_was() {
        let (mut client, server) = tokio::io::duplex(1024);
        let (reader, writer) = tokio::io::split(server);
        let mut transport = LineTransport::start(reader, writer, 1 << 20);
        let line = br#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#;
        client.write_all(&line[..20]).await.unwrap();
        // The session stops waiting while half the line is there, as when an answer is
        // ready to go first.
        let waited = tokio::time::timeout(Duration::from_millis(50), transport.receive()).await;
        assert!(waited.is_err(), "half a line is no message");
        client.write_all(&line[20..]).await.unwrap();
        client
            .write_all(b"\n{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"ping\"}\n")
            .await
            .unwrap();
        let message = transport.receive().await.expect("the whole line");
        assert_eq!(id_of(&message), 7);
        let message = transport.receive().await.expect("the next line");
        assert_eq!(id_of(&message), 8);
        drop(client);
        assert!(transport.receive().await.is_none(), "the stream ended");
    }

    #[tokio::test]
    async fn an_unreadable_line_is_answered_before_the_next_is_handed_over() {
        let (client, server) = tokio::io::duplex(1024);
        let (reader, writer) = tokio::io::split(server);
        let mut transport = LineTransport::start(reader, writer, 1 << 20);
        let (client_reader, mut client_writer) = tokio::io::split(client);
        client_writer
            .write_all(b"not json\n{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"ping\"}\n")
            .await
            .unwrap();
        let message = transport.receive().await.expect("the readable line");
        assert_eq!(id_of(&message), 9);
        // The answer to the line before was written first, in one piece.
        let mut answers = BufReader::new(client_reader).lines();
        let answer = answers.next_line().await.unwrap().expect("an answer");
        let answer: serde_json::Value = serde_json::from_str(&answer).unwrap();
        assert_eq!(answer["error"]["code"], -32700, "{answer}");
        assert_eq!(answer["id"], serde_json::Value::Null, "{answer}");
    }
}
