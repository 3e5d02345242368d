//! The security suite: every promise the threat model makes (`book/src/threat-model.md`),
//! tried as an attacker would, through the public API, the built command and real processes.
//! Run it alone with `cargo test -p aleph-tools-tests --all-features --test suite security::`.

mod code_mode;
mod files;
mod hosts;
mod management;
mod mcp_subscriptions;
mod mcp_transport;
mod model_calls;
mod outside_parties;
mod plugin_links;
pub(crate) mod sandbox;
mod sandbox_proxy;
mod sandbox_sockets;
mod tool_search;
