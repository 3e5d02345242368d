//! HTTP clients for the model APIs (feature `clients`): each is a [`ChatModel`] the agent
//! loop drives, with streaming, retries and time limits.
//!
//! [`ChatModel`]: super::ChatModel

mod http;
mod openai_chat;
mod sse;

pub use openai_chat::OpenAiChat;
