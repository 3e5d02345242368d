//! A command's server, spoken to over its stdin and stdout, read within limits: one message
//! at most `max` bytes (the rest of a longer one is skipped as it comes, never kept), and no
//! deeper than serde reads. An answer that breaks a limit, or is not an MCP message, becomes
//! an error answer to the request it answers, so the call (or the listing) fails with the
//! reason instead of waiting for an answer that was thrown away.

use std::io;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use rmcp::RoleClient;
use rmcp::model::RequestId;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use super::envelope::Envelope;

/// How long a server may take to exit once its input is closed, before it is killed.
const EXIT_GRACE: Duration = Duration::from_secs(3);

/// The JSON-RPC error code of an answer that could not be read (`-32603`, internal error).
const UNREADABLE: i32 = -32603;

/// A started command's server, as an rmcp transport.
pub(super) struct CommandTransport {
    child: Option<Child>,
    stdin: Arc<tokio::sync::Mutex<Option<ChildStdin>>>,
    lines: Lines,
}

impl CommandTransport {
    /// Starts `command` with its stdin and stdout piped to this transport (stderr goes to
    /// this process's), killed if the transport is dropped while it runs.
    pub(super) fn spawn(mut command: Command, max: usize) -> io::Result<Self> {
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true);
        let mut child = command.spawn()?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(io::Error::other(
                "the command's stdin and stdout were not piped",
            ));
        };
        Ok(Self {
            child: Some(child),
            stdin: Arc::new(tokio::sync::Mutex::new(Some(stdin))),
            lines: Lines {
                read: BufReader::with_capacity(64 << 10, stdout),
                line: Vec::new(),
                max,
                skipping: None,
            },
        })
    }

    /// The server's process id, while it runs.
    pub(super) fn id(&self) -> Option<u32> {
        self.child.as_ref()?.id()
    }
}

impl Transport<RoleClient> for CommandTransport {
    type Error = io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let stdin = Arc::clone(&self.stdin);
        async move {
            let mut line = serde_json::to_vec(&item).map_err(io::Error::other)?;
            line.push(b'\n');
            let mut stdin = stdin.lock().await;
            let Some(stdin) = stdin.as_mut() else {
                return Err(io::Error::new(
                    io::ErrorKind::NotConnected,
                    "the server's input is closed",
                ));
            };
            stdin.write_all(&line).await?;
            stdin.flush().await
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        let max = self.lines.max;
        loop {
            let problem = match self.lines.next().await {
                Read::Line(line) => match read_message(&line) {
                    Ok(Some(message)) => return Some(message),
                    Ok(None) => continue,
                    Err(problem) => (problem, Envelope::of(&line)),
                },
                Read::TooLong(envelope) => (
                    format!(
                        "the answer is longer than {max} bytes, the most one message may hold \
                         (`McpConnectionBuilder::max_message_bytes` raises the limit)"
                    ),
                    envelope,
                ),
                Read::End => return None,
                Read::Failed(error) => {
                    tracing::warn!("cannot read the MCP server's output: {error}");
                    return None;
                }
            };
            let (problem, envelope) = problem;
            if let Some(id) = envelope.answer_id() {
                return Some(unreadable(&id, &problem));
            }
            tracing::warn!("the MCP server sent a message that is skipped: {problem}");
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        // Closing its input asks the server to exit. A send stuck on a full pipe (a server
        // that does not read) holds the input: then the kill below ends both.
        if let Ok(mut stdin) = tokio::time::timeout(EXIT_GRACE, self.stdin.lock()).await {
            drop(stdin.take());
        }
        let Some(mut child) = self.child.take() else {
            return Ok(());
        };
        if tokio::time::timeout(EXIT_GRACE, child.wait())
            .await
            .is_err()
        {
            child.start_kill()?;
            child.wait().await?;
        }
        Ok(())
    }
}

/// One message read from a line: `Ok(None)` for a blank line, else why it cannot be read.
fn read_message(line: &[u8]) -> Result<Option<RxJsonRpcMessage<RoleClient>>, String> {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    serde_json::from_slice(line).map(Some).map_err(|error| {
        let text = error.to_string();
        if text.starts_with("recursion limit exceeded") {
            "the answer is nested more than 128 levels deep, more than can be read".to_owned()
        } else {
            format!("the answer is not an MCP message ({text})")
        }
    })
}

/// An error answer to request `id`, saying why the server's own answer was not taken.
fn unreadable(id: &RequestId, problem: &str) -> RxJsonRpcMessage<RoleClient> {
    let answer = json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": { "code": UNREADABLE, "message": problem, "data": { "unreadable": true } },
    });
    serde_json::from_value(answer).expect("an error answer is a message")
}

/// Whether `data` marks an error answer made here for an answer that could not be read.
pub(super) fn is_unreadable(data: Option<&serde_json::Value>) -> bool {
    data.and_then(|d| d.get("unreadable")) == Some(&serde_json::Value::Bool(true))
}

/// What the next read found.
enum Read {
    Line(Vec<u8>),
    /// A line over the limit, skipped to its end; what its bytes said.
    TooLong(Envelope),
    End,
    Failed(io::Error),
}

/// The server's output, cut into lines of at most `max` bytes.
///
/// `receive` is polled in a `select!` and may be dropped at any await: the line so far and
/// the skipping state live here, and each step copies and consumes the same bytes with no
/// await between, so a dropped read loses nothing.
struct Lines {
    read: BufReader<ChildStdout>,
    line: Vec<u8>,
    max: usize,
    /// Set while the rest of a line over the limit is skipped.
    skipping: Option<Envelope>,
}

impl Lines {
    async fn next(&mut self) -> Read {
        loop {
            let available = match self.read.fill_buf().await {
                Ok([]) => return Read::End,
                Ok(available) => available,
                Err(error) => return Read::Failed(error),
            };
            let end = available.iter().position(|&b| b == b'\n');
            let take = end.map_or(available.len(), |end| end + 1);
            let piece = &available[..take];
            let done = if let Some(envelope) = &mut self.skipping {
                envelope.feed(piece);
                end.is_some()
            } else if self.line.len() + take - usize::from(end.is_some()) > self.max {
                let mut envelope = Envelope::of(&self.line);
                envelope.feed(piece);
                self.line = Vec::new();
                self.skipping = Some(envelope);
                end.is_some()
            } else {
                self.line.extend_from_slice(piece);
                end.is_some()
            };
            self.read.consume(take);
            if done {
                return match self.skipping.take() {
                    Some(envelope) => Read::TooLong(envelope),
                    None => Read::Line(std::mem::take(&mut self.line)),
                };
            }
        }
    }
}
