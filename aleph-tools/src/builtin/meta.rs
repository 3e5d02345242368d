//! `list_tools` and `get_tool_schema`: the model looks up the server's own tools, as the
//! filter offers them, and a tool's schema as the model's provider reads it.

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use super::Builtin;
use crate::context::{State, ToolContext};
use crate::error::ToolError;
use crate::provider::Provider;
use crate::server::{AlephToolServer, ToolServerBuilder};
use crate::tool;
use crate::tool::ToolCategory;

/// `list_tools` and `get_tool_schema`, served by
/// [`with_builtin`](ToolServerBuilder::with_builtin).
///
/// `get_tool_schema` answers in the format of the provider set here, else of the first
/// provider given to [`with_providers`](ToolServerBuilder::with_providers), else as an MCP
/// `tools/list` entry.
///
/// ```
/// use aleph_tools::builtin::MetaTools;
/// use aleph_tools::prelude::*;
/// use aleph_tools::provider::Provider;
///
/// let server = AlephToolServer::builder()
///     .with_builtin(MetaTools::new().provider(Provider::Anthropic))
///     .build()?;
/// assert!(server.contains("get_tool_schema"));
/// # Ok::<(), aleph_tools::RegistryError>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct MetaTools {
    provider: Option<Provider>,
}

impl MetaTools {
    /// Both tools; schemas in the format of the server's first provider.
    pub fn new() -> Self {
        Self::default()
    }

    /// Schemas in `provider`'s format.
    #[must_use]
    pub fn provider(mut self, provider: Provider) -> Self {
        self.provider = Some(provider);
        self
    }
}

impl Builtin for MetaTools {
    fn add_to(self, builder: ToolServerBuilder) -> ToolServerBuilder {
        builder
            .with_state(self)
            .with_tool(ListToolsTool)
            .with_tool(GetToolSchemaTool)
    }
}

/// One tool, as `list_tools` lists it.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Listed {
    name: String,
    /// The first paragraph of its description.
    summary: String,
    category: ToolCategory,
    tags: Vec<String>,
}

/// What `list_tools` found.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct ListedTools {
    tools: Vec<Listed>,
}

/// List the tools you can call, with a line about each; narrow by category or tag.
///
/// Get the arguments a tool takes with `get_tool_schema`.
#[tool(crate = crate, register = false, read_only, idempotent)]
pub(crate) fn list_tools(
    /// Only tools of this category
    category: Option<ToolCategory>,
    /// Only tools with this tag
    tag: Option<String>,
    ctx: &ToolContext,
) -> Result<ListedTools, ToolError> {
    let server = server(ctx)?;
    let tools = server
        .tools()
        .context(ctx)
        .definitions()
        .iter()
        .filter(|d| category.is_none_or(|c| d.category == c))
        .filter(|d| {
            tag.as_ref()
                .is_none_or(|t| d.tags.iter().any(|own| own == t))
        })
        .map(|d| Listed {
            name: d.name.clone(),
            summary: d
                .description
                .split("\n\n")
                .next()
                .unwrap_or_default()
                .replace('\n', " "),
            category: d.category,
            tags: d.tags.clone(),
        })
        .collect();
    Ok(ListedTools { tools })
}

/// Get the whole definition of a tool: its description and the JSON Schema of its arguments.
#[tool(crate = crate, register = false, read_only, idempotent)]
pub(crate) fn get_tool_schema(
    /// The tool's name, as `list_tools` gives it
    name: String,
    settings: State<MetaTools>,
    ctx: &ToolContext,
) -> Result<Value, ToolError> {
    let server = server(ctx)?;
    let Some(definition) = server.tools().context(ctx).get(&name) else {
        let offered = server.tools().context(ctx).definitions();
        let names = offered.iter().map(|definition| definition.name.as_str());
        let closest = crate::util::names::closest(&name, names, 1);
        let hint = closest
            .first()
            .map_or_else(String::new, |c| format!("; did you mean `{c}`?"));
        return Err(ToolError::execution(format!(
            "no tool is named `{name}`{hint} (list_tools lists them)"
        )));
    };
    let provider = settings
        .provider
        .or_else(|| server.providers().first().copied())
        .unwrap_or(Provider::Mcp);
    provider
        .tool_entry(&definition, provider.dialect())
        .map_err(|e| ToolError::execution(e.to_string()))
}

fn server(ctx: &ToolContext) -> Result<AlephToolServer, ToolError> {
    ctx.server()
        .ok_or_else(|| ToolError::execution("this call was not made through a tool server"))
}
