//! `on_message` and `on_response` hooks: the host application fires them through
//! [`PluginManager::on_message`] and [`PluginManager::on_response`] for the messages it
//! handles, and plugins' interceptors, resolvers and observers take part as they do in tool
//! calls.
//!
//! | event | interceptor | resolver | observer |
//! | --- | --- | --- | --- |
//! | `on_message` | may change the message or block it | may answer it in the model's place | told, fire and forget |
//! | `on_response` | may change the response or block it | — | told, fire and forget |

use std::sync::Arc;

use serde_json::{Value, json};

use super::code::{Code, Purpose};
use super::manager::PluginManager;
use super::manifest::{HookEvent, HookKind};
use crate::middleware::Priority;

/// What the hooks made of a message (or response).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum MessageOutcome {
    /// Go on with this message: the one given, or as the interceptors changed it.
    Continue(Value),
    /// A resolver answered the message: send this instead of asking the model.
    Answered {
        /// The plugin whose resolver answered.
        plugin: String,
        /// Its answer, as the plugin gave it.
        answer: Value,
    },
    /// An interceptor blocked it, or could not run (a guard that fails does not let
    /// anything through).
    Blocked {
        /// The plugin whose interceptor blocked it.
        plugin: String,
        /// Why, in the plugin's words or the failure's.
        reason: String,
    },
}

/// One `on_message` or `on_response` hook of one plugin.
pub(super) struct MessageHook {
    pub(super) event: HookEvent,
    pub(super) kind: HookKind,
    pub(super) priority: Priority,
    pub(super) plugin: String,
    pub(super) handler: String,
    pub(super) code: Code,
}

impl MessageHook {
    async fn run(&self, context: &Value) -> Result<Value, String> {
        let event = match self.event {
            HookEvent::OnResponse => "on_response",
            _ => "on_message",
        };
        self.code
            .invoke(&self.handler, Purpose::Hook(event), context)
            .await
    }
}

impl PluginManager {
    /// Fires `on_message` for a message the application received (from a user, a channel,
    /// another agent), before it acts on it. `message` is any JSON the application uses for
    /// messages; hooks get `{"event": "on_message", "message": …}`.
    ///
    /// Interceptors run in turn, by priority then load order; each answers `null` (no
    /// change), `{"message": …}` (the message from here on) or `{"block": "why"}`. Then
    /// resolvers, in the same order, until one answers something other than `null`. Observers
    /// are told of the message as it goes on, each on its own task.
    pub async fn on_message(&self, message: Value) -> MessageOutcome {
        self.fire(HookEvent::OnMessage, message).await
    }

    /// Fires `on_response` for a response the application is about to send, as
    /// [`on_message`](Self::on_message) does for messages (without resolvers): interceptors
    /// may change or block it, observers are told of it.
    pub async fn on_response(&self, response: Value) -> MessageOutcome {
        self.fire(HookEvent::OnResponse, response).await
    }

    async fn fire(&self, event: HookEvent, mut message: Value) -> MessageOutcome {
        let hooks: Vec<Arc<MessageHook>> = self
            .serving_message_hooks()
            .into_iter()
            .filter(|hook| hook.event == event)
            .collect();
        let event_name = if event == HookEvent::OnResponse {
            "on_response"
        } else {
            "on_message"
        };
        let context = |message: &Value| json!({ "event": event_name, "message": message });
        for hook in hooks.iter().filter(|h| h.kind == HookKind::Interceptor) {
            let blocked = |reason: String| MessageOutcome::Blocked {
                plugin: hook.plugin.clone(),
                reason,
            };
            match hook.run(&context(&message)).await {
                Ok(Value::Null) => {}
                Ok(Value::Object(mut answer)) => {
                    if let Some(reason) = answer.remove("block") {
                        return blocked(
                            reason
                                .as_str()
                                .map_or_else(|| reason.to_string(), str::to_owned),
                        );
                    }
                    match answer.remove("message") {
                        Some(changed) if answer.is_empty() => message = changed,
                        _ => {
                            return blocked(format!(
                                "its `{}` hook answered `{}`; an interceptor answers `null`, `{{\"message\": …}}` or `{{\"block\": \"why\"}}`",
                                hook.handler,
                                Value::Object(answer)
                            ));
                        }
                    }
                }
                Ok(other) => {
                    return blocked(format!(
                        "its `{}` hook answered `{other}`; an interceptor answers `null`, `{{\"message\": …}}` or `{{\"block\": \"why\"}}`",
                        hook.handler
                    ));
                }
                Err(error) => {
                    return blocked(format!("its `{}` hook failed: {error}", hook.handler));
                }
            }
        }
        for hook in hooks.iter().filter(|h| h.kind == HookKind::Observer) {
            let hook = Arc::clone(hook);
            let context = context(&message);
            tokio::spawn(async move {
                if let Err(error) = hook.run(&context).await {
                    tracing::warn!(plugin = %hook.plugin, "the `{}` hook failed: {error}", hook.handler);
                }
            });
        }
        for hook in hooks.iter().filter(|h| h.kind == HookKind::Resolver) {
            match hook.run(&context(&message)).await {
                Ok(Value::Null) => {}
                Ok(answer) => {
                    return MessageOutcome::Answered {
                        plugin: hook.plugin.clone(),
                        answer,
                    };
                }
                Err(error) => tracing::warn!(
                    plugin = %hook.plugin,
                    "the `{}` hook failed, so it did not answer: {error}",
                    hook.handler
                ),
            }
        }
        MessageOutcome::Continue(message)
    }
}
