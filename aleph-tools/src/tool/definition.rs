//! `ToolDefinition`: what a model is told about a tool, with its `ToolCategory` and
//! `ToolAnnotations`.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::AlephTool;
use crate::context::Caller;

/// Where a tool comes from.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ToolCategory {
    /// Compiled into the program (every `#[tool]` unless it says otherwise).
    #[default]
    Builtin,
    /// Served by an MCP server.
    Mcp,
    /// Provided by a plugin.
    Plugin,
    /// A prompt workflow written as a skill.
    Skill,
}

/// Hints about a tool's behaviour, as MCP clients and careful agents use them.
///
/// Each is `None` when the tool says nothing. They are hints for the caller, not guarantees.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolAnnotations {
    /// The tool does not change its environment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only: Option<bool>,
    /// The tool may destroy or overwrite data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive: Option<bool>,
    /// Calling the tool twice with the same arguments has no further effect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent: Option<bool>,
    /// The tool reaches outside the program (the web, other systems).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_world: Option<bool>,
}

impl ToolAnnotations {
    /// No hints.
    pub const NONE: Self = Self {
        read_only: None,
        destructive: None,
        idempotent: None,
        open_world: None,
    };

    /// Whether no hint is set.
    pub fn is_empty(&self) -> bool {
        *self == Self::NONE
    }

    /// Sets the read-only hint.
    #[must_use]
    pub const fn read_only(mut self, value: bool) -> Self {
        self.read_only = Some(value);
        self
    }

    /// Sets the destructive hint.
    #[must_use]
    pub const fn destructive(mut self, value: bool) -> Self {
        self.destructive = Some(value);
        self
    }

    /// Sets the idempotent hint.
    #[must_use]
    pub const fn idempotent(mut self, value: bool) -> Self {
        self.idempotent = Some(value);
        self
    }

    /// Sets the open-world hint.
    #[must_use]
    pub const fn open_world(mut self, value: bool) -> Self {
        self.open_world = Some(value);
        self
    }
}

/// An image that stands for a tool in a client's interface (MCP's `Icon`).
///
/// ```
/// use aleph_tools::{Icon, IconTheme};
///
/// let icon = Icon::new("https://example.com/search.svg")
///     .with_mime_type("image/svg+xml")
///     .with_sizes(["any"])
///     .with_theme(IconTheme::Light);
/// assert_eq!(
///     serde_json::to_value(&icon).unwrap(),
///     serde_json::json!({ "src": "https://example.com/search.svg", "mimeType": "image/svg+xml",
///                         "sizes": ["any"], "theme": "light" })
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Icon {
    /// Where the image is: an `https:` URL or a `data:` URL.
    pub src: String,
    /// Its MIME type, when the URL does not make it plain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// The sizes it comes in, such as `"48x48"`, or `"any"` for a vector image.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sizes: Vec<String>,
    /// The interface theme it is drawn for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub theme: Option<IconTheme>,
}

impl Icon {
    /// An icon at `src` (an `https:` or `data:` URL).
    pub fn new(src: impl Into<String>) -> Self {
        Self {
            src: src.into(),
            mime_type: None,
            sizes: Vec::new(),
            theme: None,
        }
    }

    /// Sets its MIME type.
    #[must_use]
    pub fn with_mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.mime_type = Some(mime_type.into());
        self
    }

    /// Sets the sizes it comes in.
    #[must_use]
    pub fn with_sizes(mut self, sizes: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.sizes = sizes.into_iter().map(Into::into).collect();
        self
    }

    /// Sets the theme it is drawn for.
    #[must_use]
    pub fn with_theme(mut self, theme: IconTheme) -> Self {
        self.theme = Some(theme);
        self
    }
}

/// The interface theme an [`Icon`] is drawn for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum IconTheme {
    /// For light backgrounds.
    Light,
    /// For dark backgrounds.
    Dark,
}

/// Everything a model and a server need to know about a tool.
///
/// Serializes with the keys `name`, `description` and `parameters` (the input JSON Schema),
/// and, where set, `title`, `icons`, `meta`, `output_schema`, `category`, `annotations`,
/// `requires_confirmation`, `examples`, `tags`, `allowed_callers`, `timeout_ms`, `strict`,
/// `task`, `output_limit` and `defer_loading`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
#[expect(
    clippy::struct_excessive_bools,
    reason = "each is one yes-or-no fact of the definition, a key of its JSON"
)]
pub struct ToolDefinition {
    /// The name the model calls the tool by.
    pub name: String,
    /// What the tool does, written for the model.
    pub description: String,
    /// A name for people ("Web search"), shown by clients instead of `name`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Images that stand for the tool in a client's interface.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub icons: Vec<Icon>,
    /// Data for clients beside the protocol's own fields, served as MCP's `_meta`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
    /// JSON Schema of the arguments; its root is an object.
    pub parameters: Value,
    /// JSON Schema of the output, when the output type has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// Where the tool comes from.
    #[serde(default)]
    pub category: ToolCategory,
    /// Behaviour hints.
    #[serde(default, skip_serializing_if = "ToolAnnotations::is_empty")]
    pub annotations: ToolAnnotations,
    /// Whether a person must approve each call.
    #[serde(default, skip_serializing_if = "is_false")]
    pub requires_confirmation: bool,
    /// Example calls, for few-shot prompting.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub examples: Vec<String>,
    /// Free labels for listing and filtering.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// Who may call the tool; empty means the default, [`Caller::Human`] only.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed_callers: Vec<Caller>,
    /// How long one call may run before the server stops it.
    #[serde(
        default,
        rename = "timeout_ms",
        with = "millis",
        skip_serializing_if = "Option::is_none"
    )]
    pub timeout: Option<Duration>,
    /// Whether the arguments follow the schema exactly (no extra keys).
    #[serde(default, skip_serializing_if = "is_false")]
    pub strict: bool,
    /// Whether a call may run as an MCP task. A client that declares the tasks extension
    /// (`io.modelcontextprotocol/tasks`) gets a task handle at once instead of waiting, and
    /// polls `tasks/get` for the result, answers the tool's questions with `tasks/update`
    /// and stops it with `tasks/cancel`; other clients, and calls in process, wait for the
    /// result as for any tool.
    #[serde(default, skip_serializing_if = "is_false")]
    pub task: bool,
    /// The most characters of output the model reads from one call; longer output is
    /// shortened with [`compress_snapshot`](crate::compress_snapshot). `None` leaves it to
    /// the server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_limit: Option<usize>,
    /// Whether the tool stays out of the tools array until a search finds it. It takes
    /// effect on a server that serves [`ToolSearch`](crate::builtin::ToolSearch), which also
    /// defers the tools its patterns name; elsewhere the server clears it.
    #[serde(default, skip_serializing_if = "is_false")]
    pub defer_loading: bool,
}

impl ToolDefinition {
    /// A definition with a name, a description and an input schema; everything else default.
    pub fn new(name: impl Into<String>, description: impl Into<String>, parameters: Value) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            title: None,
            icons: Vec::new(),
            meta: None,
            parameters,
            output_schema: None,
            category: ToolCategory::Builtin,
            annotations: ToolAnnotations::NONE,
            requires_confirmation: false,
            examples: Vec::new(),
            tags: Vec::new(),
            allowed_callers: Vec::new(),
            timeout: None,
            strict: false,
            task: false,
            output_limit: None,
            defer_loading: false,
        }
    }

    /// The definition of the tool type `T` before it says more: its name, description,
    /// input schema and output schema. What [`AlephTool::definition`] gives unless the tool
    /// overrides it, and where an override starts.
    pub fn of<T: AlephTool + ?Sized>() -> Self {
        Self::of_parts(
            T::NAME,
            T::DESCRIPTION,
            &T::input_schema(),
            T::output_schema().as_deref(),
        )
    }

    fn of_parts(name: &str, description: &str, input: &Value, output: Option<&Value>) -> Self {
        let mut definition = Self::new(name, description, input.clone());
        definition.output_schema = output.cloned();
        definition
    }

    /// Sets the name for people.
    #[must_use]
    pub fn with_title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Sets the icons.
    #[must_use]
    pub fn with_icons(mut self, icons: impl IntoIterator<Item = Icon>) -> Self {
        self.icons = icons.into_iter().collect();
        self
    }

    /// Sets the data served as MCP's `_meta`.
    #[must_use]
    pub fn with_meta(mut self, meta: Map<String, Value>) -> Self {
        self.meta = Some(meta);
        self
    }

    /// Sets the output schema.
    #[must_use]
    pub fn with_output_schema(mut self, schema: Value) -> Self {
        self.output_schema = Some(schema);
        self
    }

    /// Sets the category.
    #[must_use]
    pub fn with_category(mut self, category: ToolCategory) -> Self {
        self.category = category;
        self
    }

    /// Sets the behaviour hints.
    #[must_use]
    pub fn with_annotations(mut self, annotations: ToolAnnotations) -> Self {
        self.annotations = annotations;
        self
    }

    /// Marks the tool as needing approval for each call.
    #[must_use]
    pub fn with_confirmation(mut self, required: bool) -> Self {
        self.requires_confirmation = required;
        self
    }

    /// Sets the example calls.
    #[must_use]
    pub fn with_examples(mut self, examples: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.examples = examples.into_iter().map(Into::into).collect();
        self
    }

    /// Sets the tags.
    #[must_use]
    pub fn with_tags(mut self, tags: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.tags = tags.into_iter().map(Into::into).collect();
        self
    }

    /// Sets who may call the tool.
    #[must_use]
    pub fn with_allowed_callers(mut self, callers: impl IntoIterator<Item = Caller>) -> Self {
        self.allowed_callers = callers.into_iter().collect();
        self
    }

    /// Sets the per-call time limit.
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Marks the schema as strict.
    #[must_use]
    pub fn with_strict(mut self, strict: bool) -> Self {
        self.strict = strict;
        self
    }

    /// Lets calls run as MCP tasks (see [`task`](Self::task)).
    #[must_use]
    pub fn with_task(mut self, task: bool) -> Self {
        self.task = task;
        self
    }

    /// Sets the most characters of output the model reads from one call.
    #[must_use]
    pub fn with_output_limit(mut self, max_chars: usize) -> Self {
        self.output_limit = Some(max_chars);
        self
    }

    /// Keeps the tool out of the tools array until a search finds it (see
    /// [`defer_loading`](Self::defer_loading)).
    #[must_use]
    pub fn with_defer_loading(mut self, defer: bool) -> Self {
        self.defer_loading = defer;
        self
    }

    /// Whether `caller` may call this tool.
    pub fn allows_caller(&self, caller: Caller) -> bool {
        if self.allowed_callers.is_empty() {
            caller == Caller::Human
        } else {
            self.allowed_callers.contains(&caller)
        }
    }
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's `skip_serializing_if` passes a reference
fn is_false(value: &bool) -> bool {
    !*value
}

mod millis {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    #[allow(clippy::ref_option)] // serde's `with` passes a reference
    pub(super) fn serialize<S: Serializer>(
        value: &Option<Duration>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        match value {
            Some(d) => s.serialize_u64(u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
            None => s.serialize_none(),
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<Duration>, D::Error> {
        Ok(Option::<u64>::deserialize(d)?.map(Duration::from_millis))
    }
}
