//! A 2026-07-28 MCP client written by hand, for the protocol's edges no SDK sends:
//! newline-delimited JSON-RPC over a pipe, no handshake, each request carrying its version
//! and capabilities.

use aleph_tools::mcp::McpServer;
use serde_json::{Value, json};
use tokio::io::{
    AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines, ReadHalf, WriteHalf,
};

/// A client of one [`McpServer`], which it serves on a task of its own.
pub struct RawMcp {
    lines: Lines<BufReader<ReadHalf<DuplexStream>>>,
    write: WriteHalf<DuplexStream>,
    next_id: u64,
    capabilities: Value,
}

impl RawMcp {
    /// Serves `server` to a client that declares `capabilities` on every request.
    pub fn start(server: McpServer, capabilities: Value) -> Self {
        let (client, ours) = tokio::io::duplex(64 * 1024);
        let (read, write) = tokio::io::split(ours);
        tokio::spawn(server.serve(read, write));
        let (read, write) = tokio::io::split(client);
        Self {
            lines: BufReader::new(read).lines(),
            write,
            next_id: 0,
            capabilities,
        }
    }

    /// Sends `method` with `params` (an object) and returns the answer's `result` or `error`.
    ///
    /// # Panics
    ///
    /// When the server closes the pipe or writes a line that is not JSON.
    pub async fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.send(method, params).await;
        loop {
            let message = self.next_message().await;
            if message["id"] == json!(id) {
                return message
                    .get("result")
                    .or(message.get("error"))
                    .cloned()
                    .expect("an answer has a result or an error");
            }
        }
    }

    /// Sends `method` with `params` (an object) without waiting for the answer, and
    /// returns the request's id.
    ///
    /// # Panics
    ///
    /// When the server closes the pipe.
    pub async fn send(&mut self, method: &str, mut params: Value) -> u64 {
        self.next_id += 1;
        params
            .as_object_mut()
            .expect("params are an object")
            .insert(
                "_meta".into(),
                json!({
                    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                    "io.modelcontextprotocol/clientCapabilities": self.capabilities,
                }),
            );
        let request =
            json!({ "jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params });
        self.write
            .write_all(format!("{request}\n").as_bytes())
            .await
            .expect("the server reads");
        self.next_id
    }

    /// The next message the server writes: an answer, a notification or a request.
    ///
    /// # Panics
    ///
    /// When the server closes the pipe or writes a line that is not JSON.
    pub async fn next_message(&mut self) -> Value {
        let line = self
            .lines
            .next_line()
            .await
            .expect("the server writes")
            .expect("the server writes a line");
        serde_json::from_str(&line).expect("the server writes JSON")
    }

    /// Calls `tool` with `params` beside its name (`arguments` is `{}` unless given).
    ///
    /// # Panics
    ///
    /// As [`request`](Self::request).
    pub async fn call(&mut self, tool: &str, params: Value) -> Value {
        let mut all = json!({ "name": tool, "arguments": {} });
        all.as_object_mut()
            .expect("an object")
            .extend(params.as_object().cloned().unwrap_or_default());
        self.request("tools/call", all).await
    }
}
