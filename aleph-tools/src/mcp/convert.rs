//! What maps to what between this crate's tools and results and MCP's.

use rmcp::model::{
    CallToolResult, ContentBlock, Prompt, PromptArgument, Resource, ResourceTemplate, Role, Tool,
};
use serde_json::{Map, Value};

use super::prompts::{McpPrompt, PromptMessage, PromptRole};
use super::resources::{About, McpResource, McpResourceTemplate};
use crate::provider::{Provider, mcp_output_schema, output_is_wrapped};
use crate::schema::Dialect;
use crate::tool::{ToolAnnotations, ToolCategory, ToolDefinition};
use crate::{Content, ResourceContents, ToolError, ToolOutput, ToolResult};

/// How a tool's structured output reaches a client: its output schema in `tools/list` and
/// its `structuredContent` in `tools/call`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum OutputShape {
    /// Before 2026-07-28 an output schema's root must be an object (the TypeScript SDK's
    /// client refuses a whole list otherwise), so any other output is wrapped as
    /// `{ "result": … }`.
    Wrapped,
    /// 2026-07-28 takes any JSON Schema, and any JSON value as structured content.
    Plain,
}

impl OutputShape {
    /// The shape for a request: plain for a 2026-07-28 request (it carries its protocol
    /// version, as handshake-free requests do), wrapped for the revisions before.
    pub(super) fn of(meta: &rmcp::model::RequestMetaObject) -> Self {
        match meta.protocol_version() {
            Some(_) => Self::Plain,
            None => Self::Wrapped,
        }
    }

    /// Whether `definition`'s output is wrapped in this shape.
    fn wraps(self, definition: &ToolDefinition) -> bool {
        self == Self::Wrapped && output_is_wrapped(definition)
    }
}

/// A definition as `tools/list` carries it: the MCP provider entry (schema in the MCP
/// dialect, the output schema in `shape`, annotations as hints).
pub(super) fn tool_to_mcp(
    definition: &ToolDefinition,
    dialect: Dialect,
    shape: OutputShape,
) -> Result<Tool, String> {
    let entry = Provider::Mcp
        .tool_entry(definition, dialect)
        .map_err(|err| err.to_string())?;
    let mut tool: Tool =
        serde_json::from_value(entry).map_err(|err| format!("`{}`: {err}", definition.name))?;
    if shape == OutputShape::Plain && output_is_wrapped(definition) {
        // A schema that is not a JSON object (`true`) stays wrapped: MCP's field is one.
        if let Some(Ok(Value::Object(plain))) = mcp_output_schema(definition, dialect, false) {
            tool.output_schema = Some(plain.into());
        }
    }
    Ok(tool)
}

/// A result as `tools/call` answers it: the model's text, `isError`, and structured content
/// shaped by the tool's output schema, in `shape`.
pub(super) fn result_to_mcp(
    result: ToolResult,
    definition: Option<&ToolDefinition>,
    shape: OutputShape,
) -> CallToolResult {
    // Built as rmcp's type directly, the same result `ToolResult::to_mcp` writes as JSON.
    let content = if result.success && !result.content.is_empty() {
        result.content.into_iter().map(block_into_mcp).collect()
    } else {
        vec![ContentBlock::text(result.model_text().into_owned())]
    };
    // Both set `resultType: complete`, required from 2026-07-28 on; the SDK drops it for
    // clients of older versions.
    if !result.success {
        return CallToolResult::error(content);
    }
    let mut out = CallToolResult::success(content);
    let declared = definition.is_some_and(|definition| definition.output_schema.is_some());
    if definition.is_some_and(|definition| shape.wraps(definition)) {
        out.structured_content = Some(serde_json::json!({ "result": result.output }));
    } else if result.output.is_object() || (declared && shape == OutputShape::Plain) {
        out.structured_content = Some(result.output);
    }
    out
}

/// The definition of a wrapped tool: its cleaned `name`, the remote description and
/// schemas, category [`Mcp`](ToolCategory::Mcp), tag `mcp:<server>`.
pub(super) fn definition_from_mcp(name: &str, server: &str, tool: &Tool) -> ToolDefinition {
    let mut description = tool
        .description
        .as_deref()
        .unwrap_or_default()
        .trim()
        .to_owned();
    if description.is_empty() {
        description = tool.title.clone().unwrap_or_else(|| tool.name.to_string());
    }
    let parameters = Value::Object(Map::clone(&tool.input_schema));
    let mut definition = ToolDefinition::new(name, description, parameters)
        .with_category(ToolCategory::Mcp)
        .with_tags([format!("mcp:{server}")]);
    if let Some(output) = &tool.output_schema {
        definition = definition.with_output_schema(Value::Object(Map::clone(output)));
    }
    definition.title = tool
        .title
        .clone()
        .or_else(|| tool.annotations.as_ref()?.title.clone());
    // Icons and `_meta` share MCP's JSON shape with this crate's; one that does not read
    // (a newer field's type) is left out rather than failing the tool.
    definition.icons = tool
        .icons
        .iter()
        .flatten()
        .filter_map(|icon| serde_json::from_value(serde_json::to_value(icon).ok()?).ok())
        .collect();
    definition.meta = tool
        .meta
        .as_ref()
        .and_then(|meta| serde_json::from_value(serde_json::to_value(meta).ok()?).ok());
    if let Some(hints) = &tool.annotations {
        definition = definition.with_annotations(ToolAnnotations {
            read_only: hints.read_only_hint,
            destructive: hints.destructive_hint,
            idempotent: hints.idempotent_hint,
            open_world: hints.open_world_hint,
        });
    }
    definition
}

/// A prompt as `prompts/list` carries it.
pub(super) fn prompt_to_mcp(prompt: &McpPrompt) -> Prompt {
    let arguments: Vec<PromptArgument> = prompt
        .arguments
        .iter()
        .map(|argument| {
            let mut out = PromptArgument::new(&argument.name).with_required(argument.required);
            if let Some(description) = &argument.description {
                out = out.with_description(description);
            }
            out
        })
        .collect();
    let out = Prompt::new(
        &prompt.name,
        Some(&prompt.description),
        Some(arguments).filter(|arguments| !arguments.is_empty()),
    );
    match &prompt.title {
        Some(title) => out.with_title(title),
        None => out,
    }
}

/// A prompt's message as rmcp's.
pub(super) fn message_to_mcp(message: &PromptMessage) -> rmcp::model::PromptMessage {
    let role = match message.role {
        PromptRole::Assistant => Role::Assistant,
        _ => Role::User,
    };
    rmcp::model::PromptMessage::new(role, block_into_mcp(message.content.clone()))
}

/// A content block as rmcp's: text built directly, the rest through their shared JSON
/// shape.
/// A resource or template as listed: its `uri` (or `uriTemplate`) and what it says of itself.
fn described(key: &str, uri: &str, about: &About) -> Value {
    let mut out = Map::new();
    out.insert(key.to_owned(), uri.into());
    out.insert("name".to_owned(), about.name.clone().into());
    for (field, value) in [
        ("title", &about.title),
        ("description", &about.description),
        ("mimeType", &about.mime_type),
    ] {
        if let Some(value) = value {
            out.insert(field.to_owned(), value.clone().into());
        }
    }
    Value::Object(out)
}

pub(super) fn resource_to_mcp(resource: &McpResource) -> Result<Resource, serde_json::Error> {
    serde_json::from_value(described("uri", &resource.uri, &resource.about))
}

pub(super) fn template_to_mcp(
    template: &McpResourceTemplate,
) -> Result<ResourceTemplate, serde_json::Error> {
    serde_json::from_value(described(
        "uriTemplate",
        &template.uri_template,
        &template.about,
    ))
}

/// Read contents as MCP writes them; the shapes are the same.
pub(super) fn contents_to_mcp(
    contents: &ResourceContents,
) -> Result<rmcp::model::ResourceContents, serde_json::Error> {
    serde_json::to_value(contents).and_then(serde_json::from_value)
}

fn block_into_mcp(block: Content) -> ContentBlock {
    match block {
        Content::Text(text) => ContentBlock::text(text.text),
        // MCP has no such block: the line naming the tool.
        Content::ToolReference(_) => ContentBlock::text(block.describe()),
        _ => serde_json::to_value(&block)
            .and_then(serde_json::from_value)
            .unwrap_or_else(|_| ContentBlock::text(block.describe())),
    }
}

/// A remote content block as this crate's, kept whole; a block this crate does not know
/// (from a newer protocol) as its description.
fn block_from_mcp(block: &ContentBlock) -> Content {
    if let ContentBlock::Text(text) = block
        && text.annotations.is_none()
        && text.meta.is_none()
    {
        return Content::text(text.text.clone());
    }
    serde_json::to_value(block)
        .and_then(serde_json::from_value)
        .unwrap_or_else(|err| Content::text(format!("[content this version cannot read: {err}]")))
}

/// A remote result as this crate's output: its content blocks as they are, its structured
/// content as data. `isError` becomes [`ToolError::Execution`] with the server's text (the
/// blocks as [`Content::describe`] gives them).
pub(super) fn output_from_mcp(result: CallToolResult) -> Result<ToolOutput, ToolError> {
    let content: Vec<Content> = result.content.iter().map(block_from_mcp).collect();
    if result.is_error == Some(true) {
        let mut text = content
            .iter()
            .map(Content::describe)
            .collect::<Vec<_>>()
            .join("\n");
        if text.is_empty() {
            text = "the MCP server reported an error without a message".into();
        }
        return Err(ToolError::Execution(text));
    }
    let mut output = ToolOutput::blocks(content);
    output.data = result.structured_content;
    Ok(output)
}

#[cfg(test)]
mod result_tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn results_built_directly_match_their_json() {
        let wrapped = ToolDefinition::new("n", "d", json!({ "type": "object" }))
            .with_output_schema(json!({ "type": "integer" }));
        let text = ToolResult::ok(ToolOutput::text("hi"), std::time::Duration::ZERO);
        let object = ToolResult::ok(
            ToolOutput::json(json!({ "a": 1 })),
            std::time::Duration::ZERO,
        );
        let number = ToolResult::ok(ToolOutput::json(json!(42)), std::time::Duration::ZERO);
        let failed = ToolResult::err(
            &ToolError::Execution("no".into()),
            std::time::Duration::ZERO,
        );
        let mixed = ToolResult::ok(
            ToolOutput::text("a chart:")
                .with_image([1, 2, 3], "image/png")
                .with(Content::embedded_text("test://r", "text/plain", "rows"))
                .with(Content::audio([4], "audio/wav"))
                .with(Content::resource_link("file:///x", "x"))
                .with_data(json!({ "rows": 2 })),
            std::time::Duration::ZERO,
        );
        for (result, definition) in [
            (&mixed, None),
            (&text, None),
            (&object, None),
            (&number, None),
            (&number, Some(&wrapped)),
            (&failed, Some(&wrapped)),
        ] {
            let wrap = definition.is_some_and(output_is_wrapped);
            let mut expected = result.to_mcp(wrap);
            expected["resultType"] = json!("complete");
            let built = serde_json::to_value(result_to_mcp(
                result.clone(),
                definition,
                OutputShape::Wrapped,
            ))
            .unwrap();
            assert_eq!(built, expected, "{result:?}");
        }
    }

    #[test]
    fn a_2026_client_gets_output_as_it_is() {
        let number = ToolDefinition::new("n", "d", json!({ "type": "object" }))
            .with_output_schema(json!({ "type": "integer", "minimum": 0 }));
        let untyped = ToolDefinition::new("u", "d", json!({ "type": "object" }));
        let answer = ToolResult::ok(ToolOutput::json(json!(42)), std::time::Duration::ZERO);
        let plain = result_to_mcp(answer.clone(), Some(&number), OutputShape::Plain);
        assert_eq!(plain.structured_content, Some(json!(42)));
        let wrapped = result_to_mcp(answer.clone(), Some(&number), OutputShape::Wrapped);
        assert_eq!(wrapped.structured_content, Some(json!({ "result": 42 })));
        // Without a declared schema only objects are structured, in either shape.
        let plain = result_to_mcp(answer, Some(&untyped), OutputShape::Plain);
        assert_eq!(plain.structured_content, None);

        let listed = tool_to_mcp(&number, Dialect::MCP, OutputShape::Plain).unwrap();
        let schema = Value::Object(Map::clone(listed.output_schema.as_ref().unwrap()));
        assert_eq!(schema["type"], "integer", "{schema}");
        assert_eq!(schema["minimum"], 0, "{schema}");
        let listed = tool_to_mcp(&number, Dialect::MCP, OutputShape::Wrapped).unwrap();
        let schema = Value::Object(Map::clone(listed.output_schema.as_ref().unwrap()));
        assert_eq!(
            schema["properties"]["result"]["type"], "integer",
            "{schema}"
        );
    }
}
