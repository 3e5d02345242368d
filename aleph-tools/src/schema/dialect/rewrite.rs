//! The rewrite itself: one bottom-up pass over a schema under a dialect's rules.

use std::fmt::Write as _;

use serde_json::{Map, Value, json};

use super::{Dialect, DialectError};

/// Keywords that only label a schema; no dialect sends them.
const NOISE: &[&str] = &["$schema", "$id", "$comment", "title"];

/// OpenAI strict mode: the keywords Structured Outputs documents as supported.
const OPENAI_STRICT: &[&str] = &[
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
/// The string formats OpenAI strict mode supports.
const OPENAI_FORMATS: &[&str] = &[
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

/// Gemini: the fields of its `Schema` object.
const GEMINI: &[&str] = &[
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
/// The formats Gemini's `Schema` documents.
const GEMINI_FORMATS: &[&str] = &["int32", "int64", "float", "double", "date-time", "enum"];

/// schemars' number formats: redundant with `type` and the bounds, so dropped rather than
/// described where a dialect does not take them.
const NUMBER_FORMATS: &[&str] = &[
    "int8", "int16", "int32", "int64", "int128", "uint", "uint8", "uint16", "uint32", "uint64",
    "uint128", "int", "float", "double",
];

/// What a dialect does, as switches.
#[allow(
    clippy::struct_excessive_bools,
    reason = "one switch per documented rule"
)]
pub(super) struct Rules {
    dialect: Dialect,
    /// OpenAI strict: closed objects, every property required, optional ones nullable.
    strict: bool,
    /// Gemini's OpenAPI subset.
    gemini: bool,
    /// `oneOf`/`anyOf` of constants (documented enum variants) → one `enum`.
    fold_constants: bool,
    /// Optional properties lose their `null` branch (absence says it already).
    drop_optional_null: bool,
    /// `oneOf` → `anyOf`.
    one_of_as_any_of: bool,
    /// The keywords kept; others move into the description. `None` keeps all.
    keep: Option<(&'static [&'static str], &'static [&'static str])>,
}

impl Rules {
    pub(super) fn of(dialect: Dialect) -> Self {
        let strict = dialect == (Dialect::OpenAi { strict: true });
        let gemini = dialect == Dialect::Gemini;
        Self {
            dialect,
            strict,
            gemini,
            fold_constants: dialect != Dialect::Canonical,
            drop_optional_null: !strict && dialect != Dialect::Canonical,
            one_of_as_any_of: strict || gemini || dialect == (Dialect::OpenAi { strict: false }),
            keep: if strict {
                Some((OPENAI_STRICT, OPENAI_FORMATS))
            } else if gemini {
                Some((GEMINI, GEMINI_FORMATS))
            } else {
                None
            },
        }
    }

    /// Rewrites a whole input schema (its root and whatever `$defs` it still has).
    pub(super) fn run(&self, schema: &Value) -> Result<Value, DialectError> {
        let mut out = self.node(schema, &mut String::new())?;
        if let Some(Value::Object(defs)) = schema.get("$defs") {
            let mut rewritten = Map::with_capacity(defs.len());
            for (name, def) in defs {
                let mut at = format!("/$defs/{name}");
                rewritten.insert(name.clone(), self.node(def, &mut at)?);
            }
            if let Value::Object(root) = &mut out {
                root.insert("$defs".to_owned(), Value::Object(rewritten));
            }
        }
        self.check_root(&out)?;
        Ok(out)
    }

    fn check_root(&self, root: &Value) -> Result<(), DialectError> {
        let refused: &[&'static str] = match self.dialect {
            Dialect::OpenAi { strict: true } => &["anyOf", "oneOf", "allOf"],
            Dialect::Anthropic => &["oneOf", "anyOf", "allOf"],
            _ => &[],
        };
        match refused.iter().find(|keyword| root.get(**keyword).is_some()) {
            Some(keyword) => Err(DialectError::RootUnion {
                dialect: self.dialect,
                keyword,
            }),
            None => Ok(()),
        }
    }

    fn node(&self, schema: &Value, at: &mut String) -> Result<Value, DialectError> {
        let map = match schema {
            Value::Bool(true) => return self.finish(Map::new(), at),
            Value::Object(map) => map,
            other => return Ok(other.clone()),
        };
        let required = required_names(map);
        let mut out = Map::with_capacity(map.len());
        for (key, value) in map {
            if NOISE.contains(&key.as_str()) || key == "$defs" || key == "definitions" {
                continue;
            }
            let len = at.len();
            at.push('/');
            at.push_str(key);
            let value = match (key.as_str(), value) {
                ("properties", Value::Object(properties)) => {
                    let mut rewritten = Map::with_capacity(properties.len());
                    for (name, property) in properties {
                        let len = at.len();
                        at.push('/');
                        at.push_str(name);
                        let optional = !required.contains(&name.as_str());
                        let property = if optional && self.drop_optional_null {
                            self.node(&without_null(property), at)?
                        } else {
                            self.node(property, at)?
                        };
                        rewritten.insert(name.clone(), property);
                        at.truncate(len);
                    }
                    Value::Object(rewritten)
                }
                ("items" | "additionalProperties" | "not", Value::Object(_)) => {
                    self.node(value, at)?
                }
                ("items" | "additionalProperties", Value::Bool(true)) if self.strict => {
                    return Err(not_strict(at, "accepts a value of any shape"));
                }
                ("anyOf" | "oneOf" | "allOf" | "prefixItems", Value::Array(items)) => {
                    let mut rewritten = Vec::with_capacity(items.len());
                    for (index, item) in items.iter().enumerate() {
                        let len = at.len();
                        let _ = write!(at, "/{index}");
                        rewritten.push(self.node(item, at)?);
                        at.truncate(len);
                    }
                    Value::Array(rewritten)
                }
                _ => value.clone(),
            };
            at.truncate(len);
            out.insert(key.clone(), value);
        }
        self.finish(out, at)
    }

    /// The rules for one schema whose children are already rewritten.
    fn finish(&self, mut out: Map<String, Value>, at: &str) -> Result<Value, DialectError> {
        if self.strict || self.gemini {
            merge_all_of(&mut out);
        }
        if self.fold_constants {
            fold_constants(&mut out);
        }
        if self.one_of_as_any_of
            && let Some(branches) = out.remove("oneOf")
        {
            out.insert("anyOf".to_owned(), branches);
        }
        if self.strict {
            close_object(&mut out, at)?;
        }
        if (self.strict || self.gemini)
            && let Some(value) = out.remove("const")
        {
            out.insert("enum".to_owned(), Value::Array(vec![value]));
        }
        if self.gemini {
            gemini(&mut out);
        }
        unwrap_single_branch(&mut out, self.strict);
        if let Some((keep, formats)) = self.keep {
            keep_only(&mut out, keep, formats);
        }
        if self.strict {
            if out.is_empty() || (out.len() == 1 && out.contains_key("description")) {
                return Err(not_strict(at, "accepts a value of any shape"));
            }
            // OpenAI refuses keywords beside a `$ref`.
            if out.len() > 1
                && let Some(reference) = out.remove("$ref")
            {
                out.insert(
                    "anyOf".to_owned(),
                    Value::Array(vec![json!({ "$ref": reference })]),
                );
            }
        }
        Ok(Value::Object(out))
    }
}

fn not_strict(at: &str, reason: &'static str) -> DialectError {
    DialectError::NotStrict {
        pointer: if at.is_empty() {
            "/".to_owned()
        } else {
            at.to_owned()
        },
        reason,
    }
}

fn required_names(map: &Map<String, Value>) -> Vec<&str> {
    map.get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

fn is_null_type(schema: &Value) -> bool {
    schema.get("type").and_then(Value::as_str) == Some("null")
}

/// A schema that accepts `null` only because its property is optional, without the `null`.
fn without_null(schema: &Value) -> Value {
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
fn unwrap_single_branch(map: &mut Map<String, Value>, keep_refs: bool) {
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
fn merge_all_of(map: &mut Map<String, Value>) {
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
fn fold_constants(map: &mut Map<String, Value>) {
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
fn close_object(map: &mut Map<String, Value>, at: &str) -> Result<(), DialectError> {
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
fn gemini(map: &mut Map<String, Value>) {
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
fn keep_only(map: &mut Map<String, Value>, keep: &[&str], formats: &[&str]) {
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
