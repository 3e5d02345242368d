//! Each provider's documented schema rules, written as checks with the rule they come from.

use super::*;

/// Called with each subschema, its JSON pointer and its depth.
type Visit<'f> = dyn FnMut(&Map<String, Value>, &str, usize) + 'f;

/// Visits every subschema of `schema` (not into `enum`/`const`/`default` values), with its
/// JSON pointer and its depth in nested objects and arrays.
pub(super) fn walk(schema: &Value, at: &str, depth: usize, f: &mut Visit<'_>) {
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

pub(super) fn is_object(map: &Map<String, Value>) -> bool {
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
pub(super) fn check_openai_strict(schema: &Value) -> Result<(), String> {
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
pub(super) fn check_gemini(schema: &Value) -> Result<(), String> {
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
pub(super) fn check_anthropic(schema: &Value) -> Result<(), String> {
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
pub(super) fn check_mcp(schema: &Value, refs: Refs) -> Result<(), String> {
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

pub(super) fn check_valid_json_schema(schema: &Value) -> Result<(), String> {
    jsonschema::draft202012::meta::validate(schema)
        .map_err(|e| format!("not valid JSON Schema: {e}"))
}

/// Which shapes a dialect cannot take, and why: the only errors allowed below.
pub(super) fn expected_error(shape: &str, dialect: Dialect) -> Option<&'static str> {
    match (shape, dialect) {
        ("maps" | "free_form", Dialect::OpenAi { strict: true }) => Some("OpenAI strict mode"),
        ("recursive", Dialect::Gemini) => Some("recursive type"),
        _ => None,
    }
}
