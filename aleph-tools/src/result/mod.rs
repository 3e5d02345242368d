//! What a tool call produces: [`ToolOutput`] from the tool, [`ToolResult`] from the server,
//! and the [`Content`] blocks both carry.

use std::borrow::Cow;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{ToolError, ToolErrorKind};
use crate::schema::Coercion;

mod content;

pub use self::content::{
    Content, EmbeddedResource, MediaContent, ResourceBody, ResourceContents, ResourceLink,
    TextContent, ToolReference,
};

/// A tool's answer: content for the model (text, images, audio, resources), structured data
/// for programs, or both.
///
/// Return it from a `#[tool]` function to choose what the model reads while keeping the
/// data for code. Tools that return any other `Serialize` type produce data only, and the
/// model reads that data as JSON.
///
/// ```
/// use aleph_tools::{Content, ToolOutput};
/// use serde_json::json;
///
/// let out = ToolOutput::new("72°F and sunny in Lisbon", json!({ "temp_f": 72 }));
/// assert_eq!(out.model_text(), "72°F and sunny in Lisbon");
/// assert_eq!(out.data, Some(json!({ "temp_f": 72 })));
///
/// let chart = ToolOutput::text("Sales by month:").with_image(b"\x89PNG\r\n\x1a\n", "image/png");
/// assert!(matches!(chart.content[1], Content::Image(_)));
/// assert_eq!(chart.model_text(), "Sales by month:\n[image: image/png, 8 bytes]");
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct ToolOutput {
    /// What the model (or the user) should see, in order; empty when the tool produced data
    /// only.
    pub content: Vec<Content>,
    /// Structured data for programs, if the tool produced any.
    pub data: Option<Value>,
}

impl ToolOutput {
    /// Text for the model and structured data for programs.
    pub fn new(text: impl Into<String>, data: Value) -> Self {
        Self {
            content: vec![Content::text(text)],
            data: Some(data),
        }
    }

    /// Text only.
    pub fn text(text: impl Into<String>) -> Self {
        Self::blocks([Content::text(text)])
    }

    /// Structured data only; the model reads it as JSON.
    pub fn json(data: Value) -> Self {
        Self {
            content: Vec::new(),
            data: Some(data),
        }
    }

    /// An image from its bytes and MIME type (`image/png`, `image/jpeg`, …).
    pub fn image(bytes: impl AsRef<[u8]>, mime_type: impl Into<String>) -> Self {
        Self::blocks([Content::image(bytes, mime_type)])
    }

    /// A sound from its bytes and MIME type (`audio/wav`, `audio/mpeg`, …).
    pub fn audio(bytes: impl AsRef<[u8]>, mime_type: impl Into<String>) -> Self {
        Self::blocks([Content::audio(bytes, mime_type)])
    }

    /// These content blocks, in order.
    pub fn blocks(blocks: impl IntoIterator<Item = Content>) -> Self {
        Self {
            content: blocks.into_iter().collect(),
            data: None,
        }
    }

    /// Adds a content block after the others.
    #[must_use]
    pub fn with(mut self, block: impl Into<Content>) -> Self {
        self.content.push(block.into());
        self
    }

    /// Adds an image after the other blocks.
    #[must_use]
    pub fn with_image(self, bytes: impl AsRef<[u8]>, mime_type: impl Into<String>) -> Self {
        self.with(Content::image(bytes, mime_type))
    }

    /// Sets the structured data.
    #[must_use]
    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    /// The text the model should read: each content block (a text block as is, anything
    /// else described, see [`Content::describe`]) on its own line; without content, the
    /// data (a JSON string as is, anything else as compact JSON); else nothing.
    pub fn model_text(&self) -> Cow<'_, str> {
        if self.content.is_empty() {
            return self.data.as_ref().map_or(Cow::Borrowed(""), render);
        }
        join_described(&self.content)
    }
}

/// The blocks as text, one per line; a single text block is borrowed.
fn join_described(blocks: &[Content]) -> Cow<'_, str> {
    match blocks {
        [only] => only.describe(),
        _ => Cow::Owned(
            blocks
                .iter()
                .map(Content::describe)
                .collect::<Vec<_>>()
                .join("\n"),
        ),
    }
}

/// The text blocks alone, joined by newlines; `None` when there are none.
fn joined_text(blocks: &[Content]) -> Option<String> {
    let mut texts = blocks.iter().filter_map(Content::as_text).peekable();
    texts.peek()?;
    Some(texts.collect::<Vec<_>>().join("\n"))
}

fn render(value: &Value) -> Cow<'_, str> {
    match value {
        Value::String(s) => Cow::Borrowed(s),
        Value::Null => Cow::Borrowed(""),
        other => Cow::Owned(other.to_string()),
    }
}

/// Conversion of a tool's return value into a [`ToolOutput`].
///
/// Implemented for every `Serialize` type (the value becomes [`ToolOutput::data`]) and for
/// [`ToolOutput`] itself.
#[diagnostic::on_unimplemented(
    message = "a tool cannot return `{Self}`: its output must be `Serialize`",
    label = "the tool's output type",
    note = "derive `serde::Serialize` for `{Self}`, or return `aleph_tools::ToolOutput` (text for the model and structured data)"
)]
pub trait IntoToolOutput {
    /// Converts the value; fails only when serialization fails.
    ///
    /// # Errors
    ///
    /// [`ToolError::Execution`] when the value cannot be serialized to JSON (a map with
    /// non-string keys, a failing `Serialize` impl).
    fn into_tool_output(self) -> Result<ToolOutput, ToolError>;
}

impl<T: Serialize> IntoToolOutput for T {
    fn into_tool_output(self) -> Result<ToolOutput, ToolError> {
        serde_json::to_value(self)
            .map(ToolOutput::json)
            .map_err(|err| {
                ToolError::execution(format!("the tool's output could not be serialized: {err}"))
            })
    }
}

impl IntoToolOutput for ToolOutput {
    fn into_tool_output(self) -> Result<ToolOutput, ToolError> {
        Ok(self)
    }
}

/// The outcome of one call through the server.
///
/// A failed call is a value, not a panic and not an `Err`: `success` is false and `error`
/// holds the message for the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolResult {
    /// Whether the tool ran and succeeded.
    pub success: bool,
    /// The tool's structured output; without one, the text of its text blocks (joined by
    /// newlines); `null` on failure or when the tool gave neither.
    pub output: Value,
    /// The content blocks the tool gave for the model (see [`ToolOutput::content`]); empty
    /// when it gave data only, and on failure. When the text the model reads is longer than
    /// the output limit, its text blocks (or, for data only, the rendered data) are one
    /// shortened text block here, and `output` stays whole.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub content: Vec<Content>,
    /// The model-facing error message when `success` is false.
    pub error: Option<String>,
    /// The machine-facing kind of the error when `success` is false.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_kind: Option<ToolErrorKind>,
    /// Wall time of the call in whole milliseconds. A call that ends as its future is made
    /// is not timed and says 0: an [inline](crate::AlephTool::INLINE) tool's call run in
    /// place, or a call refused before its tool ran.
    pub duration_ms: u64,
    /// What argument repair changed in the arguments before the tool ran (see
    /// [`ToolServerBuilder::with_argument_repair`](crate::ToolServerBuilder::with_argument_repair));
    /// empty when nothing was repaired.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub coercions: Vec<Coercion>,
    /// The name the caller sent, when it was not the tool's and name repair found the tool
    /// (`WebSearch` for `web_search`); `None` when the name was exact or no tool was found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repair: Option<Box<RepairInfo>>,
}

impl ToolResult {
    /// A successful result.
    pub fn ok(output: ToolOutput, duration: Duration) -> Self {
        let ToolOutput { content, data } = output;
        let output = match data {
            Some(data) => data,
            None => joined_text(&content).map_or(Value::Null, Value::String),
        };
        Self {
            success: true,
            output,
            content,
            error: None,
            error_kind: None,
            duration_ms: millis(duration),
            coercions: Vec::new(),
            repair: None,
        }
    }

    /// The result of a call that succeeded with `output` and nothing else to say: no
    /// content, no repair, not timed (see [`is_output_only`](Self::is_output_only)).
    #[inline]
    pub(crate) fn output_only(output: Value) -> Self {
        Self {
            success: true,
            output,
            content: Vec::new(),
            error: None,
            error_kind: None,
            duration_ms: 0,
            coercions: Vec::new(),
            repair: None,
        }
    }

    /// Whether this is [`output_only`](Self::output_only)`(self.output)`: a success whose
    /// other fields are all empty.
    #[inline]
    pub(crate) fn is_output_only(&self) -> bool {
        // Every field by name: a field added to the result has to be decided here.
        let Self {
            success,
            output: _,
            content,
            error,
            error_kind,
            duration_ms,
            coercions,
            repair,
        } = self;
        *success
            && content.is_empty()
            && error.is_none()
            && error_kind.is_none()
            && *duration_ms == 0
            && coercions.is_empty()
            && repair.is_none()
    }

    /// A failed result.
    pub fn err(error: &ToolError, duration: Duration) -> Self {
        Self {
            success: false,
            output: Value::Null,
            content: Vec::new(),
            error: Some(error.to_string()),
            error_kind: Some(error.kind()),
            duration_ms: millis(duration),
            coercions: Vec::new(),
            repair: None,
        }
    }

    /// Shortens the text the model reads to `max_chars` (see
    /// [`compress_snapshot`](crate::compress_snapshot)): the text blocks, made one, or the
    /// rendered output when there is no content. Other blocks and `output` stay whole.
    pub(crate) fn limit_text(&mut self, max_chars: usize) {
        if !self.success {
            return;
        }
        let text = if self.content.is_empty() {
            render(&self.output)
        } else {
            match joined_text(&self.content) {
                Some(text) => Cow::Owned(text),
                None => return,
            }
        };
        if text.chars().count() <= max_chars {
            return;
        }
        let short = Content::text(crate::util::compress::compress_snapshot(&text, max_chars));
        let first_text = self
            .content
            .iter()
            .position(|block| block.as_text().is_some());
        self.content.retain(|block| block.as_text().is_none());
        self.content.insert(first_text.unwrap_or(0), short);
    }

    /// The name of the tool that ran for a call to `called`: the repaired name when name
    /// repair found the tool, else `called`.
    pub(crate) fn tool_that_ran<'a>(&'a self, called: &'a str) -> &'a str {
        self.repair
            .as_ref()
            .map_or(called, |repair| &repair.repaired_name)
    }

    /// The text to send back to a model that reads only text: the error message on
    /// failure, else the tool's content blocks (text as is, anything else described, see
    /// [`Content::describe`]), else its output (a JSON string as is, anything else as
    /// compact JSON).
    pub fn model_text(&self) -> Cow<'_, str> {
        if let Some(error) = &self.error {
            return Cow::Borrowed(error);
        }
        if self.content.is_empty() {
            render(&self.output)
        } else {
            join_described(&self.content)
        }
    }
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// A wrong tool name the server mapped to a served tool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RepairInfo {
    /// The name the caller sent.
    pub original_name: String,
    /// The name of the tool that ran.
    pub repaired_name: String,
    /// Which step found it.
    pub step: RepairStep,
}

/// The step of name repair that found the tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum RepairStep {
    /// The names differ only in letter case.
    CaseInsensitive,
    /// The names agree once both are in snake case.
    SnakeCase,
}
