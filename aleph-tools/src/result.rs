//! What a tool call produces: [`ToolOutput`] from the tool, [`ToolResult`] from the server.

use std::borrow::Cow;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{ToolError, ToolErrorKind};
use crate::schema::Coercion;

/// A tool's answer: text for the model, structured data for programs, or both.
///
/// Return it from a `#[tool]` function to choose the text the model reads while keeping the
/// data for code. Tools that return any other `Serialize` type produce data only, and the
/// model reads that data as JSON.
///
/// ```
/// use aleph_tools::ToolOutput;
/// use serde_json::json;
///
/// let out = ToolOutput::new("72°F and sunny in Lisbon", json!({ "temp_f": 72 }));
/// assert_eq!(out.model_text(), "72°F and sunny in Lisbon");
/// assert_eq!(out.data, Some(json!({ "temp_f": 72 })));
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct ToolOutput {
    /// Text written for the model, if the tool wrote any.
    pub text: Option<String>,
    /// Structured data for programs, if the tool produced any.
    pub data: Option<Value>,
}

impl ToolOutput {
    /// Text for the model and structured data for programs.
    pub fn new(text: impl Into<String>, data: Value) -> Self {
        Self {
            text: Some(text.into()),
            data: Some(data),
        }
    }

    /// Text only.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            text: Some(text.into()),
            data: None,
        }
    }

    /// Structured data only; the model reads it as JSON.
    pub fn json(data: Value) -> Self {
        Self {
            text: None,
            data: Some(data),
        }
    }

    /// The text the model should read: the tool's text, or else its data (a JSON string as
    /// is, anything else as compact JSON), or else nothing.
    pub fn model_text(&self) -> Cow<'_, str> {
        match (&self.text, &self.data) {
            (Some(text), _) => Cow::Borrowed(text),
            (None, Some(data)) => render(data),
            (None, None) => Cow::Borrowed(""),
        }
    }
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
    /// The tool's structured output; its text when it wrote only text; `null` on failure.
    pub output: Value,
    /// Text the tool wrote for the model, when it wrote any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// The model-facing error message when `success` is false.
    pub error: Option<String>,
    /// The machine-facing kind of the error when `success` is false.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_kind: Option<ToolErrorKind>,
    /// Wall time of the call in milliseconds.
    pub duration_ms: u64,
    /// What argument repair changed in the arguments before the tool ran (see
    /// [`ToolServerBuilder::with_argument_repair`](crate::ToolServerBuilder::with_argument_repair));
    /// empty when nothing was repaired.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub coercions: Vec<Coercion>,
    /// The name the caller sent, when it was not the tool's and name repair found the tool
    /// (`WebSearch` for `web_search`); `None` when the name was exact or no tool was found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repair: Option<RepairInfo>,
}

impl ToolResult {
    /// A successful result.
    pub fn ok(output: ToolOutput, duration: Duration) -> Self {
        let ToolOutput { text, data } = output;
        let output = match (data, &text) {
            (Some(data), _) => data,
            (None, Some(text)) => Value::String(text.clone()),
            (None, None) => Value::Null,
        };
        Self {
            success: true,
            output,
            text,
            error: None,
            error_kind: None,
            duration_ms: millis(duration),
            coercions: Vec::new(),
            repair: None,
        }
    }

    /// A failed result.
    pub fn err(error: &ToolError, duration: Duration) -> Self {
        Self {
            success: false,
            output: Value::Null,
            text: None,
            error: Some(error.to_string()),
            error_kind: Some(error.kind()),
            duration_ms: millis(duration),
            coercions: Vec::new(),
            repair: None,
        }
    }

    /// Shortens the text the model reads to `max_chars` (see
    /// [`compress_snapshot`](crate::compress_snapshot)); `output` stays whole.
    pub(crate) fn limit_text(&mut self, max_chars: usize) {
        if !self.success {
            return;
        }
        let text = self.model_text();
        if text.chars().count() > max_chars {
            self.text = Some(crate::compress::compress_snapshot(&text, max_chars));
        }
    }

    /// The name of the tool that ran for a call to `called`: the repaired name when name
    /// repair found the tool, else `called`.
    pub(crate) fn tool_that_ran<'a>(&'a self, called: &'a str) -> &'a str {
        self.repair
            .as_ref()
            .map_or(called, |repair| &repair.repaired_name)
    }

    /// The text to send back to the model: the error message on failure, else the tool's
    /// text, else its output (a JSON string as is, anything else as compact JSON).
    pub fn model_text(&self) -> Cow<'_, str> {
        if let Some(error) = &self.error {
            return Cow::Borrowed(error);
        }
        match &self.text {
            Some(text) => Cow::Borrowed(text),
            None => render(&self.output),
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
