//! Turning a plugin's manifest into tools: definitions from `[[tools]]`, schemas from the
//! manifest or from the plugin (a WebAssembly plugin's `describe` export, a Node.js plugin's
//! answer to `initialize`), calls going to the plugin's runtime.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use super::error::PluginError;
use super::manifest::LoadedManifest;
#[cfg(feature = "node")]
use super::node::{NodeHandler, NodePlugin};
#[cfg(feature = "wasm")]
use super::tool::{Handler, PluginTool, parse_output};
#[cfg(feature = "wasm")]
use super::wasm::WasmPlugin;
#[cfg(feature = "node")]
use crate::tool::RuntimeTool;
use crate::tool::{AlephToolDyn, ToolAnnotations, ToolCategory, ToolDefinition};

/// The export a plugin may provide to describe its tools' arguments: it returns a JSON
/// object from tool name to input schema.
#[cfg(feature = "wasm")]
pub const DESCRIBE_EXPORT: &str = "describe";

/// The tools of a WebAssembly plugin, ready to serve.
#[cfg(feature = "wasm")]
pub(super) fn wasm_tools(
    loaded: &LoadedManifest,
    code: &WasmPlugin,
) -> Result<Vec<Arc<dyn AlephToolDyn>>, PluginError> {
    let fail = |message: String| PluginError::Load {
        plugin: loaded.manifest.plugin.id.clone(),
        message,
    };
    check_handlers(loaded, code).map_err(fail)?;
    let described = described_schemas(loaded, code).map_err(fail)?;
    plugin_tools(loaded, &described, None, |section| {
        Arc::new(PluginTool::new(
            section.definition,
            Handler {
                export: section.handler.to_owned(),
                plugin: code.clone(),
            },
        ))
    })
}

/// The tools of a Node.js plugin, ready to serve. A tool without `timeout_ms` gets the
/// runtime's.
#[cfg(feature = "node")]
pub(super) fn node_tools(
    loaded: &LoadedManifest,
    code: &NodePlugin,
    timeout: Duration,
) -> Result<Vec<Arc<dyn AlephToolDyn>>, PluginError> {
    plugin_tools(loaded, code.schemas(), Some(timeout), |section| {
        Arc::new(RuntimeTool::new(
            section.definition,
            NodeHandler {
                plugin: code.clone(),
                handler: section.handler.to_owned(),
            },
        ))
    })
}

/// One tool of a manifest, its definition built.
struct Built<'a> {
    definition: ToolDefinition,
    handler: &'a str,
}

/// Every `[[tools]]` entry as a tool: definitions from the manifest (schemas from the
/// manifest, else from what the plugin `described`, else any object), each run by what
/// `serve` builds around it.
fn plugin_tools<'a>(
    loaded: &'a LoadedManifest,
    described: &serde_json::Map<String, Value>,
    timeout: Option<Duration>,
    serve: impl Fn(Built<'a>) -> Arc<dyn AlephToolDyn>,
) -> Result<Vec<Arc<dyn AlephToolDyn>>, PluginError> {
    let manifest = &loaded.manifest;
    let fail = |message: String| PluginError::Load {
        plugin: manifest.plugin.id.clone(),
        message,
    };
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
                "the input schema the plugin describes for `{}` must be an object schema",
                section.name
            )));
        }
        let mut description = section.description.clone();
        if let Some(file) = &section.instruction_file {
            let text = loaded.read_text(file).map_err(fail)?;
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
            .with_task(section.task)
            .with_defer_loading(section.defer_loading || manifest.plugin.defer_loading)
            .with_tags(
                section
                    .tags
                    .iter()
                    .cloned()
                    .chain([format!("plugin:{}", manifest.plugin.id)]),
            )
            .with_examples(section.examples.iter().cloned())
            .with_allowed_callers(section.allowed_callers.iter().copied())
            .with_strict(section.strict);
        definition.title.clone_from(&section.title);
        definition.icons = section.icons.iter().map(crate::Icon::from).collect();
        definition.meta.clone_from(&section.meta);
        definition.output_limit = section.output_limit;
        if let Some(source) = &section.output_schema {
            definition = definition.with_output_schema(
                loaded
                    .read_schema(source)
                    .map_err(|e| fail(format!("`tools[{i}].output_schema`: {e}")))?,
            );
        }
        if let Some(after) = section.timeout_ms.map(Duration::from_millis).or(timeout) {
            definition = definition.with_timeout(after);
        }
        tools.push(serve(Built {
            definition,
            handler: section.handler(),
        }));
    }
    Ok(tools)
}

/// Every tool, command, hook and service handler must be a callable export.
#[cfg(feature = "wasm")]
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
    let hooks = manifest
        .hooks
        .iter()
        .enumerate()
        .map(|(i, h)| (format!("hooks[{i}].handler"), h.handler.as_str()));
    let services = manifest.services.iter().enumerate().flat_map(|(i, s)| {
        [
            (
                format!("services[{i}].start_handler"),
                s.start_handler.as_str(),
            ),
            (
                format!("services[{i}].stop_handler"),
                s.stop_handler.as_str(),
            ),
        ]
    });
    let routes = manifest
        .http_routes
        .iter()
        .enumerate()
        .map(|(i, r)| (format!("http_routes[{i}].handler"), r.handler.as_str()));
    let providers = manifest.providers.iter().enumerate().flat_map(|(i, p)| {
        [
            Some(("list_models_handler", p.list_models_handler.as_str())),
            Some(("chat_handler", p.chat_handler.as_str())),
            p.stream_handler.as_deref().map(|h| ("stream_handler", h)),
            p.embed_handler.as_deref().map(|h| ("embed_handler", h)),
        ]
        .into_iter()
        .flatten()
        .map(move |(key, handler)| (format!("providers[{i}].{key}"), handler))
    });
    match tools
        .chain(commands)
        .chain(hooks)
        .chain(services)
        .chain(routes)
        .chain(providers)
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
#[cfg(feature = "wasm")]
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

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use serde_json::{Map, Value, json};

    use super::plugin_tools;
    use crate::plugin::PluginManifest;
    use crate::{
        Caller, Icon, RuntimeTool, ToolAnnotations, ToolCategory, ToolContext, ToolDefinition,
        ToolOutput,
    };

    /// A definition with every field set, as a plugin's manifest can say it.
    fn everything() -> ToolDefinition {
        let mut meta = Map::new();
        meta.insert("example.com/group".into(), json!("text"));
        let schema = json!({
            "type": "object",
            "properties": { "text": { "type": "string" } },
            "required": ["text"],
            "additionalProperties": false
        });
        ToolDefinition::new("word_count", "Count words.", schema)
            .with_title("Word count")
            .with_icons(
                [Icon::new("https://example.com/count.svg").with_mime_type("image/svg+xml")],
            )
            .with_meta(meta)
            .with_output_schema(json!({ "type": "object" }))
            .with_category(ToolCategory::Plugin)
            .with_annotations(
                ToolAnnotations::NONE
                    .read_only(true)
                    .destructive(false)
                    .idempotent(true)
                    .open_world(false),
            )
            .with_confirmation(true)
            .with_examples([r#"{"text":"a b"}"#])
            .with_tags(["text", "plugin:counter"])
            .with_allowed_callers([Caller::Human, Caller::CodeExecution])
            .with_timeout(Duration::from_secs(2))
            .with_strict(true)
            .with_task(true)
            .with_output_limit(500)
            .with_defer_loading(true)
    }

    /// The same tool as a manifest's `[[tools]]` entry, one key for each field.
    const MANIFEST: &str = r#"
[plugin]
id = "counter"
version = "1.0.0"
kind = "wasm"
entry = "counter.wasm"

[[tools]]
name = "word_count"
description = "Count words."
input_schema = { type = "object", properties = { text = { type = "string" } }, required = ["text"], additionalProperties = false }
output_schema = { type = "object" }
title = "Word count"
meta = { "example.com/group" = "text" }
read_only = true
destructive = false
idempotent = true
open_world = false
requires_confirmation = true
examples = ['{"text":"a b"}']
tags = ["text"]
allowed_callers = ["human", "code_execution"]
timeout_ms = 2000
strict = true
task = true
output_limit = 500
defer_loading = true

[[tools.icons]]
src = "https://example.com/count.svg"
mime_type = "image/svg+xml"
"#;

    /// The keys of a definition's JSON the manifest writes in its own way, or not at all.
    const SPELLED_OTHERWISE: &[(&str, &str)] = &[
        ("parameters", "the manifest's `input_schema`"),
        (
            "annotations",
            "the manifest's `read_only`, `destructive`, `idempotent`, `open_world`",
        ),
        ("category", "always `plugin` for a plugin's tool"),
    ];

    /// A field added to `ToolDefinition` is one a plugin's manifest can say, and a tool built
    /// from a manifest carries every field: so the two cannot drift apart.
    #[test]
    fn a_manifest_says_everything_a_definition_holds() {
        let full = serde_json::to_value(everything()).unwrap();
        let Value::Object(fields) = &full else {
            panic!("a definition serializes to an object");
        };
        let known: Vec<&str> = MANIFEST
            .lines()
            .filter_map(|line| match line.strip_prefix("[[tools.") {
                Some(table) => table.strip_suffix("]]"),
                None => line.split_once(" = ").map(|(key, _)| key.trim()),
            })
            .chain(SPELLED_OTHERWISE.iter().map(|(key, _)| *key))
            .collect();
        for key in fields.keys() {
            assert!(
                known.contains(&key.as_str()),
                "`ToolDefinition` has `{key}`, which a plugin manifest's `[[tools]]` cannot say: add it to `ToolSection` and to `plugin_tools`"
            );
        }

        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("aleph_plugin.toml"), MANIFEST).unwrap();
        std::fs::write(dir.path().join("counter.wasm"), b"").unwrap();
        let loaded = PluginManifest::read_dir(dir.path()).unwrap();
        let tools = plugin_tools(&loaded, &Map::new(), None, |built| {
            Arc::new(RuntimeTool::new(
                built.definition,
                |_: Value, _: ToolContext| async { Ok(ToolOutput::text("")) },
            ))
        })
        .unwrap();
        let built = serde_json::to_value(tools[0].definition()).unwrap();
        assert_eq!(built, full);
    }
}
