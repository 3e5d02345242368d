//! `[[channels]]`: a plugin's messaging channel (a chat platform, a mailbox, a queue) as a
//! [`Channel`] the host uses like one of its own.

use std::fmt;
use std::pin::Pin;

use futures_util::Stream;
use serde_json::Value;

use super::adapter::Adapter;
use super::code::Code;
use super::error::PluginError;
use super::manager::PluginManager;
use super::manifest::ChannelSection;
use crate::tool::BoxFuture;

/// A stream of values, boxed, as [`Channel::inbound`] and
/// [`ModelProvider::stream`](super::ModelProvider::stream) return.
pub type BoxStream<T> = Pin<Box<dyn Stream<Item = T> + Send>>;

/// A messaging channel: connect, send, receive, disconnect. A host holds its channels as
/// `Arc<dyn Channel>`, whether built in or served by a plugin ([`PluginChannel`]).
///
/// Messages are JSON in the shape the channel documents (typically `{"chat": …, "text": …}`).
pub trait Channel: Send + Sync + 'static {
    /// The channel's name.
    fn name(&self) -> &str;

    /// Connects with `config` (credentials, the room to join…); answers what the channel
    /// reports on connecting.
    fn connect(&self, config: Value) -> BoxFuture<'_, Result<Value, ChannelError>>;

    /// Disconnects and frees what the connection held.
    fn disconnect(&self) -> BoxFuture<'_, Result<(), ChannelError>>;

    /// Sends `message`; answers what the channel reports (a message id, a receipt).
    fn send(&self, message: Value) -> BoxFuture<'_, Result<Value, ChannelError>>;

    /// The messages that arrive from now on, as they arrive. The stream ends when the channel
    /// goes away (for a plugin's channel: its plugin is unloaded or reloaded).
    fn inbound(&self) -> BoxStream<Value>;
}

/// Why a channel could not do what was asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("channel `{channel}`: {message}")]
#[non_exhaustive]
pub struct ChannelError {
    /// The channel's name.
    pub channel: String,
    /// What went wrong.
    pub message: String,
}

impl ChannelError {
    /// An error of `channel`.
    pub fn new(channel: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            channel: channel.into(),
            message: message.into(),
        }
    }
}

/// A channel a plugin declares, as [`PluginManager::channels`] lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ChannelInfo {
    /// The plugin's id.
    pub plugin: String,
    /// The channel's name.
    pub name: String,
    /// What it connects to.
    pub description: String,
}

/// A plugin's channel: each call runs the handler the manifest names in the plugin's
/// current version, so a reload is followed.
#[derive(Clone)]
pub struct PluginChannel {
    adapter: Adapter,
}

impl fmt::Debug for PluginChannel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.adapter.debug(f, "PluginChannel")
    }
}

impl PluginChannel {
    /// The plugin serving it.
    pub fn plugin(&self) -> &str {
        self.adapter.plugin()
    }

    /// The running code and the channel's section, or why there is none.
    fn current(&self) -> Result<(Code, ChannelSection), ChannelError> {
        self.adapter
            .section("channel", |m| {
                m.channels.iter().find(|c| c.name == self.adapter.name())
            })
            .map_err(|message| self.error(message))
    }

    async fn run(&self, role: &str, input: &Value) -> Result<Value, ChannelError> {
        let (code, section) = self.current()?;
        let handler = match role {
            "connect" => &section.connect_handler,
            "disconnect" => &section.disconnect_handler,
            _ => &section.send_handler,
        };
        self.adapter
            .invoke(&code, "channels/call", role, handler, input, None)
            .await
            .map_err(|message| self.error(message))
    }

    fn error(&self, message: String) -> ChannelError {
        ChannelError::new(self.adapter.name(), message)
    }
}

impl Channel for PluginChannel {
    fn name(&self) -> &str {
        self.adapter.name()
    }

    fn connect(&self, config: Value) -> BoxFuture<'_, Result<Value, ChannelError>> {
        Box::pin(async move { self.run("connect", &config).await })
    }

    fn disconnect(&self) -> BoxFuture<'_, Result<(), ChannelError>> {
        Box::pin(async move { self.run("disconnect", &Value::Null).await.map(drop) })
    }

    fn send(&self, message: Value) -> BoxFuture<'_, Result<Value, ChannelError>> {
        Box::pin(async move { self.run("send", &message).await })
    }

    fn inbound(&self) -> BoxStream<Value> {
        let Ok((code, _)) = self.current() else {
            return Box::pin(futures_util::stream::empty());
        };
        match code {
            #[cfg(feature = "node")]
            Code::Node(node) => {
                let name: std::sync::Arc<str> = self.adapter.name().into();
                Box::pin(futures_util::stream::unfold(
                    (node.inbound(), name),
                    |(mut receiver, name)| async move {
                        loop {
                            match receiver.recv().await {
                                Ok((channel, message)) if channel == name => {
                                    return Some((message, (receiver, name)));
                                }
                                Ok(_) => {}
                                Err(tokio::sync::broadcast::error::RecvError::Lagged(n)) => {
                                    tracing::warn!(channel = %name, "{n} received messages were dropped: the listener fell behind");
                                }
                                Err(tokio::sync::broadcast::error::RecvError::Closed) => {
                                    return None;
                                }
                            }
                        }
                    },
                ))
            }
            #[allow(unreachable_patterns, reason = "the arm for the other runtimes")]
            _ => Box::pin(futures_util::stream::empty()),
        }
    }
}

impl PluginManager {
    /// Every channel the running plugins declare, by plugin id.
    pub fn channels(&self) -> Vec<ChannelInfo> {
        self.serving_sections(|m| m.channels.as_slice(), |c| c.name.as_str())
            .into_iter()
            .map(|(plugin, c)| ChannelInfo {
                plugin,
                name: c.name,
                description: c.description,
            })
            .collect()
    }

    /// The channel `name` of plugin `id`, to use as any [`Channel`].
    ///
    /// # Errors
    ///
    /// [`PluginError::NotFound`] for a plugin that is not running; [`PluginError::Unknown`]
    /// naming the channels there are when it declares no such channel.
    pub(crate) fn channel(&self, id: &str, name: &str) -> Result<PluginChannel, PluginError> {
        let adapter = Adapter::declared(self, id, "channel", name, |m| {
            m.channels.iter().map(|c| c.name.clone()).collect()
        })?;
        Ok(PluginChannel { adapter })
    }
}
