//! Whether deserializing a tool's arguments with serde already enforces everything its input
//! schema asserts. When it does, a call whose arguments deserialize needs no schema check:
//! the validator runs only for calls serde refuses, to say what is wrong in full.
//!
//! Serde enforces what `schemars` derives from the types themselves: types, required fields,
//! unknown fields under `deny_unknown_fields`, enum variants and tags, tuple lengths and the
//! ranges of integer types. It does not enforce what attributes add on top (`range`,
//! `length`, `regex`, `uniqueItems` for sets, which serde merges silently), so a schema with
//! any of those keywords is always checked.

use serde_json::{Map, Value};

/// Keywords that assert something serde does not check.
const UNENFORCED: &[&str] = &[
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minLength",
    "maxLength",
    "pattern",
    "uniqueItems",
    "contains",
    "minContains",
    "maxContains",
    "minProperties",
    "maxProperties",
    "patternProperties",
    "dependentRequired",
    "dependentSchemas",
    "not",
    "if",
    "then",
    "else",
    "unevaluatedItems",
    "unevaluatedProperties",
    "$dynamicRef",
];

/// Keywords whose value is one subschema.
const SUBSCHEMA: &[&str] = &["items", "additionalProperties", "propertyNames"];

/// Keywords whose value is a list of subschemas.
const SUBSCHEMA_LIST: &[&str] = &["allOf", "anyOf", "oneOf", "prefixItems"];

/// Keywords whose value maps names to subschemas.
const SUBSCHEMA_MAP: &[&str] = &["properties", "$defs", "definitions"];

/// Whether every assertion in `schema` is one serde makes when it deserializes the type the
/// schema was derived from.
pub(crate) fn serde_enforces(schema: &Value) -> bool {
    match schema {
        Value::Bool(_) => true,
        Value::Object(object) => object_enforced(object),
        _ => false,
    }
}

fn object_enforced(schema: &Map<String, Value>) -> bool {
    if UNENFORCED.iter().any(|k| schema.contains_key(*k)) {
        return false;
    }
    if !range_enforced(schema) || !length_enforced(schema) {
        return false;
    }
    let one = SUBSCHEMA
        .iter()
        .filter_map(|k| schema.get(*k))
        .all(serde_enforces);
    let lists = SUBSCHEMA_LIST
        .iter()
        .filter_map(|k| schema.get(*k))
        .all(|list| {
            list.as_array()
                .is_some_and(|l| l.iter().all(serde_enforces))
        });
    let maps = SUBSCHEMA_MAP
        .iter()
        .filter_map(|k| schema.get(*k))
        .all(|map| {
            map.as_object()
                .is_some_and(|m| m.values().all(serde_enforces))
        });
    one && lists && maps
}

/// `minimum` and `maximum` are what `schemars` writes for an integer type's own range
/// (`uint8`: 0 to 255; `uint32`: at least 0), which serde enforces; any other limit is the
/// program's own.
fn range_enforced(schema: &Map<String, Value>) -> bool {
    let minimum = schema.get("minimum");
    let maximum = schema.get("maximum");
    if minimum.is_none() && maximum.is_none() {
        return true;
    }
    let Some((low, high)) = schema
        .get("format")
        .and_then(Value::as_str)
        .and_then(integer_range)
    else {
        return false;
    };
    let fits = |limit: Option<&Value>, bound: i128| {
        limit.is_none_or(|limit| limit.as_i64().map(i128::from) == Some(bound))
            || limit.and_then(Value::as_u64).map(i128::from) == Some(bound)
    };
    fits(minimum, low) && fits(maximum, high)
}

/// The range of the integer type `format` names, as `schemars` writes formats.
fn integer_range(format: &str) -> Option<(i128, i128)> {
    let range = match format {
        "int8" => (i8::MIN.into(), i8::MAX.into()),
        "int16" => (i16::MIN.into(), i16::MAX.into()),
        "int32" => (i32::MIN.into(), i32::MAX.into()),
        "int64" | "int" => (i64::MIN.into(), i64::MAX.into()),
        "uint8" => (0, u8::MAX.into()),
        "uint16" => (0, u16::MAX.into()),
        "uint32" => (0, u32::MAX.into()),
        "uint64" | "uint" | "uint128" => (0, u64::MAX.into()),
        _ => return None,
    };
    Some(range)
}

/// `minItems` and `maxItems` are a tuple's length (`prefixItems` of that many, both limits
/// equal), which serde enforces; any other length is the program's own.
fn length_enforced(schema: &Map<String, Value>) -> bool {
    let min = schema.get("minItems");
    let max = schema.get("maxItems");
    if min.is_none() && max.is_none() {
        return true;
    }
    let tuple = schema
        .get("prefixItems")
        .and_then(Value::as_array)
        .map(|items| items.len() as u64);
    tuple.is_some() && min.and_then(Value::as_u64) == tuple && max.and_then(Value::as_u64) == tuple
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use schemars::JsonSchema;
    use serde::Deserialize;
    use serde_json::json;

    use super::serde_enforces;
    use crate::schema::arguments_schema_for;

    #[allow(dead_code)]
    #[derive(Deserialize, JsonSchema)]
    enum Unit {
        /// The first
        First,
        Second,
    }

    #[allow(dead_code)]
    #[derive(Deserialize, JsonSchema)]
    #[serde(tag = "kind", rename_all = "snake_case")]
    enum Shape {
        Circle { radius: f64 },
        Square { side: f64 },
    }

    #[allow(dead_code)]
    #[derive(Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    struct Inner {
        depth: u16,
        label: Option<String>,
    }

    /// Everything serde enforces by itself.
    #[allow(dead_code)]
    #[derive(Deserialize, JsonSchema)]
    struct Plain {
        a: u8,
        b: i8,
        c: u32,
        d: i64,
        e: usize,
        f: f64,
        g: Option<u64>,
        unit: Unit,
        shape: Shape,
        inner: Inner,
        nested: Vec<Inner>,
        map: BTreeMap<String, u8>,
        pair: (i32, String),
        recursive: Option<Box<Plain>>,
    }

    #[allow(dead_code)]
    #[derive(Deserialize, JsonSchema)]
    struct Ranged {
        #[schemars(range(min = 1, max = 10))]
        count: u32,
    }

    #[allow(dead_code)]
    #[derive(Deserialize, JsonSchema)]
    struct Patterned {
        #[schemars(regex(pattern = r"^\d+$"))]
        digits: String,
    }

    #[allow(dead_code)]
    #[derive(Deserialize, JsonSchema)]
    struct Lengths {
        #[schemars(length(min = 1))]
        names: Vec<String>,
    }

    #[allow(dead_code)]
    #[derive(Deserialize, JsonSchema)]
    struct Sets {
        tags: BTreeSet<String>,
    }

    #[allow(dead_code)]
    #[derive(Deserialize, JsonSchema)]
    struct Nested {
        inner: Ranged,
    }

    #[test]
    fn what_types_derive_is_enforced() {
        assert!(serde_enforces(&arguments_schema_for::<Plain>()));
    }

    #[test]
    fn limits_added_by_attributes_are_not() {
        assert!(!serde_enforces(&arguments_schema_for::<Ranged>()));
        assert!(!serde_enforces(&arguments_schema_for::<Patterned>()));
        assert!(!serde_enforces(&arguments_schema_for::<Lengths>()));
        assert!(!serde_enforces(&arguments_schema_for::<Sets>()));
        // Found under `$defs` as well as in place.
        assert!(!serde_enforces(&arguments_schema_for::<Nested>()));
    }

    #[test]
    fn property_names_are_not_keywords() {
        let schema = json!({
            "type": "object",
            "properties": { "pattern": { "type": "string" }, "not": { "type": "boolean" } },
        });
        assert!(serde_enforces(&schema));
    }

    #[test]
    fn hand_written_limits_are_not() {
        let within = json!({ "type": "integer", "format": "uint8", "minimum": 0, "maximum": 100 });
        assert!(!serde_enforces(&within));
        let untyped = json!({ "type": "integer", "minimum": 0 });
        assert!(!serde_enforces(&untyped));
        let array = json!({ "type": "array", "items": {}, "minItems": 3, "maxItems": 3 });
        assert!(!serde_enforces(&array));
        assert!(!serde_enforces(&json!({ "anyOf": "not a list" })));
    }
}
