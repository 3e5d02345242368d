//! Arbitrary bytes on the MCP stdio server's input: it answers what it can, never panics,
//! and ends when the input ends. A valid handshake goes first on odd first bytes, so that
//! the fuzzer reaches the requests behind it.
#![no_main]

use aleph_tools::mcp::McpServer;
use aleph_tools_fuzz::{runtime, server};
use libfuzzer_sys::fuzz_target;
use tokio::io::AsyncWriteExt;

const HANDSHAKE: &[u8] = b"{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},\"clientInfo\":{\"name\":\"fuzz\",\"version\":\"1\"}}}\n{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n";

fuzz_target!(|data: &[u8]| {
    let Some((&pick, bytes)) = data.split_first() else {
        return;
    };
    runtime().block_on(async {
        let (client, served) = tokio::io::duplex(1 << 16);
        let (from_client, to_client) = tokio::io::split(served);
        let session = tokio::spawn(McpServer::new(server()).serve(from_client, to_client));
        let (mut replies, mut requests) = tokio::io::split(client);
        let drain = tokio::spawn(async move {
            let _ = tokio::io::copy(&mut replies, &mut tokio::io::sink()).await;
        });
        if pick % 2 == 1 {
            let _ = requests.write_all(HANDSHAKE).await;
        }
        let _ = requests.write_all(bytes).await;
        let _ = requests.write_all(b"\n").await;
        // The end of the input: with a split stream, only a shutdown says so.
        let _ = requests.shutdown().await;
        let _ = session.await.expect("the session task does not panic");
        drain.abort();
    });
});
