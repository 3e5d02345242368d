//! Rewrites of one schema node, as the dialect pass applies them: merging `allOf`, folding
//! constants, closing objects, nullable types, the keyword lists each provider keeps.

use serde_json::{Map, Value, json};

use super::DialectError;
use super::rewrite::NUMBER_FORMATS;

pub(super) fn not_strict(at: &str, reason: &'static str) -> DialectError {
    DialectError::NotStrict {
        pointer: if at.is_empty() {
            "/".to_owned()
        } else {
            at.to_owned()
        },
        reason,
    }
}

pub(super) fn required_names(map: &Map<String, Value>) -> Vec<&str> {
    map.get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

fn is_null_type(schema: &Value) -> bool {
    schema.get("type").and_then(Value::as_str) == Some("null")
}

/// A schema that accepts `null` only because its property is optional, without the `null`.
pub(super) fn without_null(schema: &Value) -> Value {
    let Value::Object(map) = schema else {
        return schema.clone();
    };
    let mut map = map.clone();
    if let Some(Value::Array(types)) = map.get_mut("type") {
        types.retain(|t| t != "null");
        if types.len() == 1 {
            let only = types.remove(0);
            map.insert("type".to_owned(), only);
        }
    }
    if let Some(Value::Array(values)) = map.get_mut("enum") {
        values.retain(|v| !v.is_null());
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(branches)) = map.get_mut(key) {
            branches.retain(|b| !is_null_type(b));
        }
    }
    unwrap_single_branch(&mut map, false);
    Value::Object(map)
}

/// `anyOf: [X]` → X, the outer keywords (a field's description) winning. Under strict
/// mode a lone `$ref` stays wrapped, since OpenAI refuses keywords beside `$ref`.
pub(super) fn unwrap_single_branch(map: &mut Map<String, Value>, keep_refs: bool) {
    for key in ["anyOf", "oneOf"] {
        let single = matches!(map.get(key), Some(Value::Array(branches)) if branches.len() == 1);
        if !single {
            continue;
        }
        let Some(Value::Array(mut branches)) = map.remove(key) else {
            continue;
        };
        let Value::Object(branch) = branches.remove(0) else {
            continue;
        };
        if keep_refs && branch.contains_key("$ref") && !map.is_empty() {
            map.insert(key.to_owned(), Value::Array(vec![Value::Object(branch)]));
            continue;
        }
        for (k, v) in branch {
            map.entry(k).or_insert(v);
        }
    }
}

/// `allOf` of plain object schemas → their properties and `required` merged in.
pub(super) fn merge_all_of(map: &mut Map<String, Value>) {
    let Some(Value::Array(parts)) = map.get("allOf") else {
        return;
    };
    if !parts
        .iter()
        .all(|p| p.is_object() && p.get("$ref").is_none())
    {
        return;
    }
    let Some(Value::Array(parts)) = map.remove("allOf") else {
        return;
    };
    for part in parts {
        let Value::Object(part) = part else { continue };
        for (key, value) in part {
            match (key.as_str(), map.get_mut(&key), value) {
                ("properties", Some(Value::Object(into)), Value::Object(from)) => {
                    into.extend(from);
                }
                ("required", Some(Value::Array(into)), Value::Array(from)) => {
                    for name in from {
                        if !into.contains(&name) {
                            into.push(name);
                        }
                    }
                }
                (_, Some(_), _) => {}
                (_, None, value) => {
                    map.insert(key, value);
                }
            }
        }
    }
}

/// Documented enum variants (`oneOf` of `const`s, each with its doc) → one `enum`, the
/// docs kept as a list in the description.
pub(super) fn fold_constants(map: &mut Map<String, Value>) {
    let key = if map.contains_key("oneOf") {
        "oneOf"
    } else {
        "anyOf"
    };
    let Some(Value::Array(branches)) = map.get(key) else {
        return;
    };
    let mut values = Vec::with_capacity(branches.len());
    let mut docs = Vec::new();
    let mut kind: Option<&Value> = None;
    let mut nullable = false;
    for branch in branches {
        let Value::Object(b) = branch else { return };
        if is_null_type(branch) && b.len() == 1 {
            nullable = true;
            continue;
        }
        if b.keys()
            .any(|k| !matches!(k.as_str(), "const" | "enum" | "type" | "description"))
        {
            return;
        }
        let value = match (b.get("const"), b.get("enum")) {
            (Some(value), None) => value,
            (None, Some(Value::Array(one))) if one.len() == 1 => &one[0],
            _ => return,
        };
        match (kind, b.get("type")) {
            (_, None) => {}
            (None, Some(t)) => kind = Some(t),
            (Some(k), Some(t)) if k == t => {}
            _ => return,
        }
        if let Some(doc) = b.get("description").and_then(Value::as_str) {
            let shown = value
                .as_str()
                .map_or_else(|| value.to_string(), str::to_owned);
            docs.push(format!("- {shown}: {doc}"));
        }
        values.push(value.clone());
    }
    if values.is_empty() {
        return;
    }
    let kind = kind.cloned();
    map.remove(key);
    if nullable {
        values.push(Value::Null);
    }
    match (kind, nullable) {
        (Some(Value::String(t)), true) => {
            map.insert("type".to_owned(), json!([t, "null"]));
        }
        (Some(t), _) => {
            map.insert("type".to_owned(), t);
        }
        (None, _) => {}
    }
    map.insert("enum".to_owned(), Value::Array(values));
    if !docs.is_empty() {
        append_description(map, &docs.join("\n"));
    }
}

/// Strict mode: an object lists every property as required (optional ones accept `null`)
/// and refuses other keys.
pub(super) fn close_object(map: &mut Map<String, Value>, at: &str) -> Result<(), DialectError> {
    let is_object =
        map.get("type").and_then(Value::as_str) == Some("object") || map.contains_key("properties");
    if !is_object {
        return Ok(());
    }
    match map.get("additionalProperties") {
        None | Some(Value::Bool(false)) => {}
        Some(Value::Object(_)) => {
            return Err(not_strict(at, "accepts any keys (a map)"));
        }
        Some(_) => return Err(not_strict(at, "accepts any keys")),
    }
    if map.contains_key("patternProperties") {
        return Err(not_strict(at, "accepts keys by pattern"));
    }
    let was_required: Vec<String> = required_names(map).into_iter().map(str::to_owned).collect();
    let Some(Value::Object(properties)) = map.get_mut("properties") else {
        return Err(not_strict(at, "is an object without listed properties"));
    };
    // The arguments that were required first, in their order; then the optional ones.
    let mut all: Vec<Value> = was_required
        .iter()
        .filter(|name| properties.contains_key(*name))
        .map(|name| Value::String(name.clone()))
        .collect();
    for (name, schema) in properties.iter_mut() {
        if !was_required.contains(name) {
            make_nullable(schema);
            all.push(Value::String(name.clone()));
        }
    }
    map.insert("required".to_owned(), Value::Array(all));
    map.insert("additionalProperties".to_owned(), Value::Bool(false));
    Ok(())
}

/// Lets a (rewritten) schema accept `null` as well.
fn make_nullable(schema: &mut Value) {
    let Value::Object(map) = schema else { return };
    if let Some(Value::Array(branches)) = map.get_mut("anyOf") {
        if !branches.iter().any(is_null_type) {
            branches.push(json!({ "type": "null" }));
        }
        return;
    }
    let added = match map.get_mut("type") {
        Some(Value::String(t)) if t == "null" => false,
        Some(Value::String(t)) => {
            let t = std::mem::take(t);
            map.insert("type".to_owned(), json!([t, "null"]));
            true
        }
        Some(Value::Array(types)) => {
            if !types.iter().any(|t| t == "null") {
                types.push(json!("null"));
            }
            true
        }
        _ => false,
    };
    if added {
        if let Some(Value::Array(values)) = map.get_mut("enum")
            && !values.contains(&Value::Null)
        {
            values.push(Value::Null);
        }
        return;
    }
    // A `$ref` or a bare `enum`: wrap it, keeping the description outside.
    let description = map.remove("description");
    let inner = std::mem::take(map);
    map.insert(
        "anyOf".to_owned(),
        json!([Value::Object(inner), { "type": "null" }]),
    );
    if let Some(description) = description {
        map.insert("description".to_owned(), description);
    }
}

/// Gemini's OpenAPI subset: `nullable`, upper-case types, no `additionalProperties`,
/// string enums only.
pub(super) fn gemini(map: &mut Map<String, Value>) {
    if let Some(Value::Array(types)) = map.get("type").cloned() {
        let mut rest: Vec<Value> = types.into_iter().filter(|t| t != "null").collect();
        let had_null = map.get("type").and_then(Value::as_array).map(Vec::len) != Some(rest.len());
        if had_null {
            map.insert("nullable".to_owned(), Value::Bool(true));
        }
        if rest.len() == 1 {
            map.insert("type".to_owned(), rest.remove(0));
        } else {
            map.remove("type");
            let branches = rest.into_iter().map(|t| json!({ "type": t })).collect();
            map.insert("anyOf".to_owned(), Value::Array(branches));
        }
    }
    if let Some(Value::Array(branches)) = map.get_mut("anyOf") {
        let before = branches.len();
        branches.retain(|b| !is_null_type(b));
        if branches.len() != before {
            map.insert("nullable".to_owned(), Value::Bool(true));
        }
    }
    if let Some(Value::Array(values)) = map.get_mut("enum") {
        let had_null = values.contains(&Value::Null);
        values.retain(|v| !v.is_null());
        let all_strings = values.iter().all(Value::is_string);
        if had_null {
            map.insert("nullable".to_owned(), Value::Bool(true));
        }
        if all_strings {
            map.insert("type".to_owned(), json!("string"));
        } else if let Some(values) = map.remove("enum") {
            append_description(map, &format!("One of: {}.", list(&values)));
        }
    }
    if let Some(values) = map.remove("additionalProperties")
        && let Some(kind) = values.get("type").and_then(Value::as_str)
    {
        append_description(
            map,
            &format!("An object with any keys; each value is of type {kind}."),
        );
    }
    if !map.contains_key("type") && !map.contains_key("anyOf") {
        // A value of any shape: Gemini needs a type, and free-form arguments are objects
        // far more often than anything else.
        map.insert("type".to_owned(), json!("object"));
    }
    if let Some(Value::String(t)) = map.get_mut("type") {
        *t = t.to_ascii_uppercase();
    }
    if map.get("type").and_then(Value::as_str) == Some("ARRAY")
        && !map.contains_key("items")
        && let Some(Value::Array(parts)) = map.remove("prefixItems")
    {
        map.insert("items".to_owned(), json!({ "anyOf": parts }));
    }
}

/// Drops what `keep` does not list; facts a model can use (a default, a length limit, an
/// unsupported format) are added to the description instead.
pub(super) fn keep_only(map: &mut Map<String, Value>, keep: &[&str], formats: &[&str]) {
    let mut notes = Vec::new();
    map.retain(|key, value| {
        if key == "format" {
            let format = value.as_str().unwrap_or_default();
            if formats.contains(&format) {
                return true;
            }
            if !NUMBER_FORMATS.contains(&format) {
                notes.push(format!("format: {format}"));
            }
            return false;
        }
        if keep.contains(&key.as_str()) {
            return true;
        }
        if matches!(
            key.as_str(),
            "default"
                | "minimum"
                | "maximum"
                | "exclusiveMinimum"
                | "exclusiveMaximum"
                | "multipleOf"
                | "minLength"
                | "maxLength"
                | "pattern"
                | "minItems"
                | "maxItems"
                | "uniqueItems"
                | "minProperties"
                | "maxProperties"
                | "examples"
                | "deprecated"
                | "enum"
        ) {
            notes.push(format!("{key}: {value}"));
        }
        false
    });
    if !notes.is_empty() {
        append_description(map, &format!("({})", notes.join("; ")));
    }
}

fn list(values: &Value) -> String {
    values
        .as_array()
        .map(|v| {
            v.iter()
                .map(Value::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_default()
}

fn append_description(map: &mut Map<String, Value>, text: &str) {
    match map.get_mut("description") {
        Some(Value::String(existing)) if !existing.is_empty() => {
            let sep = if text.starts_with('-') {
                "\n"
            } else if text.starts_with('(') || existing.ends_with(['.', '!', '?', ':']) {
                " "
            } else {
                ". "
            };
            existing.push_str(sep);
            existing.push_str(text);
        }
        _ => {
            map.insert("description".to_owned(), Value::String(text.to_owned()));
        }
    }
}
