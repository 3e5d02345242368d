//! Turning a WebAssembly plugin's manifest into tools: handlers checked against the module's
//! exports, schemas from the manifest or the plugin's `describe` export.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use super::error::PluginError;
use super::manifest::LoadedManifest;
use super::tool::{Handler, PluginTool, parse_output};
use super::wasm::WasmPlugin;
use crate::tool::{AlephToolDyn, ToolAnnotations, ToolCategory, ToolDefinition};

/// The export a plugin may provide to describe its tools' arguments: it returns a JSON
/// object from tool name to input schema.
pub const DESCRIBE_EXPORT: &str = "describe";

/// The plugin's tools, ready to serve.
pub(super) fn wasm_tools(
    loaded: &LoadedManifest,
    code: &WasmPlugin,
) -> Result<Vec<Arc<dyn AlephToolDyn>>, PluginError> {
    let manifest = &loaded.manifest;
    let fail = |message: String| PluginError::Load {
        plugin: manifest.plugin.id.clone(),
        message,
    };
    check_handlers(loaded, code).map_err(fail)?;
    let described = described_schemas(loaded, code).map_err(fail)?;

    let mut tools: Vec<Arc<dyn AlephToolDyn>> = Vec::with_capacity(manifest.tools.len());
    for (i, section) in manifest.tools.iter().enumerate() {
        let parameters = match &section.input_schema {
            Some(source) => loaded
                .read_schema(source)
                .map_err(|e| fail(format!("`tools[{i}].input_schema`: {e}")))?,
            None => described
                .get(&section.name)
                .cloned()
                .unwrap_or_else(open_schema),
        };
        if !crate::schema::is_object_schema(&parameters) {
            return Err(fail(format!(
                "the input schema of `{}` (from `describe`) must be an object schema",
                section.name
            )));
        }
        let mut description = section.description.clone();
        if let Some(file) = &section.instruction_file {
            let path = loaded.resolve(file);
            let text = std::fs::read_to_string(&path)
                .map_err(|e| fail(format!("cannot read `{}`: {e}", path.display())))?;
            description.push_str("\n\n");
            description.push_str(text.trim());
        }
        let mut definition = ToolDefinition::new(&section.name, description, parameters)
            .with_category(ToolCategory::Plugin)
            .with_annotations(ToolAnnotations {
                read_only: section.read_only,
                destructive: section.destructive,
                idempotent: section.idempotent,
                open_world: section.open_world,
            })
            .with_confirmation(section.requires_confirmation)
            .with_tags(
                section
                    .tags
                    .iter()
                    .cloned()
                    .chain([format!("plugin:{}", manifest.plugin.id)]),
            );
        if let Some(source) = &section.output_schema {
            definition = definition.with_output_schema(
                loaded
                    .read_schema(source)
                    .map_err(|e| fail(format!("`tools[{i}].output_schema`: {e}")))?,
            );
        }
        if let Some(ms) = section.timeout_ms {
            definition = definition.with_timeout(Duration::from_millis(ms));
        }
        tools.push(Arc::new(PluginTool::new(
            definition,
            Handler {
                export: section.handler().to_owned(),
                plugin: code.clone(),
            },
        )));
    }
    Ok(tools)
}

/// Every tool and command handler must be a callable export.
fn check_handlers(loaded: &LoadedManifest, code: &WasmPlugin) -> Result<(), String> {
    let manifest = &loaded.manifest;
    let tools = manifest
        .tools
        .iter()
        .enumerate()
        .map(|(i, t)| (format!("tools[{i}].handler"), t.handler()));
    let commands = manifest
        .commands
        .iter()
        .enumerate()
        .map(|(i, c)| (format!("commands[{i}].handler"), c.handler.as_str()));
    match tools
        .chain(commands)
        .find(|(_, handler)| !code.has_export(handler))
    {
        None => Ok(()),
        Some((key, handler)) => Err(format!(
            "`{key}` names `{handler}`, which the module does not export (it exports: {}); export it or fix the name",
            if code.exports().is_empty() {
                "nothing callable".to_owned()
            } else {
                code.exports().join(", ")
            }
        )),
    }
}

/// What the plugin's `describe` export says of the tools whose manifest gives no schema.
fn described_schemas(
    loaded: &LoadedManifest,
    code: &WasmPlugin,
) -> Result<serde_json::Map<String, Value>, String> {
    let manifest = &loaded.manifest;
    if manifest.tools.iter().all(|t| t.input_schema.is_some()) || !code.has_export(DESCRIBE_EXPORT)
    {
        return Ok(serde_json::Map::new());
    }
    let output = code
        .call_blocking(DESCRIBE_EXPORT, b"")
        .map_err(|e| format!("its `describe` export failed: {e}"))?;
    match parse_output(&manifest.plugin.id, &output).map_err(|e| e.to_string())? {
        Value::Object(map) => Ok(map),
        _ => Err(
            "its `describe` export must return a JSON object from tool name to input schema".into(),
        ),
    }
}

/// The schema of a tool that declares none: any object.
fn open_schema() -> Value {
    json!({ "type": "object", "properties": {}, "additionalProperties": true })
}
