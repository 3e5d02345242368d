//! The agent loop: a [`ChatModel`] answers, the server runs the tools it calls, and the
//! results go back to it, until it answers in text.
//!
//! [`Agent`] runs the loop on a [`Conversation`], which holds the messages in the provider's
//! own format and can be stored and resumed. [`ModelTurn::from_response`] reads a provider's
//! response into the model's turn, for a loop written by hand.

#[cfg(feature = "clients")]
#[cfg_attr(docsrs, doc(cfg(feature = "clients")))]
pub mod clients;
mod conversation;
mod model;
mod run;
mod turn;

pub use conversation::Conversation;
pub use model::{ChatModel, ModelError, ModelRequest, StreamDelta};
pub use run::{Agent, AgentError, AgentEvent, AgentOutcome};
pub use turn::{ModelTurn, Usage};
