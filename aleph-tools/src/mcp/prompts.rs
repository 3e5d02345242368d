//! Prompts served over MCP: templates a user picks in the client (`prompts/list`,
//! `prompts/get`), from the application, Markdown skills and plugins.

use std::fmt;
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::Content;

/// One prompt an MCP client lists and fetches: a name, what it is for, the arguments it
/// takes, and the messages it gives for them.
///
/// ```
/// use aleph_tools::mcp::{McpPrompt, PromptMessage};
/// use aleph_tools::Content;
///
/// let review = McpPrompt::new("review", "Review a change for bugs.", |args| {
///     vec![PromptMessage::user(format!("Review this diff:\n{}", args.text("diff")))]
/// })
/// .with_argument("diff", "The unified diff", true);
///
/// let plain = McpPrompt::text("style", "House style for answers.", "Answer in short sentences.");
/// # let _ = (review, plain);
/// ```
#[derive(Clone)]
pub struct McpPrompt {
    pub(super) name: String,
    pub(super) title: Option<String>,
    pub(super) description: String,
    pub(super) arguments: Vec<PromptArgument>,
    render: Arc<Render>,
}

/// What writes a prompt's messages from its arguments.
type Render = dyn Fn(&PromptArgs) -> Vec<PromptMessage> + Send + Sync;

impl fmt::Debug for McpPrompt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpPrompt")
            .field("name", &self.name)
            .field("arguments", &self.arguments)
            .finish_non_exhaustive()
    }
}

impl McpPrompt {
    /// A prompt called `name`, described by `description`, whose messages `render` writes
    /// from the arguments a client gives (every required one is there; see
    /// [`with_argument`](Self::with_argument)).
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        render: impl Fn(&PromptArgs) -> Vec<PromptMessage> + Send + Sync + 'static,
    ) -> Self {
        Self {
            name: name.into(),
            title: None,
            description: description.into(),
            arguments: Vec::new(),
            render: Arc::new(render),
        }
    }

    /// A prompt without arguments: one user message of `text`.
    pub fn text(
        name: impl Into<String>,
        description: impl Into<String>,
        text: impl Into<String>,
    ) -> Self {
        let text: Arc<str> = text.into().into();
        Self::new(name, description, move |_| {
            vec![PromptMessage::user(&*text)]
        })
    }

    /// Declares an argument: its name, what to give, and whether a client must give it.
    #[must_use]
    pub fn with_argument(
        mut self,
        name: impl Into<String>,
        description: impl Into<String>,
        required: bool,
    ) -> Self {
        self.arguments.push(PromptArgument {
            name: name.into(),
            description: Some(description.into()).filter(|d| !d.is_empty()),
            required,
        });
        self
    }

    /// A name for people, shown by clients instead of the prompt's name.
    #[must_use]
    pub fn with_title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// The prompt's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The arguments it declares.
    pub fn arguments(&self) -> &[PromptArgument] {
        &self.arguments
    }

    /// The messages for `arguments` (names to strings, as MCP sends them).
    ///
    /// # Errors
    ///
    /// A message naming the problem when a required argument is missing, an argument is not
    /// declared, or a value is not a string.
    pub fn render(&self, arguments: &Map<String, Value>) -> Result<Vec<PromptMessage>, String> {
        let mut values = Map::new();
        for (name, value) in arguments {
            if !self.arguments.iter().any(|declared| declared.name == *name) {
                return Err(format!(
                    "prompt `{}` has no argument `{name}`; its arguments are: {}",
                    self.name,
                    self.argument_names()
                ));
            }
            let Value::String(_) = value else {
                return Err(format!(
                    "argument `{name}` of prompt `{}` must be a string, not {value}",
                    self.name
                ));
            };
            values.insert(name.clone(), value.clone());
        }
        if let Some(missing) = self
            .arguments
            .iter()
            .find(|declared| declared.required && !values.contains_key(&declared.name))
        {
            return Err(format!(
                "prompt `{}` needs argument `{}`{}",
                self.name,
                missing.name,
                missing
                    .description
                    .as_deref()
                    .map(|d| format!(" ({d})"))
                    .unwrap_or_default()
            ));
        }
        Ok((self.render)(&PromptArgs(values)))
    }

    fn argument_names(&self) -> String {
        if self.arguments.is_empty() {
            return "none".to_owned();
        }
        self.arguments
            .iter()
            .map(|argument| format!("`{}`", argument.name))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// An argument a prompt declares.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PromptArgument {
    /// Its name.
    pub name: String,
    /// What to give.
    pub description: Option<String>,
    /// Whether a client must give it.
    pub required: bool,
}

/// The arguments a client gave a prompt, checked against what it declares.
#[derive(Debug, Clone, Default)]
pub struct PromptArgs(Map<String, Value>);

impl PromptArgs {
    /// The value of `name`, when the client gave it.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0.get(name).and_then(Value::as_str)
    }

    /// The value of `name`, or empty text when the client left it out.
    pub fn text(&self, name: &str) -> &str {
        self.get(name).unwrap_or_default()
    }
}

/// One message of a prompt: who says it, and a content block.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct PromptMessage {
    /// Who says it.
    pub role: PromptRole,
    /// What it says: text, an image, audio or a resource.
    pub content: Content,
}

impl PromptMessage {
    /// A message from the user.
    pub fn user(content: impl Into<Content>) -> Self {
        Self {
            role: PromptRole::User,
            content: content.into(),
        }
    }

    /// A message from the assistant, such as the start of an answer.
    pub fn assistant(content: impl Into<Content>) -> Self {
        Self {
            role: PromptRole::Assistant,
            content: content.into(),
        }
    }
}

/// Who says a [`PromptMessage`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum PromptRole {
    /// The user.
    User,
    /// The assistant.
    Assistant,
}

/// Where an [`McpServer`](super::McpServer) finds its prompts, asked on every
/// `prompts/list` and `prompts/get`, so a source whose prompts change (a skills directory,
/// plugins loading and unloading) is served as it is now.
///
/// Implemented for one [`McpPrompt`], a `Vec` of them, [`Skills`](crate::builtin::Skills)
/// (feature `builtin`: each skill, its arguments and its filled-in body) and
/// [`PluginManager`](crate::plugin::PluginManager) (feature `plugins`: each running
/// plugin's `standalone` prompt, named by the plugin's id).
pub trait PromptSource: Send + Sync + 'static {
    /// The prompts as they are now.
    fn prompts(&self) -> Vec<McpPrompt>;
}

impl PromptSource for McpPrompt {
    fn prompts(&self) -> Vec<McpPrompt> {
        vec![self.clone()]
    }
}

impl PromptSource for Vec<McpPrompt> {
    fn prompts(&self) -> Vec<McpPrompt> {
        self.clone()
    }
}

#[cfg(feature = "builtin")]
impl PromptSource for crate::builtin::Skills {
    fn prompts(&self) -> Vec<McpPrompt> {
        let skills = match self.load() {
            Ok(skills) => skills,
            Err(err) => {
                tracing::warn!("skills not served as MCP prompts: {err}");
                return Vec::new();
            }
        };
        skills
            .into_iter()
            .map(|skill| {
                let skill = Arc::new(skill);
                let arguments = skill.arguments().to_vec();
                let render = Arc::clone(&skill);
                let mut prompt = McpPrompt::new(skill.name(), skill.description(), move |args| {
                    vec![PromptMessage::user(render.render(&args.0))]
                });
                for argument in arguments {
                    let required = argument.is_required();
                    prompt = prompt.with_argument(
                        argument.name,
                        argument.description.unwrap_or_default(),
                        required,
                    );
                }
                prompt
            })
            .collect()
    }
}

#[cfg(feature = "plugins")]
impl PromptSource for crate::plugin::PluginManager {
    fn prompts(&self) -> Vec<McpPrompt> {
        self.standalone_prompts()
            .into_iter()
            .map(|prompt| {
                let description = prompt
                    .description
                    .clone()
                    .unwrap_or_else(|| format!("The prompt of the `{}` plugin.", prompt.plugin));
                McpPrompt::text(prompt.plugin, description, &*prompt.text)
            })
            .collect()
    }
}
