//! `ToolDefinition`: what a model is told about a tool, with its `ToolCategory` and
//! `ToolAnnotations`.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

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

/// Everything a model and a server need to know about a tool.
///
/// Serializes with the keys `name`, `description` and `parameters` (the input JSON Schema),
/// and, where set, `output_schema`, `category`, `annotations`, `requires_confirmation`,
/// `examples`, `tags`, `allowed_callers`, `timeout_ms` and `strict`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolDefinition {
    /// The name the model calls the tool by.
    pub name: String,
    /// What the tool does, written for the model.
    pub description: String,
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
    /// The most characters of output the model reads from one call; longer output is
    /// shortened with [`compress_snapshot`](crate::compress_snapshot). `None` leaves it to
    /// the server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_limit: Option<usize>,
}

impl ToolDefinition {
    /// A definition with a name, a description and an input schema; everything else default.
    pub fn new(name: impl Into<String>, description: impl Into<String>, parameters: Value) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
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
            output_limit: None,
        }
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

    /// Sets the most characters of output the model reads from one call.
    #[must_use]
    pub fn with_output_limit(mut self, max_chars: usize) -> Self {
        self.output_limit = Some(max_chars);
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
