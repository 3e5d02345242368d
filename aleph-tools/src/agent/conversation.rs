//! [`Conversation`]: the messages of one conversation with a model, in its provider's exact
//! format.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::turn::ModelTurn;
use crate::provider::{Provider, ToolRound};

/// A conversation with a model: instructions, then messages in the provider's own JSON, as
/// its API takes them. It is a plain value: serialize it to store a conversation, and
/// deserialize it to go on with it later.
///
/// ```
/// use aleph_tools::agent::Conversation;
/// use aleph_tools::provider::Provider;
/// use serde_json::json;
///
/// let mut conversation = Conversation::new(Provider::Anthropic).with_system("Be brief.");
/// conversation.push_user("What is 2 + 2?");
/// assert_eq!(
///     conversation.request_fields(),
///     json!({
///         "system": "Be brief.",
///         "messages": [{ "role": "user", "content": "What is 2 + 2?" }]
///     })
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Conversation {
    provider: Provider,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    system: Option<String>,
    #[serde(default)]
    messages: Vec<Value>,
}

impl Conversation {
    /// An empty conversation in `provider`'s format.
    pub fn new(provider: Provider) -> Self {
        Self {
            provider,
            system: None,
            messages: Vec::new(),
        }
    }

    /// Sets the instructions (the system prompt).
    #[must_use]
    pub fn with_system(mut self, text: impl Into<String>) -> Self {
        self.system = Some(text.into());
        self
    }

    /// The provider whose format the messages are in.
    pub fn provider(&self) -> Provider {
        self.provider
    }

    /// The instructions, if any.
    pub fn system(&self) -> Option<&str> {
        self.system.as_deref()
    }

    /// The messages so far, in the provider's format.
    pub fn messages(&self) -> &[Value] {
        &self.messages
    }

    /// Appends a user message holding `text`.
    pub fn push_user(&mut self, text: impl Into<String>) -> &mut Self {
        let text = text.into();
        let message = match self.provider {
            Provider::Gemini => json!({ "role": "user", "parts": [{ "text": text }] }),
            _ => json!({ "role": "user", "content": text }),
        };
        self.messages.push(message);
        self
    }

    /// Appends a message or item as it is; it must be in the provider's format.
    pub fn push(&mut self, message: Value) -> &mut Self {
        self.messages.push(message);
        self
    }

    /// Appends the model's turn: its assistant message (or output items).
    pub fn push_turn(&mut self, turn: &ModelTurn) -> &mut Self {
        self.messages.extend(turn.items.iter().cloned());
        self
    }

    /// Appends the messages answering a round of tool calls.
    pub fn push_results(&mut self, round: &ToolRound) -> &mut Self {
        self.messages.extend(round.messages.iter().cloned());
        self
    }

    /// The conversation as the fields of a request body, exactly as the provider reads
    /// them:
    ///
    /// - OpenAI chat: `messages`, the instructions first as a `system` message;
    /// - OpenAI responses: `instructions` and `input`;
    /// - Anthropic: `system` and `messages`;
    /// - Gemini: `systemInstruction` (`parts` of text) and `contents`.
    ///
    /// Add the model, the tools and the settings beside them.
    pub fn request_fields(&self) -> Value {
        let mut fields = Map::new();
        let messages = Value::Array(self.messages.clone());
        match self.provider {
            Provider::OpenAiChat => {
                let mut all = Vec::with_capacity(self.messages.len() + 1);
                if let Some(system) = &self.system {
                    all.push(json!({ "role": "system", "content": system }));
                }
                all.extend(self.messages.iter().cloned());
                fields.insert("messages".into(), Value::Array(all));
            }
            Provider::OpenAiResponses => {
                if let Some(system) = &self.system {
                    fields.insert("instructions".into(), json!(system));
                }
                fields.insert("input".into(), messages);
            }
            Provider::Gemini => {
                if let Some(system) = &self.system {
                    fields.insert(
                        "systemInstruction".into(),
                        json!({ "parts": [{ "text": system }] }),
                    );
                }
                fields.insert("contents".into(), messages);
            }
            _ => {
                if let Some(system) = &self.system {
                    fields.insert("system".into(), json!(system));
                }
                fields.insert("messages".into(), messages);
            }
        }
        Value::Object(fields)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_provider_gets_its_own_fields() {
        let fields = |provider| {
            let mut conversation = Conversation::new(provider).with_system("Be brief.");
            conversation.push_user("Hi");
            conversation.request_fields()
        };
        assert_eq!(
            fields(Provider::OpenAiChat),
            json!({ "messages": [{ "role": "system", "content": "Be brief." }, { "role": "user", "content": "Hi" }] })
        );
        assert_eq!(
            fields(Provider::OpenAiResponses),
            json!({ "instructions": "Be brief.", "input": [{ "role": "user", "content": "Hi" }] })
        );
        assert_eq!(
            fields(Provider::Gemini),
            json!({ "systemInstruction": { "parts": [{ "text": "Be brief." }] },
                    "contents": [{ "role": "user", "parts": [{ "text": "Hi" }] }] })
        );
        let stored = serde_json::to_value(Conversation::new(Provider::Gemini)).unwrap();
        assert_eq!(stored, json!({ "provider": "gemini", "messages": [] }));
    }
}
