//! The schemas users get from `#[tool]`, checked exactly.

use std::collections::BTreeMap;

use aleph_tools::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// How results are ordered.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Order {
    /// Most relevant first
    Relevance,
    /// Newest first
    Newest,
}

/// A closed range of dates.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DateRange {
    /// First day, as YYYY-MM-DD
    pub from: String,
    /// Last day, as YYYY-MM-DD
    pub to: String,
}

/// One search hit.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct Hit {
    /// Page title
    pub title: String,
    /// Page address
    pub url: String,
}

/// Search the web for pages about a query.
///
/// Returns the best matches first.
#[tool(tags = ["web"], read_only, timeout = "10s", register = false)]
async fn web_search(
    /// Search query, in natural language
    query: String,
    /// Maximum results to return
    #[arg(default = 10)]
    max_results: u32,
    /// Restrict to one site
    site: Option<String>,
    /// Result order
    #[arg(default = Order::Relevance)]
    order: Order,
    /// Only pages published in this range
    range: Option<DateRange>,
    /// Extra labels to match
    labels: Vec<String>,
    /// Weights per label
    weights: BTreeMap<String, f64>,
    ctx: &ToolContext,
    progress: Progress,
    cancel: CancellationToken,
    state: State<u8>,
) -> Result<Vec<Hit>, String> {
    let _ = (
        ctx,
        progress,
        cancel,
        state,
        max_results,
        site,
        order,
        range,
        labels,
        weights,
    );
    tokio::task::yield_now().await;
    Ok(vec![Hit {
        title: query,
        url: "https://example.com".into(),
    }])
}

fn schema_of(definition: &ToolDefinition) -> &Value {
    &definition.parameters
}

#[test]
fn description_comes_from_the_doc_comment_paragraphs() {
    let def = WebSearchTool.definition();
    assert_eq!(def.name, "web_search");
    assert_eq!(
        def.description,
        "Search the web for pages about a query.\n\nReturns the best matches first."
    );
}

#[test]
fn arguments_schema_is_exact() {
    let def = WebSearchTool.definition();
    let expected = json!({
        "type": "object",
        "properties": {
            "query": { "type": "string", "description": "Search query, in natural language" },
            "max_results": {
                "type": "integer",
                "format": "uint32",
                "minimum": 0,
                "default": 10,
                "description": "Maximum results to return"
            },
            "site": { "type": ["string", "null"], "description": "Restrict to one site" },
            "order": { "$ref": "#/$defs/Order", "default": "relevance", "description": "Result order" },
            "range": {
                "anyOf": [{ "$ref": "#/$defs/DateRange" }, { "type": "null" }],
                "description": "Only pages published in this range"
            },
            "labels": {
                "type": "array",
                "items": { "type": "string" },
                "description": "Extra labels to match"
            },
            "weights": {
                "type": "object",
                "additionalProperties": { "type": "number", "format": "double" },
                "description": "Weights per label"
            }
        },
        "required": ["query", "labels", "weights"],
        "$defs": {
            "Order": {
                "description": "How results are ordered.",
                "oneOf": [
                    { "type": "string", "const": "relevance", "description": "Most relevant first" },
                    { "type": "string", "const": "newest", "description": "Newest first" }
                ]
            },
            "DateRange": {
                "type": "object",
                "description": "A closed range of dates.",
                "properties": {
                    "from": { "type": "string", "description": "First day, as YYYY-MM-DD" },
                    "to": { "type": "string", "description": "Last day, as YYYY-MM-DD" }
                },
                "required": ["from", "to"]
            }
        }
    });
    assert_eq!(schema_of(&def), &expected, "{:#}", schema_of(&def));
}

#[test]
fn injected_parameters_never_reach_the_schema() {
    let def = WebSearchTool.definition();
    let properties = def.parameters["properties"].as_object().unwrap();
    for injected in ["ctx", "progress", "cancel", "state"] {
        assert!(
            !properties.contains_key(injected),
            "{injected} leaked into the schema"
        );
    }
}

#[test]
fn output_schema_follows_the_result_ok_type() {
    let def = WebSearchTool.definition();
    let output = def.output_schema.expect("Vec<Hit> has a schema");
    assert_eq!(output["type"], "array");
    assert_eq!(output["items"]["$ref"], "#/$defs/Hit");
    assert_eq!(
        output["$defs"]["Hit"]["properties"]["title"]["description"],
        "Page title"
    );
}

#[test]
fn keys_land_in_the_definition() {
    let def = WebSearchTool.definition();
    assert_eq!(def.tags, ["web"]);
    assert_eq!(def.annotations.read_only, Some(true));
    assert_eq!(def.annotations.destructive, None);
    assert_eq!(def.timeout, Some(std::time::Duration::from_secs(10)));
    assert_eq!(def.category, ToolCategory::Builtin);
    let serialized = serde_json::to_value(&def).unwrap();
    assert_eq!(serialized["timeout_ms"], 10_000);
    assert_eq!(serialized["annotations"], json!({ "read_only": true }));
    assert!(serialized.get("requires_confirmation").is_none());
    assert!(serialized.get("examples").is_none());
}

/// Does nothing.
#[tool(register = false)]
fn nothing() {}

#[test]
fn a_tool_without_parameters_still_has_an_object_schema_with_properties() {
    let def = NothingTool.definition();
    assert_eq!(
        def.parameters,
        json!({ "type": "object", "properties": {} })
    );
    assert_eq!(def.output_schema, None, "() has nothing to describe");
}

/// Text-and-data output.
#[tool(register = false)]
fn text_and_data() -> ToolOutput {
    ToolOutput::new("hi", json!({ "n": 1 }))
}

#[test]
fn tool_output_has_no_output_schema() {
    assert_eq!(TextAndDataTool.definition().output_schema, None);
}

#[derive(Serialize)]
struct Opaque {
    n: u8,
}

/// Output without a schema.
#[tool(register = false)]
fn opaque() -> Opaque {
    Opaque { n: 1 }
}

#[test]
fn output_types_without_a_schema_leave_it_out() {
    assert_eq!(OpaqueTool.definition().output_schema, None);
}

/// Type `r#type` is a raw identifier.
#[tool(register = false)]
fn raw_names(
    /// The kind of thing
    r#type: String,
) -> String {
    r#type
}

#[test]
fn raw_identifiers_lose_their_prefix() {
    let def = RawNamesTool.definition();
    assert_eq!(def.name, "raw_names");
    assert!(def.parameters["properties"].get("type").is_some());
    assert_eq!(def.parameters["required"], json!(["type"]));
}

/// Serde and schemars attributes pass through to the argument.
#[tool(register = false)]
fn passthrough(
    /// How many, from 1 to 5
    #[schemars(range(min = 1, max = 5))]
    #[serde(rename = "n")]
    count: u8,
) -> u8 {
    count
}

#[test]
fn serde_and_schemars_attributes_reach_the_field() {
    let def = PassthroughTool.definition();
    let n = &def.parameters["properties"]["n"];
    assert_eq!(n["minimum"], 1);
    assert_eq!(n["maximum"], 5);
    assert_eq!(def.parameters["required"], json!(["n"]));
}

/// Lines of one paragraph
/// are unwrapped.
///
/// - list items
/// - keep their lines
#[tool(register = false)]
fn wrapped_docs() {}

#[test]
fn doc_paragraphs_unwrap_and_lists_keep_their_lines() {
    assert_eq!(
        WrappedDocsTool.definition().description,
        "Lines of one paragraph are unwrapped.\n\n- list items\n- keep their lines"
    );
}

/// Ignored because `description` is given.
#[tool(
    description = "Explicit description.",
    name = "explicit-name",
    register = false
)]
fn renamed() {}

#[test]
fn name_and_description_keys_override() {
    let def = RenamedTool.definition();
    assert_eq!(def.name, "explicit-name");
    assert_eq!(def.description, "Explicit description.");
}

#[test]
fn schemas_are_generated_once_per_type_and_shared() {
    let first = <WebSearchTool as AlephTool>::input_schema();
    let second = <WebSearchTool as AlephTool>::input_schema();
    let from_thread = std::thread::spawn(<WebSearchTool as AlephTool>::input_schema)
        .join()
        .unwrap();
    assert!(std::sync::Arc::ptr_eq(&first, &second));
    assert!(
        std::sync::Arc::ptr_eq(&first, &from_thread),
        "cached per process, not per thread"
    );
}
