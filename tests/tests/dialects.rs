//! Provider dialects over a set of argument shapes: each dialect's output is pinned
//! (snapshots under `tests/snapshots/`) and checked against the provider's documented rules,
//! written below as checks with the rule they come from.

use std::collections::{BTreeMap, HashMap};

use aleph_tools::schema::{Dialect, DialectError, Refs, arguments_schema_for};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value, json};

// ---------------------------------------------------------------------------------------
// The shapes.

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct AllOptional {
    /// Free text to search for
    query: Option<String>,
    /// Page size
    limit: Option<u32>,
    /// Include archived items
    archived: Option<bool>,
}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct Range {
    /// Lower bound
    min: f64,
    /// Upper bound, open when absent
    max: Option<f64>,
}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct Nested {
    /// What to look for
    query: String,
    /// Price range
    price: Range,
    /// Optional rating range
    rating: Option<Range>,
}

/// A temperature unit.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[allow(dead_code)]
enum Unit {
    /// Degrees Celsius
    Celsius,
    /// Degrees Fahrenheit
    Fahrenheit,
}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct DocumentedEnum {
    /// City name
    city: String,
    /// Unit to report in
    unit: Unit,
    /// Unit for the feels-like value, the same as `unit` when absent
    feels_like_unit: Option<Unit>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[allow(dead_code)]
enum Priority {
    Low,
    Normal,
    High,
}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct PlainEnum {
    /// How urgent the task is
    priority: Priority,
}

#[derive(Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[allow(dead_code)]
enum Shape {
    /// A circle around the origin
    Circle {
        /// Radius in metres
        radius: f64,
    },
    /// An axis-aligned rectangle
    Rectangle { width: f64, height: f64 },
}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct TaggedEnum {
    /// The shape to draw
    shape: Shape,
}

#[derive(Deserialize, JsonSchema)]
#[serde(untagged)]
#[allow(dead_code)]
enum Target {
    Id(u64),
    Name(String),
}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct UntaggedEnum {
    /// A user, by numeric id or by name
    user: Target,
}

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[allow(dead_code)]
enum Action {
    Stop,
    Move { x: i32, y: i32 },
}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct ExternallyTagged {
    /// What the robot does next
    action: Action,
}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct Maps {
    /// Labels to attach, name to value
    labels: HashMap<String, String>,
    /// Counts by category
    counts: Option<BTreeMap<String, u32>>,
}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct Point {
    x: f64,
    y: f64,
}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct VecOfStruct {
    /// The polygon's corners, in order
    points: Vec<Point>,
}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct TreeNode {
    /// Node label
    name: String,
    /// Child nodes
    children: Vec<TreeNode>,
}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct Recursive {
    /// The tree to store
    root: TreeNode,
}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct Limits {
    /// A byte offset
    offset: u64,
    /// A small signed adjustment
    delta: i8,
    /// Percent, 0 to 255
    level: u8,
}

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
struct Renamed {
    /// Maximum results
    max_results: u32,
    /// Search query
    #[serde(rename = "q")]
    query: String,
}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct Paging {
    /// Page number, from 1
    page: u32,
    /// Items per page
    per_page: Option<u32>,
}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct Flattened {
    /// Search query
    query: String,
    #[serde(flatten)]
    paging: Paging,
}

fn ten() -> u32 {
    10
}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct Defaults {
    /// Search query
    query: String,
    /// Maximum results
    #[serde(default = "ten")]
    limit: u32,
    /// Whether to include drafts
    #[serde(default)]
    drafts: bool,
}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct SharedType {
    /// Start of the line
    from: Point,
    /// End of the line
    to: Point,
    /// Points the line must pass through
    via: Vec<Point>,
}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct Constraints {
    /// Display name
    #[schemars(length(min = 1, max = 40))]
    name: String,
    /// Tags, no repeats
    tags: std::collections::BTreeSet<String>,
    /// Score between 0 and 1
    #[schemars(range(min = 0.0, max = 1.0))]
    score: f64,
}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct NoArgs {}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct FreeForm {
    /// Any JSON payload
    payload: Value,
}

/// Every shape by name, with its canonical schema.
fn shapes() -> Vec<(&'static str, Value)> {
    fn s<T: JsonSchema + 'static>(name: &'static str) -> (&'static str, Value) {
        (name, Value::clone(&arguments_schema_for::<T>()))
    }
    vec![
        s::<AllOptional>("all_optional"),
        s::<Nested>("nested"),
        s::<DocumentedEnum>("documented_enum"),
        s::<PlainEnum>("plain_enum"),
        s::<TaggedEnum>("tagged_enum"),
        s::<UntaggedEnum>("untagged_enum"),
        s::<ExternallyTagged>("externally_tagged"),
        s::<Maps>("maps"),
        s::<VecOfStruct>("vec_of_struct"),
        s::<Recursive>("recursive"),
        s::<Limits>("limits"),
        s::<Renamed>("renamed"),
        s::<Flattened>("flattened"),
        s::<Defaults>("defaults"),
        s::<SharedType>("shared_type"),
        s::<Constraints>("constraints"),
        s::<NoArgs>("no_args"),
        s::<FreeForm>("free_form"),
    ]
}

fn dialects() -> Vec<Dialect> {
    vec![
        Dialect::OpenAi { strict: true },
        Dialect::OpenAi { strict: false },
        Dialect::Anthropic,
        Dialect::Gemini,
        Dialect::Mcp { refs: Refs::Inline },
        Dialect::Mcp { refs: Refs::Keep },
        Dialect::Mcp {
            refs: Refs::Smallest,
        },
    ]
}

fn dialect_label(dialect: Dialect) -> String {
    match dialect {
        Dialect::Mcp { refs } => format!("mcp-{refs:?}").to_lowercase(),
        other => other.name().to_owned(),
    }
}

// ---------------------------------------------------------------------------------------
// The pins.

#[test]
fn every_shape_in_every_dialect_is_pinned() {
    let mut all = Map::new();
    for (name, canonical) in shapes() {
        let mut per_dialect = Map::new();
        per_dialect.insert("canonical".to_owned(), canonical.clone());
        for dialect in dialects() {
            let out = match dialect.apply(&canonical) {
                Ok(schema) => schema,
                Err(err) => json!({ "error": err.to_string() }),
            };
            per_dialect.insert(dialect_label(dialect), out);
        }
        all.insert(name.to_owned(), Value::Object(per_dialect));
    }
    insta::assert_json_snapshot!("dialects", Value::Object(all));
}

// ---------------------------------------------------------------------------------------
// Provider rules, as checks.

/// Called with each subschema, its JSON pointer and its depth.
type Visit<'f> = dyn FnMut(&Map<String, Value>, &str, usize) + 'f;

/// Visits every subschema of `schema` (not into `enum`/`const`/`default` values), with its
/// JSON pointer and its depth in nested objects and arrays.
fn walk(schema: &Value, at: &str, depth: usize, f: &mut Visit<'_>) {
    let Value::Object(map) = schema else { return };
    f(map, at, depth);
    for (key, value) in map {
        match (key.as_str(), value) {
            ("properties" | "$defs", Value::Object(children)) => {
                let deeper = usize::from(key == "properties");
                for (name, child) in children {
                    walk(child, &format!("{at}/{key}/{name}"), depth + deeper, f);
                }
            }
            ("items" | "additionalProperties", Value::Object(_)) => {
                walk(value, &format!("{at}/{key}"), depth + 1, f);
            }
            ("anyOf" | "oneOf" | "allOf" | "prefixItems", Value::Array(items)) => {
                for (i, item) in items.iter().enumerate() {
                    walk(item, &format!("{at}/{key}/{i}"), depth, f);
                }
            }
            _ => {}
        }
    }
}

fn is_object(map: &Map<String, Value>) -> bool {
    map.get("type").is_some_and(|t| {
        t == "object" || t.as_array().is_some_and(|a| a.contains(&json!("object")))
    }) || map.contains_key("properties")
}

/// OpenAI Structured Outputs, "Supported schemas" (platform.openai.com/docs/guides/
/// structured-outputs): the root is an object and not `anyOf`; every object sets
/// `additionalProperties: false` and lists all its properties in `required`; optional
/// fields are emulated with a union with `null`; only the documented keywords (types,
/// `enum`, `anyOf`, `$ref`/`$defs`, string `pattern`/`format` from a fixed list, number
/// bounds and `multipleOf`, array `minItems`/`maxItems`) appear; at most 10 levels of
/// nesting and 5000 properties; `$ref` stands alone.
fn check_openai_strict(schema: &Value) -> Result<(), String> {
    const KEYWORDS: &[&str] = &[
        "type",
        "description",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "anyOf",
        "enum",
        "$ref",
        "$defs",
        "pattern",
        "format",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
        "minItems",
        "maxItems",
    ];
    const FORMATS: &[&str] = &[
        "date-time",
        "time",
        "date",
        "duration",
        "email",
        "hostname",
        "ipv4",
        "ipv6",
        "uuid",
    ];
    if schema["type"] != "object" || schema.get("anyOf").is_some() {
        return Err("root must be a plain object".into());
    }
    let mut problems = Vec::new();
    let mut properties = 0;
    walk(schema, "", 0, &mut |map, at, depth| {
        if depth > 10 {
            problems.push(format!("{at}: nested deeper than 10 levels"));
        }
        for key in map.keys() {
            if !KEYWORDS.contains(&key.as_str()) {
                problems.push(format!("{at}: unsupported keyword `{key}`"));
            }
        }
        if let Some(format) = map.get("format").and_then(Value::as_str)
            && !FORMATS.contains(&format)
        {
            problems.push(format!("{at}: unsupported format `{format}`"));
        }
        if map.contains_key("$ref") && map.len() > 1 {
            problems.push(format!("{at}: `$ref` with sibling keywords"));
        }
        if is_object(map) {
            if map.get("additionalProperties") != Some(&json!(false)) {
                problems.push(format!("{at}: object without additionalProperties: false"));
            }
            let props: Vec<&String> = map
                .get("properties")
                .and_then(Value::as_object)
                .map(|p| p.keys().collect())
                .unwrap_or_default();
            properties += props.len();
            let required: Vec<&str> = map
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            if props.len() != required.len()
                || props.iter().any(|p| !required.contains(&p.as_str()))
            {
                problems.push(format!("{at}: not every property is required"));
            }
        }
        if map
            .get("enum")
            .and_then(Value::as_array)
            .is_some_and(|e| e.len() > 1000)
        {
            problems.push(format!("{at}: more than 1000 enum values"));
        }
    });
    if properties > 5000 {
        problems.push("more than 5000 properties".into());
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("\n"))
    }
}

/// Gemini function declarations (ai.google.dev/api/caching#Schema): `parameters` is a
/// `Schema` object, a select subset of OpenAPI 3.0: its fields are `type` (an upper-case
/// `Type` enum: STRING, NUMBER, INTEGER, BOOLEAN, ARRAY, OBJECT), `format`, `description`,
/// `nullable`, `enum` (strings, for STRING), `items`, `properties`, `required`, `anyOf`,
/// `minimum`, `maximum`, `minItems`, `maxItems`, `minLength`, `maxLength`,
/// `minProperties`, `maxProperties`, `pattern`, `default`, `propertyOrdering`. No
/// `$ref`/`$defs`, no `additionalProperties`, no `const`, no type arrays.
fn check_gemini(schema: &Value) -> Result<(), String> {
    const FIELDS: &[&str] = &[
        "type",
        "format",
        "description",
        "nullable",
        "enum",
        "items",
        "properties",
        "required",
        "anyOf",
        "minimum",
        "maximum",
        "minItems",
        "maxItems",
        "minLength",
        "maxLength",
        "minProperties",
        "maxProperties",
        "pattern",
        "default",
        "propertyOrdering",
    ];
    const TYPES: &[&str] = &["STRING", "NUMBER", "INTEGER", "BOOLEAN", "ARRAY", "OBJECT"];
    let mut problems = Vec::new();
    walk(schema, "", 0, &mut |map, at, _| {
        for key in map.keys() {
            if !FIELDS.contains(&key.as_str()) {
                problems.push(format!("{at}: field `{key}` is not in Gemini's Schema"));
            }
        }
        match map.get("type") {
            Some(Value::String(t)) if TYPES.contains(&t.as_str()) => {}
            None if map.contains_key("anyOf") => {}
            other => problems.push(format!("{at}: type {other:?} is not a Gemini Type")),
        }
        if let Some(values) = map.get("enum") {
            if map.get("type") != Some(&json!("STRING")) {
                problems.push(format!("{at}: enum on a non-STRING type"));
            }
            if !values
                .as_array()
                .is_some_and(|v| v.iter().all(Value::is_string))
            {
                problems.push(format!("{at}: enum values must be strings"));
            }
        }
    });
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("\n"))
    }
}

/// Anthropic tool use (docs.anthropic.com, "Tool use", `input_schema`): a JSON Schema
/// object whose root has `type: "object"`; the API refuses `oneOf`, `anyOf` and `allOf` at
/// the top level.
fn check_anthropic(schema: &Value) -> Result<(), String> {
    if schema["type"] != "object" {
        return Err("root must have type object".into());
    }
    for keyword in ["oneOf", "anyOf", "allOf"] {
        if schema.get(keyword).is_some() {
            return Err(format!("`{keyword}` at the top level"));
        }
    }
    check_valid_json_schema(schema)
}

/// MCP `Tool.inputSchema` (modelcontextprotocol.io, schema reference): a JSON Schema
/// object with `type: "object"` at the root. Our MCP dialect also promises no
/// `type: [T, "null"]` on optional properties, and with `Refs::Inline` no `$ref` except
/// into recursive types.
fn check_mcp(schema: &Value, refs: Refs) -> Result<(), String> {
    if schema["type"] != "object" {
        return Err("root must have type object".into());
    }
    let mut problems = Vec::new();
    walk(schema, "", 0, &mut |map, at, _| {
        if let Some(Value::Object(props)) = map.get("properties") {
            let required: Vec<&str> = map
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            for (name, prop) in props {
                if !required.contains(&name.as_str())
                    && prop
                        .get("type")
                        .and_then(Value::as_array)
                        .is_some_and(|t| t.contains(&json!("null")))
                {
                    problems.push(format!(
                        "{at}/properties/{name}: optional property with a null type"
                    ));
                }
            }
        }
        if refs == Refs::Inline
            && let Some(reference) = map.get("$ref").and_then(Value::as_str)
            && !reference.contains("TreeNode")
        {
            problems.push(format!("{at}: `$ref` left in an inlined schema"));
        }
    });
    if !problems.is_empty() {
        return Err(problems.join("\n"));
    }
    check_valid_json_schema(schema)
}

fn check_valid_json_schema(schema: &Value) -> Result<(), String> {
    jsonschema::draft202012::meta::validate(schema)
        .map_err(|e| format!("not valid JSON Schema: {e}"))
}

/// Which shapes a dialect cannot take, and why: the only errors allowed below.
fn expected_error(shape: &str, dialect: Dialect) -> Option<&'static str> {
    match (shape, dialect) {
        ("maps" | "free_form", Dialect::OpenAi { strict: true }) => Some("OpenAI strict mode"),
        ("recursive", Dialect::Gemini) => Some("recursive type"),
        _ => None,
    }
}

#[test]
fn every_dialect_follows_its_provider_rules() {
    let mut failures = Vec::new();
    for (name, canonical) in shapes() {
        for dialect in dialects() {
            let out = dialect.apply(&canonical);
            let checked = match (out, expected_error(name, dialect)) {
                (Ok(schema), None) => match dialect {
                    Dialect::OpenAi { strict: true } => check_openai_strict(&schema),
                    Dialect::OpenAi { strict: false } => check_valid_json_schema(&schema),
                    Dialect::Anthropic => check_anthropic(&schema),
                    Dialect::Gemini => check_gemini(&schema),
                    Dialect::Mcp { refs } => check_mcp(&schema, refs),
                    _ => Ok(()),
                },
                (Err(err), Some(expected)) if err.to_string().contains(expected) => Ok(()),
                (Err(err), _) => Err(format!("unexpected error: {err}")),
                (Ok(_), Some(expected)) => Err(format!("expected an error about {expected}")),
            };
            if let Err(problem) = checked {
                failures.push(format!("{name} in {}: {problem}", dialect_label(dialect)));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// What a model sends under each dialect is what the canonical schema (and so the server)
/// accepts, once nulls for absent optional arguments are read as absent.
#[test]
fn arguments_valid_in_a_dialect_are_valid_canonically() {
    let samples: Vec<(&str, Value)> = vec![
        (
            "all_optional",
            json!({ "query": null, "limit": 5, "archived": null }),
        ),
        (
            "nested",
            json!({ "query": "q", "price": { "min": 1.0, "max": null }, "rating": null }),
        ),
        (
            "documented_enum",
            json!({ "city": "Lisbon", "unit": "celsius", "feels_like_unit": null }),
        ),
        (
            "tagged_enum",
            json!({ "shape": { "kind": "circle", "radius": 2.0 } }),
        ),
        ("untagged_enum", json!({ "user": 42 })),
        (
            "externally_tagged",
            json!({ "action": { "move": { "x": 1, "y": 2 } } }),
        ),
        (
            "limits",
            json!({ "offset": 18_446_744_073_709_551_615_u64, "delta": -128, "level": 255 }),
        ),
        ("renamed", json!({ "maxResults": 3, "q": "rust" })),
        (
            "flattened",
            json!({ "query": "q", "page": 2, "per_page": null }),
        ),
        (
            "defaults",
            json!({ "query": "q", "limit": null, "drafts": null }),
        ),
        (
            "recursive",
            json!({ "root": { "name": "a", "children": [{ "name": "b", "children": [] }] } }),
        ),
    ];
    let shapes: HashMap<_, _> = shapes().into_iter().collect();
    for (name, sample) in samples {
        let strict = Dialect::OpenAi { strict: true }
            .apply(&shapes[name])
            .unwrap();
        let validator = jsonschema::validator_for(&strict).unwrap();
        assert!(
            validator.is_valid(&sample),
            "{name}: strict schema refuses {sample}"
        );
    }
}

#[test]
fn gemini_refuses_recursion_by_name() {
    let err = Dialect::Gemini
        .apply(&arguments_schema_for::<Recursive>())
        .unwrap_err();
    assert!(matches!(&err, DialectError::Recursive { type_name, .. } if type_name == "TreeNode"));
    assert!(err.to_string().contains("TreeNode"), "{err}");
}

#[test]
fn strict_mode_names_the_open_part() {
    let err = Dialect::OpenAi { strict: true }
        .apply(&arguments_schema_for::<Maps>())
        .unwrap_err();
    let DialectError::NotStrict { pointer, .. } = &err else {
        panic!("{err:?}");
    };
    assert_eq!(pointer, "/properties/labels");
}

#[test]
fn bad_schemas_are_errors_not_panics() {
    let cases = [
        json!({ "type": "string" }),
        json!(true),
        json!({ "type": "object", "properties": { "a": { "$ref": "#/$defs/Missing" } } }),
        json!({ "type": "object", "properties": { "a": { "$ref": "https://example.com/x" } } }),
    ];
    for dialect in dialects() {
        for case in &cases {
            assert!(
                dialect.apply(case).is_err(),
                "{} took {case}",
                dialect_label(dialect)
            );
        }
    }
    // Odd but legal shapes pass through without panicking.
    let odd = json!({
        "type": "object",
        "properties": {
            "a": { "type": ["string", "number", "null"] },
            "b": { "allOf": [{ "type": "object", "properties": { "x": { "type": "string" } } }] },
            "c": { "prefixItems": [{ "type": "string" }, { "type": "integer" }], "type": "array" },
            "d": { "enum": [1, 2, null] },
            "e": false,
        }
    });
    for dialect in dialects() {
        let _ = dialect.apply(&odd);
    }
    assert_eq!(Dialect::Canonical.apply(&odd).unwrap(), odd);
}

#[test]
fn smallest_refs_pick_the_smaller_form() {
    let canonical = arguments_schema_for::<SharedType>();
    let size = |refs| {
        serde_json::to_vec(&Dialect::Mcp { refs }.apply(&canonical).unwrap())
            .unwrap()
            .len()
    };
    let smallest = size(Refs::Smallest);
    assert_eq!(smallest, size(Refs::Inline).min(size(Refs::Keep)));
}

/// Types that each refer to the next twice double the inlined schema with every level: the
/// rewrite stops at a bound, shares the types where the dialect can, and refuses for Gemini.
#[test]
fn a_schema_that_would_explode_when_inlined_stays_shared() {
    let mut defs = Map::new();
    for level in 0..40 {
        let next = json!({ "$ref": format!("#/$defs/L{}", level + 1) });
        defs.insert(
            format!("L{level}"),
            json!({ "type": "object", "properties": { "left": next, "right": next }, "required": ["left", "right"] }),
        );
    }
    defs.insert("L40".to_owned(), json!({ "type": "string" }));
    let schema = json!({
        "type": "object",
        "properties": { "tree": { "$ref": "#/$defs/L0" } },
        "required": ["tree"],
        "$defs": defs,
    });
    for dialect in dialects() {
        match dialect.apply(&schema) {
            Ok(out) => {
                assert!(
                    out.get("$defs").is_some(),
                    "{}: types shared",
                    dialect_label(dialect)
                );
                assert!(serde_json::to_vec(&out).unwrap().len() < 100_000);
            }
            Err(err) => {
                assert_eq!(dialect, Dialect::Gemini, "{err}");
                assert!(matches!(err, DialectError::TooLarge { .. }), "{err}");
            }
        }
    }
}

#[test]
fn a_union_at_the_root_is_refused_where_providers_refuse_it() {
    #[derive(Deserialize, JsonSchema)]
    #[serde(tag = "mode", rename_all = "lowercase")]
    #[allow(dead_code)]
    enum Mode {
        Fast,
        Careful { checks: u32 },
    }
    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct FlattenedEnum {
        query: String,
        #[serde(flatten)]
        mode: Mode,
    }
    let canonical = arguments_schema_for::<FlattenedEnum>();
    for dialect in [Dialect::OpenAi { strict: true }, Dialect::Anthropic] {
        let err = dialect.apply(&canonical).unwrap_err();
        assert!(matches!(err, DialectError::RootUnion { .. }), "{err}");
        assert!(err.to_string().contains("named argument"), "{err}");
    }
}
