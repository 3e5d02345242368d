//! What maps to what between this crate's tools and results and MCP's.

use std::fmt::Write as _;

use rmcp::model::{CallToolResult, ContentBlock, Tool};
use serde_json::{Map, Value};

use crate::provider::{Provider, output_is_wrapped};
use crate::schema::Dialect;
use crate::tool::{ToolAnnotations, ToolCategory, ToolDefinition};
use crate::{ToolError, ToolOutput, ToolResult};

/// A definition as `tools/list` carries it: the MCP provider entry (schema in the MCP
/// dialect, output schema wrapped when its root is not an object, annotations as hints).
pub(super) fn tool_to_mcp(definition: &ToolDefinition, dialect: Dialect) -> Result<Tool, String> {
    let entry = Provider::Mcp
        .tool_entry(definition, dialect)
        .map_err(|err| err.to_string())?;
    serde_json::from_value(entry).map_err(|err| format!("`{}`: {err}", definition.name))
}

/// A result as `tools/call` answers it: the model's text, `isError`, and structured content
/// shaped by the tool's output schema.
pub(super) fn result_to_mcp(
    result: &ToolResult,
    definition: Option<&ToolDefinition>,
) -> CallToolResult {
    // Built as rmcp's type directly, the same result `ToolResult::to_mcp` writes as JSON.
    let content = vec![ContentBlock::text(result.model_text().into_owned())];
    // Both set `resultType: complete`, required from 2026-07-28 on; the SDK drops it for
    // clients of older versions.
    if !result.success {
        return CallToolResult::error(content);
    }
    let mut out = CallToolResult::success(content);
    if definition.is_some_and(output_is_wrapped) {
        out.structured_content = Some(serde_json::json!({ "result": result.output }));
    } else if result.output.is_object() {
        out.structured_content = Some(result.output.clone());
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

/// A remote result as this crate's output: the text blocks joined for the model (other
/// blocks described in brackets), the structured content as data (or, when there is none
/// and the result holds more than text, the whole content array). `isError` becomes
/// [`ToolError::Execution`] with the server's text.
pub(super) fn output_from_mcp(result: CallToolResult) -> Result<ToolOutput, ToolError> {
    let mut text = String::new();
    let mut only_text = true;
    for block in &result.content {
        if !text.is_empty() {
            text.push('\n');
        }
        match block {
            ContentBlock::Text(block) => text.push_str(&block.text),
            other => {
                only_text = false;
                describe_block(&mut text, other);
            }
        }
    }
    if result.is_error == Some(true) {
        if text.is_empty() {
            text = "the MCP server reported an error without a message".into();
        }
        return Err(ToolError::Execution(text));
    }
    let data = match result.structured_content {
        Some(data) => Some(data),
        None if !only_text => serde_json::to_value(&result.content).ok(),
        None => None,
    };
    Ok(match data {
        Some(data) => ToolOutput::new(text, data),
        None => ToolOutput::text(text),
    })
}

fn describe_block(text: &mut String, block: &ContentBlock) {
    let _ = match block {
        ContentBlock::Image(image) => write!(
            text,
            "[image: {}, {} bytes of base64]",
            image.mime_type,
            image.data.len()
        ),
        ContentBlock::Audio(audio) => write!(
            text,
            "[audio: {}, {} bytes of base64]",
            audio.mime_type,
            audio.data.len()
        ),
        ContentBlock::ResourceLink(link) => write!(text, "[resource link: {}]", link.uri),
        ContentBlock::Resource(resource) => match serde_json::to_value(resource) {
            Ok(value) => write!(
                text,
                "[resource: {}]",
                value["resource"]["uri"].as_str().unwrap_or("(no uri)")
            ),
            Err(_) => write!(text, "[resource]"),
        },
        _ => write!(text, "[content]"),
    };
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
        for (result, definition) in [
            (&text, None),
            (&object, None),
            (&number, None),
            (&number, Some(&wrapped)),
            (&failed, Some(&wrapped)),
        ] {
            let wrap = definition.is_some_and(output_is_wrapped);
            let mut expected = result.to_mcp(wrap);
            expected["resultType"] = json!("complete");
            let built = serde_json::to_value(result_to_mcp(result, definition)).unwrap();
            assert_eq!(built, expected, "{result:?}");
        }
    }
}
