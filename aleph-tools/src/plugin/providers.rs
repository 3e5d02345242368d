//! `[[providers]]`: a plugin's model backend (a local model server, a proxy) as a
//! [`ModelProvider`] the host uses like one of its own.

use std::fmt;

use serde_json::Value;

use super::adapter::Adapter;
use super::channels::BoxStream;
use super::code::Code;
use super::error::PluginError;
use super::manager::PluginManager;
use super::manifest::ProviderSection;
use crate::tool::BoxFuture;

/// A model backend: list its models, chat, stream a chat, embed. A host holds its providers
/// as `Arc<dyn ModelProvider>`, whether built in or served by a plugin ([`PluginProvider`]).
///
/// Requests and answers are JSON in the shape the provider documents (typically
/// `{"model": …, "messages": […]}` in, `{"message": {"role": "assistant", …}}` out).
pub trait ModelProvider: Send + Sync + 'static {
    /// The provider's name.
    fn name(&self) -> &str;

    /// The models it serves.
    fn list_models(&self) -> BoxFuture<'_, Result<Vec<Value>, ProviderError>>;

    /// Answers a chat request.
    fn chat(&self, request: Value) -> BoxFuture<'_, Result<Value, ProviderError>>;

    /// Answers a chat request piece by piece: the pieces as they come.
    fn stream(
        &self,
        request: Value,
    ) -> BoxFuture<'_, Result<BoxStream<Result<Value, ProviderError>>, ProviderError>>;

    /// Embeds `input` (text, or a list of texts).
    fn embed(&self, input: Value) -> BoxFuture<'_, Result<Value, ProviderError>>;
}

/// Why a provider could not do what was asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("provider `{provider}`: {message}")]
#[non_exhaustive]
pub struct ProviderError {
    /// The provider's name.
    pub provider: String,
    /// What went wrong.
    pub message: String,
}

impl ProviderError {
    /// An error of `provider`.
    pub fn new(provider: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            provider: provider.into(),
            message: message.into(),
        }
    }
}

/// A provider a plugin declares, as [`PluginManager::providers`] lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ProviderInfo {
    /// The plugin's id.
    pub plugin: String,
    /// The provider's name.
    pub name: String,
    /// What it serves.
    pub description: String,
    /// Whether it streams (it has a `stream_handler`).
    pub streams: bool,
    /// Whether it embeds (it has an `embed_handler`).
    pub embeds: bool,
}

/// A plugin's provider: each call runs the handler the manifest names in the plugin's
/// current version, so a reload is followed.
#[derive(Clone)]
pub struct PluginProvider {
    adapter: Adapter,
}

impl fmt::Debug for PluginProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.adapter.debug(f, "PluginProvider")
    }
}

impl PluginProvider {
    /// The plugin serving it.
    pub fn plugin(&self) -> &str {
        self.adapter.plugin()
    }

    /// The running code and the provider's section, or why there is none.
    fn current(&self) -> Result<(Code, ProviderSection), ProviderError> {
        self.adapter
            .section("provider", |m| {
                m.providers.iter().find(|p| p.name == self.adapter.name())
            })
            .map_err(|message| self.error(message))
    }

    fn handler(&self, section: &ProviderSection, role: &str) -> Result<String, ProviderError> {
        match role {
            "list_models" => Some(section.list_models_handler.clone()),
            "chat" => Some(section.chat_handler.clone()),
            "stream" => section.stream_handler.clone(),
            _ => section.embed_handler.clone(),
        }
        .ok_or_else(|| {
            self.error(format!(
                "plugin `{}` declares no `{role}_handler` for it",
                self.adapter.plugin()
            ))
        })
    }

    async fn run(
        &self,
        role: &str,
        input: &Value,
        chunks: Option<tokio::sync::mpsc::UnboundedSender<Value>>,
    ) -> Result<Value, ProviderError> {
        let (code, section) = self.current()?;
        let handler = self.handler(&section, role)?;
        self.adapter
            .invoke(&code, "providers/call", role, &handler, input, chunks)
            .await
            .map_err(|message| self.error(message))
    }

    fn error(&self, message: String) -> ProviderError {
        ProviderError::new(self.adapter.name(), message)
    }
}

impl ModelProvider for PluginProvider {
    fn name(&self) -> &str {
        self.adapter.name()
    }

    fn list_models(&self) -> BoxFuture<'_, Result<Vec<Value>, ProviderError>> {
        Box::pin(async move {
            match self.run("list_models", &Value::Null, None).await? {
                Value::Array(models) => Ok(models),
                other => Err(self.error(format!(
                    "plugin `{}` listed its models as `{other}`, not as an array",
                    self.adapter.plugin()
                ))),
            }
        })
    }

    fn chat(&self, request: Value) -> BoxFuture<'_, Result<Value, ProviderError>> {
        Box::pin(async move { self.run("chat", &request, None).await })
    }

    /// Streams a chat. A Node.js plugin's pieces arrive as its handler emits them, and the
    /// stream ends with the handler (an error it throws is the last item); a WebAssembly
    /// plugin's handler answers an array, whose items are the pieces.
    fn stream(
        &self,
        request: Value,
    ) -> BoxFuture<'_, Result<BoxStream<Result<Value, ProviderError>>, ProviderError>> {
        Box::pin(async move {
            let (code, section) = self.current()?;
            let handler = self.handler(&section, "stream")?;
            let (sender, receiver) = tokio::sync::mpsc::unbounded_channel();
            let this = self.clone();
            let finished = tokio::spawn(async move {
                this.adapter
                    .invoke(
                        &code,
                        "providers/call",
                        "stream",
                        &handler,
                        &request,
                        Some(sender),
                    )
                    .await
                    .map_err(|message| this.error(message))
            });
            let error_of = self.clone();
            let stream = futures_util::stream::unfold(
                (receiver, Some(finished)),
                move |(mut receiver, finished)| {
                    let error_of = error_of.clone();
                    async move {
                        if let Some(chunk) = receiver.recv().await {
                            return Some((Ok(chunk), (receiver, finished)));
                        }
                        // The handler is done: its answer is the end of the stream.
                        let outcome = finished?.await.unwrap_or_else(|e| {
                            Err(error_of.error(format!("the stream's task failed: {e}")))
                        });
                        match outcome {
                            Ok(Value::Array(items)) if !items.is_empty() => {
                                let (sender, rest) = tokio::sync::mpsc::unbounded_channel();
                                let mut items = items.into_iter();
                                let first = items.next().map(Ok);
                                for item in items {
                                    let _ = sender.send(item);
                                }
                                drop(sender);
                                first.map(|first| (first, (rest, None)))
                            }
                            Ok(_) => None,
                            Err(error) => Some((Err(error), (receiver, None))),
                        }
                    }
                },
            );
            Ok(Box::pin(stream) as BoxStream<_>)
        })
    }

    fn embed(&self, input: Value) -> BoxFuture<'_, Result<Value, ProviderError>> {
        Box::pin(async move { self.run("embed", &input, None).await })
    }
}

impl PluginManager {
    /// Every model provider the running plugins declare, by plugin id.
    pub fn providers(&self) -> Vec<ProviderInfo> {
        self.serving_sections(|m| m.providers.as_slice(), |p| p.name.as_str())
            .into_iter()
            .map(|(plugin, p)| ProviderInfo {
                plugin,
                name: p.name,
                description: p.description,
                streams: p.stream_handler.is_some(),
                embeds: p.embed_handler.is_some(),
            })
            .collect()
    }

    /// The provider `name` of plugin `id`, to use as any [`ModelProvider`].
    ///
    /// # Errors
    ///
    /// [`PluginError::NotFound`] for a plugin that is not running; [`PluginError::Unknown`]
    /// naming the providers there are when it declares no such provider.
    pub(crate) fn provider(&self, id: &str, name: &str) -> Result<PluginProvider, PluginError> {
        let adapter = Adapter::declared(self, id, "provider", name, |m| {
            m.providers.iter().map(|p| p.name.clone()).collect()
        })?;
        Ok(PluginProvider { adapter })
    }
}
