//! The messages that carry tool results back to a provider.

use std::borrow::Cow;

use serde_json::{Map, Value, json};

use super::Provider;
use super::calls::ProviderCall;
use crate::result::{Content, ResourceBody, ToolResult};

impl Provider {
    /// The messages that answer `calls` with `results` (the same length, in call order),
    /// to append to the conversation:
    ///
    /// - OpenAI chat: one `{ "role": "tool", "tool_call_id", "content" }` per call;
    /// - OpenAI responses: one `{ "type": "function_call_output", "call_id", "output" }`
    ///   per call;
    /// - Anthropic: one user message of `tool_result` blocks, `is_error` on failures;
    /// - Gemini: one user content of `functionResponse` parts, the result under
    ///   `response.output` (structured data as is) or the message under `response.error`;
    /// - MCP: one `CallToolResult` per call (see [`ToolResult::to_mcp`]), with structured
    ///   content for object outputs only: the results alone do not say which tools list a
    ///   wrapped output schema. [`run_tool_calls`](crate::AlephToolServer::run_tool_calls)
    ///   knows, and wraps those.
    ///
    /// The text is [`ToolResult::model_text`]: the error message on failure, else the
    /// tool's content (shortened to the server's output limit), else its output as JSON.
    ///
    /// [`Content`] blocks other than text reach each API as far as it documents them:
    ///
    /// | block | OpenAI chat | OpenAI responses | Anthropic | Gemini | MCP |
    /// | --- | --- | --- | --- | --- | --- |
    /// | image | described | `input_image` (data URL; PNG, JPEG, GIF, WebP) | `image` (PNG, JPEG, GIF, WebP) | `inlineData` part (PNG, JPEG, WebP) | as is |
    /// | PDF resource | described | `input_file` | `document` | `inlineData` part | as is |
    /// | audio, links, other resources | described | described | described | described | as is |
    /// | tool reference | described | described | `tool_reference` (the result holds only these) | described | described |
    ///
    /// "Described" is the block's line in the text ([`Content::describe`]): an embedded
    /// text resource gives its text, anything else a bracketed line naming it.
    pub fn result_messages(self, calls: &[ProviderCall], results: &[ToolResult]) -> Vec<Value> {
        let pairs = calls.iter().zip(results);
        match self {
            Self::OpenAiChat => pairs
                .map(|(call, result)| {
                    json!({
                        "role": "tool",
                        "tool_call_id": call.id.as_deref().unwrap_or_default(),
                        "content": result.model_text(),
                    })
                })
                .collect(),
            Self::OpenAiResponses => pairs
                .map(|(call, result)| {
                    let output = mixed_parts(
                        result,
                        responses_part,
                        |text| json!({ "type": "input_text", "text": text }),
                    )
                    .map_or_else(|| Value::from(result.model_text()), Value::Array);
                    json!({
                        "type": "function_call_output",
                        "call_id": call.id.as_deref().unwrap_or_default(),
                        "output": output,
                    })
                })
                .collect(),
            Self::Anthropic | Self::Gemini if calls.is_empty() => Vec::new(),
            Self::Anthropic => {
                let blocks: Vec<Value> = pairs
                    .map(|(call, result)| {
                        let content = tool_references(result)
                            .or_else(|| {
                                mixed_parts(
                                    result,
                                    anthropic_block,
                                    |text| json!({ "type": "text", "text": text }),
                                )
                            })
                            .map_or_else(|| Value::from(result.model_text()), Value::Array);
                        let mut block = json!({
                            "type": "tool_result",
                            "tool_use_id": call.id.as_deref().unwrap_or_default(),
                            "content": content,
                        });
                        if !result.success {
                            block["is_error"] = Value::Bool(true);
                        }
                        block
                    })
                    .collect();
                vec![json!({ "role": "user", "content": blocks })]
            }
            Self::Gemini => {
                let parts: Vec<Value> = pairs
                    .map(|(call, result)| json!({ "functionResponse": gemini_response(call, result) }))
                    .collect();
                vec![json!({ "role": "user", "parts": parts })]
            }
            Self::Mcp => pairs.map(|(_, result)| result.to_mcp(false)).collect(),
        }
    }
}

/// A successful result's content as a provider's list of parts, when at least one block is
/// one the provider takes (`native` gives its part): the rest become text parts made by
/// `text`, one for each run of blocks between native ones. `None` when the provider would
/// get text only, which it then gets as a plain string.
fn mixed_parts(
    result: &ToolResult,
    native: fn(&Content) -> Option<Value>,
    text: impl Fn(String) -> Value,
) -> Option<Vec<Value>> {
    if !result.success {
        return None;
    }
    let natives: Vec<Option<Value>> = result.content.iter().map(native).collect();
    if natives.iter().all(Option::is_none) {
        return None;
    }
    let mut parts = Vec::new();
    let mut run: Vec<Cow<'_, str>> = Vec::new();
    for (block, part) in result.content.iter().zip(natives) {
        match part {
            Some(part) => {
                if !run.is_empty() {
                    parts.push(text(run.join("\n")));
                    run.clear();
                }
                parts.push(part);
            }
            None => run.push(block.describe()),
        }
    }
    if !run.is_empty() {
        parts.push(text(run.join("\n")));
    }
    Some(parts)
}

/// The image types OpenAI and Anthropic take: JPEG, PNG, GIF and WebP.
const WEB_IMAGES: [&str; 4] = ["image/jpeg", "image/png", "image/gif", "image/webp"];

/// An embedded resource's bytes and MIME type, when it carries bytes.
fn blob(block: &Content) -> Option<(&str, &str)> {
    match block {
        Content::Resource(embedded) => match &embedded.resource.body {
            ResourceBody::Blob(data) => Some((data, embedded.resource.mime_type.as_deref()?)),
            ResourceBody::Text(_) => None,
        },
        _ => None,
    }
}

/// An embedded PDF's bytes and MIME type.
fn pdf(block: &Content) -> Option<(&str, &str)> {
    blob(block).filter(|(_, mime)| *mime == "application/pdf")
}

/// A block as an item of a responses `function_call_output`'s `output` list.
fn responses_part(block: &Content) -> Option<Value> {
    match block {
        Content::Image(image) if WEB_IMAGES.contains(&image.mime_type.as_str()) => {
            Some(json!({ "type": "input_image", "image_url": image.data_url() }))
        }
        Content::Resource(embedded) => {
            let (data, mime) = pdf(block)?;
            let uri = &embedded.resource.uri;
            let filename = uri.rsplit('/').find(|name| !name.is_empty()).unwrap_or(uri);
            Some(json!({
                "type": "input_file",
                "filename": filename,
                "file_data": format!("data:{mime};base64,{data}"),
            }))
        }
        _ => None,
    }
}

/// A tool search's answer as Anthropic takes it: its `tool_reference` blocks alone (the
/// API puts the definitions they name before the model itself). `None` for a result
/// without references.
fn tool_references(result: &ToolResult) -> Option<Vec<Value>> {
    if !result.success {
        return None;
    }
    let references: Vec<Value> = result
        .content
        .iter()
        .filter_map(|block| match block {
            Content::ToolReference(reference) => {
                Some(json!({ "type": "tool_reference", "tool_name": reference.tool_name }))
            }
            _ => None,
        })
        .collect();
    (!references.is_empty()).then_some(references)
}

/// A block as an item of an Anthropic `tool_result`'s `content` list.
fn anthropic_block(block: &Content) -> Option<Value> {
    let (kind, data, mime) = match block {
        Content::Image(image) if WEB_IMAGES.contains(&image.mime_type.as_str()) => {
            ("image", image.data.as_str(), image.mime_type.as_str())
        }
        _ => {
            let (data, mime) = pdf(block)?;
            ("document", data, mime)
        }
    };
    Some(json!({
        "type": kind,
        "source": { "type": "base64", "media_type": mime, "data": data },
    }))
}

/// A block as a Gemini `FunctionResponsePart`: the media types its API takes inline.
fn gemini_part(block: &Content) -> Option<Value> {
    const TYPES: [&str; 5] = [
        "image/png",
        "image/jpeg",
        "image/webp",
        "application/pdf",
        "text/plain",
    ];
    let (data, mime) = match block {
        Content::Image(image) => (image.data.as_str(), image.mime_type.as_str()),
        _ => blob(block)?,
    };
    TYPES
        .contains(&mime)
        .then(|| json!({ "inlineData": { "mimeType": mime, "data": data } }))
}

/// One call's `functionResponse`: the text (or data) under `response.output`, the error
/// under `response.error`, and the media Gemini takes inline under `parts`.
fn gemini_response(call: &ProviderCall, result: &ToolResult) -> Map<String, Value> {
    let mut response = Map::new();
    let mut inline = Vec::new();
    if let Some(error) = &result.error {
        response.insert("error".into(), error.clone().into());
    } else if result.content.is_empty() {
        response.insert("output".into(), result.output.clone());
    } else {
        let mut text = Vec::new();
        for block in &result.content {
            match gemini_part(block) {
                Some(part) => inline.push(part),
                None => text.push(block.describe()),
            }
        }
        response.insert("output".into(), text.join("\n").into());
    }
    let mut function_response = Map::new();
    function_response.insert("name".into(), call.name.clone().into());
    if let Some(id) = &call.id {
        function_response.insert("id".into(), id.clone().into());
    }
    function_response.insert("response".into(), Value::Object(response));
    if !inline.is_empty() {
        function_response.insert("parts".into(), Value::Array(inline));
    }
    function_response
}

impl ToolResult {
    /// The result as an MCP `CallToolResult`: `content` with the tool's content blocks as
    /// they are (or, when it gave none, one text block with the
    /// [`model_text`](Self::model_text)), `isError`, and `structuredContent` when the output
    /// is a JSON object, or always as `{ "result": output }` when `wrap_output` says the
    /// tool's output schema was wrapped that way (its root is not an object).
    pub fn to_mcp(&self, wrap_output: bool) -> Value {
        let mut out = Map::new();
        let content = if self.success && !self.content.is_empty() {
            let blocks = self.content.iter().map(|block| match block {
                // MCP has no such block: the line naming the tool.
                Content::ToolReference(_) => json!({ "type": "text", "text": block.describe() }),
                _ => serde_json::to_value(block).unwrap_or_default(),
            });
            Value::Array(blocks.collect())
        } else {
            json!([{ "type": "text", "text": self.model_text() }])
        };
        out.insert("content".into(), content);
        if self.success {
            if wrap_output {
                out.insert("structuredContent".into(), json!({ "result": self.output }));
            } else if self.output.is_object() {
                out.insert("structuredContent".into(), self.output.clone());
            }
        }
        out.insert("isError".into(), Value::Bool(!self.success));
        Value::Object(out)
    }
}
