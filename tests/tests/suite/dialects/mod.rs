//! Provider dialects over a set of argument shapes: each dialect's output is pinned
//! (the snapshot under `snapshots/`) and checked against the provider's documented rules,
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

mod rules;

use rules::{
    check_anthropic, check_gemini, check_mcp, check_openai_strict, check_valid_json_schema,
    expected_error,
};

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

/// A declared `$schema` names the schema's dialect in MCP (2020-12 when absent), so the MCP
/// dialect keeps it, with `$defs` too when asked to keep refs; the model APIs get neither.
#[test]
fn mcp_keeps_a_declared_dialect() {
    let schema = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": { "point": { "type": "object", "properties": { "x": { "type": "number" } } } },
        "properties": { "at": { "$ref": "#/$defs/point" } },
        "additionalProperties": false
    });
    let kept = Dialect::Mcp { refs: Refs::Keep }.apply(&schema).unwrap();
    assert_eq!(kept, schema);
    let inlined = Dialect::MCP.apply(&schema).unwrap();
    assert_eq!(inlined["$schema"], schema["$schema"]);
    assert_eq!(inlined["properties"]["at"], schema["$defs"]["point"]);
    assert!(inlined.get("$defs").is_none(), "{inlined}");
    for dialect in [
        Dialect::Anthropic,
        Dialect::OpenAi { strict: false },
        Dialect::Gemini,
    ] {
        let out = dialect.apply(&schema).unwrap();
        assert!(out.get("$schema").is_none(), "{dialect}: {out}");
    }
}

/// Found by fuzzing: a `$ref` inside a value keyword (`default`, `const`, `enum`,
/// `examples`) is data, not a schema, so inlining leaves it alone; before, a type whose
/// `default` referred to itself was inlined into itself until the stack overflowed.
#[test]
fn references_inside_values_are_data() {
    let schema = json!({
        "type": "object",
        "properties": { "a": { "$ref": "#/$defs/a" } },
        "$defs": { "a": {
            "type": "object",
            "default": { "$ref": "#/$defs/a" },
            "examples": [{ "$ref": "#/$defs/a" }]
        } }
    });
    for dialect in [Dialect::Anthropic, Dialect::Gemini, Dialect::MCP] {
        let out = dialect.apply(&schema).unwrap();
        assert_eq!(
            out["properties"]["a"]["default"],
            json!({ "$ref": "#/$defs/a" }),
            "{dialect}"
        );
    }
}

/// A chain of types each nesting the next is written out only up to a depth that any
/// reader's stack takes; deeper, the types stay shared (or, for Gemini, it is an error).
#[test]
fn deep_inlining_is_bounded() {
    let mut defs = Map::new();
    for i in 0..400 {
        let next = json!({ "$ref": format!("#/$defs/d{}", i + 1) });
        defs.insert(
            format!("d{i}"),
            json!({ "type": "array", "items": { "type": "array", "items": next } }),
        );
    }
    defs.insert("d400".to_owned(), json!({ "type": "string" }));
    let schema = json!({
        "type": "object",
        "properties": { "x": { "$ref": "#/$defs/d0" } },
        "$defs": defs
    });
    let shared = std::thread::Builder::new()
        .stack_size(1 << 20)
        .spawn(move || {
            let mcp = Dialect::MCP
                .apply(&schema)
                .map(|out| out.get("$defs").is_some());
            let gemini = Dialect::Gemini.apply(&schema).map(drop);
            (mcp, gemini)
        })
        .unwrap()
        .join()
        .expect("no stack overflow");
    assert_eq!(shared.0, Ok(true));
    assert!(
        matches!(shared.1, Err(DialectError::TooDeep { .. })),
        "{:?}",
        shared.1
    );
}
