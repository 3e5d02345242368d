//! The `tools` array of a request, per provider.

use serde_json::{Map, Value, json};

use super::Provider;
use crate::schema::{Dialect, DialectError};
use crate::tool::{ToolAnnotations, ToolDefinition};

/// A tool that cannot be offered to a provider.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("tool `{tool}` cannot be offered to {provider}: {error}", provider = provider.name())]
#[non_exhaustive]
pub struct ToolListError {
    /// The tool's name.
    pub tool: String,
    /// The provider asked for.
    pub provider: Provider,
    /// Why its schema does not fit.
    #[source]
    pub error: DialectError,
}

impl Provider {
    /// The `tools` array for a request to this provider, with schemas in `dialect`, in the
    /// order given.
    ///
    /// OpenAI in strict mode: a tool whose schema cannot be strict (it takes a map, say) is
    /// sent with `strict: false` and its plain schema, unless the tool itself is marked
    /// `strict`, which makes that an error. Gemini's array holds one entry with every
    /// declaration; an empty tool list is an empty array for every provider.
    ///
    /// # Errors
    ///
    /// [`ToolListError`] naming the first tool whose schema cannot be written in `dialect`.
    pub fn tool_list<'d>(
        self,
        definitions: impl IntoIterator<Item = &'d ToolDefinition>,
        dialect: Dialect,
    ) -> Result<Value, ToolListError> {
        let entries = definitions
            .into_iter()
            .map(|definition| self.tool_entry(definition, dialect))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(self.tools_array(entries))
    }

    /// The tools array holding `entries` (each from [`tool_entry`](Self::tool_entry)): the
    /// entries themselves, or for Gemini one entry declaring them all.
    pub(crate) fn tools_array(self, entries: Vec<Value>) -> Value {
        match self {
            Self::Gemini if entries.is_empty() => json!([]),
            Self::Gemini => json!([{ "functionDeclarations": entries }]),
            _ => Value::Array(entries),
        }
    }

    /// One tool as this provider's tools array lists it (for Gemini, one function
    /// declaration).
    ///
    /// # Errors
    ///
    /// As [`tool_list`](Self::tool_list).
    pub fn tool_entry(
        self,
        definition: &ToolDefinition,
        dialect: Dialect,
    ) -> Result<Value, ToolListError> {
        let fail = |error| ToolListError {
            tool: definition.name.clone(),
            provider: self,
            error,
        };
        let (schema, strict) = match dialect {
            Dialect::OpenAi { strict: true } => match dialect.apply(&definition.parameters) {
                Ok(schema) => (schema, true),
                Err(err) if definition.strict => return Err(fail(err)),
                Err(_) => (
                    Dialect::OpenAi { strict: false }
                        .apply(&definition.parameters)
                        .map_err(fail)?,
                    false,
                ),
            },
            other => (other.apply(&definition.parameters).map_err(fail)?, false),
        };
        let name = definition.name.as_str();
        let description = definition.description.as_str();
        Ok(match self {
            Self::OpenAiChat => json!({
                "type": "function",
                "function": {
                    "name": name,
                    "description": description,
                    "parameters": schema,
                    "strict": strict,
                }
            }),
            Self::OpenAiResponses => json!({
                "type": "function",
                "name": name,
                "description": description,
                "parameters": schema,
                "strict": strict,
            }),
            Self::Anthropic => {
                let mut tool = json!({
                    "name": name,
                    "description": description,
                    "input_schema": schema,
                });
                if definition.defer_loading {
                    tool["defer_loading"] = Value::Bool(true);
                }
                tool
            }
            Self::Gemini => {
                let mut declaration = Map::new();
                declaration.insert("name".into(), name.into());
                declaration.insert("description".into(), description.into());
                // Gemini refuses an OBJECT without properties: a tool without arguments
                // leaves `parameters` out.
                let empty = schema
                    .get("properties")
                    .and_then(Value::as_object)
                    .is_none_or(Map::is_empty);
                if !empty {
                    declaration.insert("parameters".into(), schema);
                }
                Value::Object(declaration)
            }
            Self::Mcp => {
                let mut tool = Map::new();
                tool.insert("name".into(), name.into());
                if let Some(title) = &definition.title {
                    tool.insert("title".into(), title.clone().into());
                }
                tool.insert("description".into(), description.into());
                if !definition.icons.is_empty() {
                    tool.insert("icons".into(), json!(definition.icons));
                }
                tool.insert("inputSchema".into(), schema);
                if let Some(output) = mcp_output_schema(definition, dialect, true) {
                    tool.insert("outputSchema".into(), output.map_err(fail)?);
                }
                if let Some(annotations) = mcp_annotations(definition.annotations) {
                    tool.insert("annotations".into(), annotations);
                }
                if let Some(meta) = &definition.meta {
                    tool.insert("_meta".into(), Value::Object(meta.clone()));
                }
                Value::Object(tool)
            }
        })
    }
}

/// The output schema as MCP takes it. Before 2026-07-28 its root must be an object, so with
/// `wrap` any other output is wrapped as `{ "result": … }` (and its structured content the
/// same way); 2026-07-28 takes any schema as it is.
pub(crate) fn mcp_output_schema(
    definition: &ToolDefinition,
    dialect: Dialect,
    wrap: bool,
) -> Option<Result<Value, DialectError>> {
    let schema = definition.output_schema.as_ref()?;
    let wrapped = output_is_wrapped(definition);
    // A dialect rewrites object roots only, so a plain schema is rewritten wrapped and then
    // taken out again.
    let object = if wrapped {
        let mut inner = schema.clone();
        // `$defs` stay at the root, where the `$ref`s inside point.
        let defs = inner.as_object_mut().and_then(|map| map.remove("$defs"));
        let mut wrapped = json!({
            "type": "object",
            "properties": { "result": inner },
            "required": ["result"],
        });
        if let (Some(defs), Value::Object(root)) = (defs, &mut wrapped) {
            root.insert("$defs".into(), defs);
        }
        wrapped
    } else {
        schema.clone()
    };
    let dialect = match dialect {
        Dialect::Mcp { .. } => dialect,
        _ => Dialect::MCP,
    };
    let applied = dialect.apply(&object);
    if wrapped && !wrap {
        return Some(applied.map(unwrapped));
    }
    Some(applied)
}

/// The `result` of a schema wrapped as `{ "result": … }`, with the root's `$defs`.
fn unwrapped(mut schema: Value) -> Value {
    let defs = schema.as_object_mut().and_then(|root| root.remove("$defs"));
    let mut inner = schema["properties"]["result"].take();
    if let (Some(defs), Value::Object(inner)) = (defs, &mut inner) {
        inner.insert("$defs".into(), defs);
    }
    inner
}

/// Whether a tool's structured output is wrapped as `{ "result": … }` for MCP, which wants
/// an object: true when the output schema's root is not an object.
pub(crate) fn output_is_wrapped(definition: &ToolDefinition) -> bool {
    definition
        .output_schema
        .as_ref()
        .is_some_and(|schema| !crate::schema::is_object_schema(schema))
}

fn mcp_annotations(annotations: ToolAnnotations) -> Option<Value> {
    if annotations.is_empty() {
        return None;
    }
    let mut out = Map::new();
    let hints = [
        ("readOnlyHint", annotations.read_only),
        ("destructiveHint", annotations.destructive),
        ("idempotentHint", annotations.idempotent),
        ("openWorldHint", annotations.open_world),
    ];
    for (key, value) in hints {
        if let Some(value) = value {
            out.insert(key.into(), Value::Bool(value));
        }
    }
    Some(Value::Object(out))
}
