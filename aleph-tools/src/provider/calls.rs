//! Reading the tool calls out of a provider's response.

use std::fmt;

use serde_json::{Map, Value};

use super::Provider;

/// One tool call the model made.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ProviderCall {
    /// The provider's id for the call, which the result must echo (`call_…`, `toolu_…`);
    /// Gemini and MCP calls may have none.
    pub id: Option<String>,
    /// The tool name as the model wrote it (the server repairs it when it runs).
    pub name: String,
    /// The arguments, or why they could not be read as a JSON object.
    pub arguments: Result<Value, BadArguments>,
}

/// Arguments a model sent that are not a JSON object: the call fails with an argument
/// error the model can fix, and the other calls of the response still run.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct BadArguments {
    /// What the model sent, as text.
    pub raw: String,
    /// What it is instead, for the model to read: text that is not JSON (with the
    /// parser's message and the start of the text), or a JSON value of another type.
    pub received: String,
}

impl fmt::Display for BadArguments {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the arguments are not a JSON object: received {}",
            self.received
        )
    }
}

/// How much of arguments that are not JSON an error message quotes.
const QUOTE_CHARS: usize = 200;

/// A response that does not have the provider's shape, so no call in it can be answered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("this is not a {provider} response: {problem}", provider = provider.name())]
#[non_exhaustive]
pub struct ProviderError {
    /// The provider the response was read as.
    pub provider: Provider,
    /// What is missing or of the wrong type, with where it was expected.
    pub problem: String,
}

impl Provider {
    /// The tool calls in a response, in the order the model made them; empty when the
    /// model made none (its answer is final).
    ///
    /// Takes the whole response or the part that holds the calls:
    ///
    /// | provider | whole response | or |
    /// | --- | --- | --- |
    /// | OpenAI chat | `{ "choices": [{ "message": … }] }` (the first choice) | the assistant message |
    /// | OpenAI responses | `{ "output": […] }` | the `output` array |
    /// | Anthropic | the message, `{ "content": […] }` | the `content` array |
    /// | Gemini | `{ "candidates": [{ "content": … }] }` (the first candidate) | the content, or its `parts` |
    /// | MCP | a `tools/call` request | its `params` |
    ///
    /// Arguments that are not a JSON object (OpenAI's arguments string cut short, say) are
    /// kept as [`BadArguments`] on their call rather than failing the response.
    ///
    /// # Errors
    ///
    /// [`ProviderError`] when the response has not the provider's shape, or a call lacks
    /// the id its result must echo.
    pub fn parse_calls(self, response: &Value) -> Result<Vec<ProviderCall>, ProviderError> {
        let fail = |problem: String| ProviderError {
            provider: self,
            problem,
        };
        match self {
            Self::OpenAiChat => openai_chat(response, fail),
            Self::OpenAiResponses => typed_items(response, &OPENAI_RESPONSES, fail),
            Self::Anthropic => typed_items(response, &ANTHROPIC, fail),
            Self::Gemini => gemini(response, fail),
            Self::Mcp => mcp(response, fail),
        }
    }
}

fn openai_chat(
    response: &Value,
    fail: impl Fn(String) -> ProviderError + Copy,
) -> Result<Vec<ProviderCall>, ProviderError> {
    let message = response.pointer("/choices/0/message").unwrap_or(response);
    let Some(calls) = message.get("tool_calls") else {
        return expect_object(message, "an assistant message", fail).map(|()| Vec::new());
    };
    let calls = calls
        .as_array()
        .ok_or_else(|| fail("`tool_calls` is not an array".into()))?;
    calls
        .iter()
        .enumerate()
        .map(|(i, call)| {
            let at = format!("tool_calls[{i}]");
            let function = call
                .get("function")
                .ok_or_else(|| fail(format!("`{at}` has no `function`")))?;
            Ok(ProviderCall {
                id: Some(required_id(call, "id", &at, fail)?),
                name: name_of(function),
                arguments: arguments_text(function.get("arguments")),
            })
        })
        .collect()
}

/// Where a provider lists its calls among other items: an array under `list` whose calls
/// are the items of type `kind`.
struct TypedItems {
    /// The key of the array (`output`, `content`).
    list: &'static str,
    /// What the array holds, for errors.
    holds: &'static str,
    /// The `type` of the items that are calls.
    kind: &'static str,
    /// The key of the call's id.
    id: &'static str,
    /// The key of the arguments.
    arguments: &'static str,
    /// Whether the arguments come as JSON text rather than a JSON value.
    as_text: bool,
}

/// OpenAI responses: `function_call` output items, arguments as JSON text.
const OPENAI_RESPONSES: TypedItems = TypedItems {
    list: "output",
    holds: "output items",
    kind: "function_call",
    id: "call_id",
    arguments: "arguments",
    as_text: true,
};

/// Anthropic: `tool_use` content blocks, arguments as a JSON object.
const ANTHROPIC: TypedItems = TypedItems {
    list: "content",
    holds: "content blocks",
    kind: "tool_use",
    id: "id",
    arguments: "input",
    as_text: false,
};

fn typed_items(
    response: &Value,
    shape: &TypedItems,
    fail: impl Fn(String) -> ProviderError + Copy,
) -> Result<Vec<ProviderCall>, ProviderError> {
    let items = response.get(shape.list).unwrap_or(response);
    let items = items.as_array().ok_or_else(|| {
        fail(format!(
            "expected `{}`, an array of {}",
            shape.list, shape.holds
        ))
    })?;
    items
        .iter()
        .enumerate()
        .filter(|(_, item)| item.get("type").and_then(Value::as_str) == Some(shape.kind))
        .map(|(i, item)| {
            let at = format!("{}[{i}]", shape.list);
            let arguments = item.get(shape.arguments);
            Ok(ProviderCall {
                id: Some(required_id(item, shape.id, &at, fail)?),
                name: name_of(item),
                arguments: if shape.as_text {
                    arguments_text(arguments)
                } else {
                    arguments_object(arguments)
                },
            })
        })
        .collect()
}

fn gemini(
    response: &Value,
    fail: impl Fn(String) -> ProviderError,
) -> Result<Vec<ProviderCall>, ProviderError> {
    let content = response
        .pointer("/candidates/0/content")
        .unwrap_or(response);
    let parts = content.get("parts").unwrap_or(content);
    let parts = parts
        .as_array()
        .ok_or_else(|| fail("expected `candidates[0].content.parts`, an array of parts".into()))?;
    Ok(parts
        .iter()
        .filter_map(|part| part.get("functionCall"))
        .map(|call| ProviderCall {
            id: call.get("id").and_then(Value::as_str).map(str::to_owned),
            name: name_of(call),
            arguments: arguments_object(call.get("args")),
        })
        .collect())
}

fn mcp(
    response: &Value,
    fail: impl Fn(String) -> ProviderError,
) -> Result<Vec<ProviderCall>, ProviderError> {
    let params = response.get("params").unwrap_or(response);
    expect_object(params, "a `tools/call` request or its params", fail)?;
    let id = response.get("id").and_then(|id| match id {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    });
    Ok(vec![ProviderCall {
        id,
        name: name_of(params),
        arguments: arguments_object(params.get("arguments")),
    }])
}

fn expect_object(
    value: &Value,
    what: &str,
    fail: impl Fn(String) -> ProviderError,
) -> Result<(), ProviderError> {
    if value.is_object() {
        Ok(())
    } else {
        Err(fail(format!(
            "expected {what}, found {}",
            crate::args::describe(value)
        )))
    }
}

fn required_id(
    call: &Value,
    key: &str,
    at: &str,
    fail: impl Fn(String) -> ProviderError,
) -> Result<String, ProviderError> {
    match call.get(key) {
        Some(Value::String(id)) if !id.is_empty() => Ok(id.clone()),
        _ => Err(fail(format!(
            "`{at}` has no `{key}`, so its result could not be matched to it"
        ))),
    }
}

/// The name as written; a missing name becomes empty, which the server answers with
/// "no such tool" and the list of tools.
fn name_of(call: &Value) -> String {
    call.get("name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

/// OpenAI's arguments: JSON text (some compatible servers send the object itself).
pub(crate) fn arguments_text(arguments: Option<&Value>) -> Result<Value, BadArguments> {
    match arguments {
        Some(Value::String(text)) => match parse_arguments_text(text) {
            Ok(value) => arguments_object(Some(&value)).map_err(|mut bad| {
                bad.raw.clone_from(text);
                bad
            }),
            Err(received) => Err(BadArguments {
                raw: text.clone(),
                received,
            }),
        },
        other => arguments_object(other),
    }
}

/// Arguments sent as JSON text, as a value: blank text is no arguments. `Err` says what
/// came instead, for an argument error.
pub(crate) fn parse_arguments_text(text: &str) -> Result<Value, String> {
    if text.trim().is_empty() {
        return Ok(Value::Object(Map::new()));
    }
    serde_json::from_str(text).map_err(|err| {
        format!(
            "text that is not valid JSON ({err}): {:?}",
            crate::compress_snapshot(text, QUOTE_CHARS)
        )
    })
}

/// Arguments sent as a JSON value: an object, or nothing for a tool without arguments.
fn arguments_object(arguments: Option<&Value>) -> Result<Value, BadArguments> {
    match arguments {
        None | Some(Value::Null) => Ok(Value::Object(Map::new())),
        Some(value @ Value::Object(_)) => Ok(value.clone()),
        Some(other) => Err(BadArguments {
            raw: other.to_string(),
            received: crate::args::describe(other),
        }),
    }
}
