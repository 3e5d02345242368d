//! Newline-delimited JSON-RPC over a byte stream pair (stdio, a socket, a pipe), for
//! serving. A task reads the lines: each message it can read goes to the session, and each
//! it cannot is answered at once with the JSON-RPC error that says why (see
//! [`unreadable`](super::unreadable)), so a client never waits on a line the server dropped.
//! Lines are read up to a limit, past which the rest of the line is skipped unread.

use std::sync::Arc;

use rmcp::RoleServer;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{Mutex, mpsc};
use tokio::task::JoinHandle;

use super::unreadable::{ID_SEARCHED, Unreadable};

/// How many messages read wait for the session at most; the reader waits past that.
const WAITING: usize = 8;

/// The writing half, shared by the session's answers and the reader's errors.
type Writer<W> = Arc<Mutex<Option<W>>>;

/// One client's stream pair, as an rmcp transport.
pub(super) struct LineTransport<W> {
    incoming: mpsc::Receiver<ClientJsonRpcMessage>,
    writer: Writer<W>,
    reader: JoinHandle<()>,
}

impl<W> LineTransport<W>
where
    W: AsyncWrite + Send + Unpin + 'static,
{
    /// Starts reading `reader`, lines of at most `max_line` bytes.
    pub(super) fn start<R>(reader: R, writer: W, max_line: usize) -> Self
    where
        R: AsyncRead + Send + Unpin + 'static,
    {
        let writer = Arc::new(Mutex::new(Some(writer)));
        let (sender, incoming) = mpsc::channel(WAITING);
        let reader = tokio::spawn(read_lines(
            BufReader::new(reader),
            sender,
            Arc::clone(&writer),
            max_line,
        ));
        Self {
            incoming,
            writer,
            reader,
        }
    }
}

impl<W> Drop for LineTransport<W> {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

/// Writes `line` and a newline, and flushes; an error once the transport is closed.
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
    writer.write_all(b"\n").await?;
    writer.flush().await
}

impl<W> Transport<RoleServer> for LineTransport<W>
where
    W: AsyncWrite + Send + Unpin + 'static,
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: ServerJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let writer = Arc::clone(&self.writer);
        async move {
            let line = serde_json::to_vec(&item)?;
            write_line(&writer, &line).await
        }
    }

    async fn receive(&mut self) -> Option<ClientJsonRpcMessage> {
        self.incoming.recv().await
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.reader.abort();
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

/// Reads one line into `line` (without its newline), at most `max` bytes of it.
async fn read_line<R>(reader: &mut BufReader<R>, line: &mut Vec<u8>, max: usize) -> Line
where
    R: AsyncRead + Unpin,
{
    line.clear();
    let mut too_long = false;
    loop {
        let available = match reader.fill_buf().await {
            // A last line without its newline is a line all the same.
            Ok([]) if too_long => return Line::TooLong,
            Ok([]) if !line.is_empty() => return Line::Whole,
            Ok([]) | Err(_) => return Line::End,
            Ok(available) => available,
        };
        let newline = available.iter().position(|&byte| byte == b'\n');
        let take = newline.map_or(available.len(), |at| at + 1);
        if !too_long {
            let part = &available[..newline.unwrap_or(available.len())];
            if line.len() + part.len() > max {
                // Keep the start, to find the request's id in; skip the rest.
                let room = ID_SEARCHED.saturating_sub(line.len()).min(part.len());
                line.extend_from_slice(&part[..room]);
                line.truncate(ID_SEARCHED);
                line.shrink_to(ID_SEARCHED);
                too_long = true;
            } else {
                line.extend_from_slice(part);
            }
        }
        reader.consume(take);
        if newline.is_some() {
            return if too_long { Line::TooLong } else { Line::Whole };
        }
    }
}

/// Reads lines until the stream ends: messages to `sender`, answers to what cannot be read
/// straight to `writer`.
async fn read_lines<R, W>(
    mut reader: BufReader<R>,
    sender: mpsc::Sender<ClientJsonRpcMessage>,
    writer: Writer<W>,
    max_line: usize,
) where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut line = Vec::new();
    loop {
        let unreadable = match read_line(&mut reader, &mut line, max_line).await {
            Line::End => return,
            Line::TooLong => Unreadable::too_large(&line, max_line),
            Line::Whole => {
                let message = trimmed(&line);
                if message.is_empty() {
                    continue;
                }
                match serde_json::from_slice::<ClientJsonRpcMessage>(message) {
                    Ok(message) => {
                        if sender.send(message).await.is_err() {
                            return;
                        }
                        continue;
                    }
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
        let answer = unreadable.to_response().to_string();
        if write_line(&writer, answer.as_bytes()).await.is_err() {
            return;
        }
    }
}

/// `line` without a trailing carriage return, surrounding blanks or a byte order mark.
fn trimmed(line: &[u8]) -> &[u8] {
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    line.trim_ascii()
}
