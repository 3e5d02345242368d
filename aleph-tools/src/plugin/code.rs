//! `Code`: a plugin's running code in its runtime, and the calls every runtime answers alike
//! (a handler given JSON, answering JSON), so hooks and commands are written once.

use serde_json::Value;

#[cfg(feature = "node")]
use super::node::NodePlugin;
#[cfg(feature = "wasm")]
use super::wasm::WasmPlugin;

/// A plugin's running code.
#[derive(Clone)]
pub(super) enum Code {
    #[cfg(feature = "wasm")]
    Wasm(WasmPlugin),
    #[cfg(feature = "node")]
    Node(NodePlugin),
}

/// What a handler is run for: how a Node.js plugin is asked (a WebAssembly plugin's handler
/// is an export, called the same way for each).
#[derive(Clone, Copy)]
#[cfg_attr(
    not(feature = "node"),
    allow(
        dead_code,
        reason = "only a Node.js plugin is told what a handler runs for"
    )
)]
pub(super) enum Purpose<'a> {
    /// A direct command.
    Command(&'a str),
    /// A hook, for an event.
    Hook(&'a str),
    /// Starting (`start`) or stopping a background service.
    Service { name: &'a str, start: bool },
    /// Answering an HTTP request to a route.
    #[cfg(feature = "routes")]
    Route,
}

/// A call to a handler of a channel or provider.
#[cfg_attr(
    not(feature = "node"),
    allow(
        dead_code,
        reason = "only a Node.js plugin is told the method and the adapter"
    )
)]
pub(super) struct AdapterCall<'a> {
    /// `channels/call` or `providers/call`.
    pub(super) method: &'a str,
    /// The channel's or provider's name.
    pub(super) adapter: &'a str,
    /// What the handler runs for (`connect`, `chat`, …).
    pub(super) role: &'a str,
    /// The handler the manifest names for the role.
    pub(super) handler: &'a str,
    /// What the handler is given.
    pub(super) input: &'a Value,
}

impl Code {
    /// The sandbox, in one sentence.
    pub(super) fn sandbox(&self) -> String {
        match *self {
            #[cfg(feature = "wasm")]
            Self::Wasm(_) => "WebAssembly: files, network hosts and environment variables only as the manifest grants; memory, fuel and time limited".to_owned(),
            #[cfg(feature = "node")]
            Self::Node(ref plugin) => plugin.sandbox().to_owned(),
        }
    }

    /// Runs the channel's or provider's handler `call` names, as [`invoke`](Self::invoke)
    /// runs other handlers. A Node.js plugin's `chunk`s go to `chunks` as they come; a
    /// WebAssembly plugin cannot write while it runs, so it answers a stream with an array.
    #[cfg_attr(
        not(any(feature = "wasm", feature = "node")),
        allow(
            clippy::unused_async,
            unused_variables,
            reason = "no runtime without features"
        )
    )]
    #[cfg_attr(
        not(feature = "node"),
        allow(
            unused_variables,
            reason = "only a Node.js plugin sends chunks as it runs"
        )
    )]
    pub(super) async fn invoke_adapter(
        &self,
        call: &AdapterCall<'_>,
        chunks: Option<tokio::sync::mpsc::UnboundedSender<Value>>,
    ) -> Result<Value, String> {
        match *self {
            #[cfg(feature = "wasm")]
            Self::Wasm(_) => {
                self.invoke(call.handler, Purpose::Command(call.role), call.input)
                    .await
            }
            #[cfg(feature = "node")]
            Self::Node(ref code) => code
                .run_adapter(call, chunks)
                .await
                .map_err(|e| e.to_string()),
        }
    }

    /// Runs `handler` with `input`, within the runtime's time limit, and reads its JSON
    /// answer. The error is a sentence saying what went wrong.
    pub(super) async fn invoke(
        &self,
        handler: &str,
        purpose: Purpose<'_>,
        input: &Value,
    ) -> Result<Value, String> {
        self.invoke_handler(handler, purpose, input)
            .await
            .map_err(|failure| match failure {
                Failure::Raised(message) | Failure::Broke(message) => message,
            })
    }

    /// As [`invoke`](Self::invoke), telling an error the handler raised itself (a thrown
    /// error, an error returned by a WebAssembly export) from a call that broke (a crash, a
    /// timeout, an answer that is not JSON).
    #[cfg_attr(
        not(any(feature = "wasm", feature = "node")),
        allow(clippy::unused_async, reason = "no runtime without features")
    )]
    #[cfg_attr(
        not(feature = "node"),
        allow(
            unused_variables,
            reason = "only a Node.js plugin is told what a handler runs for"
        )
    )]
    pub(super) async fn invoke_handler(
        &self,
        handler: &str,
        purpose: Purpose<'_>,
        input: &Value,
    ) -> Result<Value, Failure> {
        match *self {
            #[cfg(feature = "wasm")]
            Self::Wasm(ref code) => {
                let bytes = serde_json::to_vec(input).map_err(|e| Failure::Broke(e.to_string()))?;
                let output = code
                    .call(handler, bytes, &crate::CancellationToken::new())
                    .await
                    .map_err(|error| match error {
                        super::wasm::WasmCallError::Plugin(message) => Failure::Raised(message),
                        other => Failure::Broke(other.to_string()),
                    })?;
                super::tool::parse_output(code.id(), &output)
                    .map_err(|e| Failure::Broke(e.to_string()))
            }
            #[cfg(feature = "node")]
            Self::Node(ref code) => match purpose {
                Purpose::Command(command) => code.run_command(command, handler, input).await,
                Purpose::Hook(event) => code.run_hook(event, handler, input).await,
                Purpose::Service { name, start } => code.run_service(name, start).await,
                #[cfg(feature = "routes")]
                Purpose::Route => code.run_route(handler, input).await,
            }
            .map_err(|error| match error {
                super::node::NodeCallError::Handler(message) => Failure::Raised(message),
                other => Failure::Broke(other.to_string()),
            }),
        }
    }
}

/// Why a handler gave no answer.
#[derive(Debug)]
#[cfg_attr(
    not(any(feature = "wasm", feature = "node")),
    allow(dead_code, reason = "no runtime without features")
)]
pub(super) enum Failure {
    /// The handler raised the error itself (a JavaScript `throw`, an error a WebAssembly
    /// export returned): its message.
    Raised(String),
    /// The call broke: the plugin crashed, timed out, or answered outside the protocol.
    Broke(String),
}
