//! Argument repair: the small, safe fixes for arguments a model got nearly right, each
//! recorded as a [`Coercion`].
//!
//! Guided by the input schema, it turns strings that hold numbers or booleans into those,
//! parses objects and arrays sent as JSON text, and renames keys whose case or separators
//! differ from the schema's (`userName` → `user_name`). Nothing else is guessed.
//!
//! One fix is not a guess and runs even without repair: a `null` for an optional argument
//! whose schema does not take `null` means the argument is absent. Models in OpenAI's
//! strict mode send exactly that, since strict mode makes every argument required and the
//! optional ones nullable.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use std::fmt::Write as _;

/// How deep `$ref`s are followed without descending into the value; guards cyclic schemas.
const MAX_REF_HOPS: usize = 32;

/// One change argument repair made to a call's arguments.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Coercion {
    /// JSON pointer to the argument after the change (`/limit`, `/filter/max_size`).
    pub pointer: String,
    /// What was done.
    pub kind: CoercionKind,
    /// What the model sent: the original value, or for a renamed key the original key.
    pub original: Value,
}

/// What argument repair did to one argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum CoercionKind {
    /// A string holding a number (`"10"`) became the number.
    NumberFromString,
    /// A string holding a boolean (`"true"`) became the boolean.
    BooleanFromString,
    /// A string holding a JSON object or array became that object or array.
    ParsedJsonString,
    /// A key written in another case or with other separators (`maxResults`) was renamed
    /// to the schema's (`max_results`).
    RenamedKey,
    /// A `null` for an optional argument that does not take `null` was read as the
    /// argument being absent (what models in strict mode send for "no value").
    NullAsAbsent,
}

/// Repairs `value` in place as far as `schema` (the root of a tool's input schema) says
/// how, and lists what changed.
pub(crate) fn coerce(schema: &Value, value: &mut Value) -> Vec<Coercion> {
    let mut walk = Walk {
        root: schema,
        changes: Vec::new(),
        nulls_only: false,
    };
    walk.visit(schema, value, &mut String::new());
    walk.changes
}

/// Removes `null`s sent for optional arguments that do not take `null`, and lists them.
pub(crate) fn drop_absent_nulls(schema: &Value, value: &mut Value) -> Vec<Coercion> {
    let mut walk = Walk {
        root: schema,
        changes: Vec::new(),
        nulls_only: true,
    };
    walk.visit(schema, value, &mut String::new());
    walk.changes
}

struct Walk<'s> {
    root: &'s Value,
    changes: Vec<Coercion>,
    /// Only read `null`s as absent; change nothing else.
    nulls_only: bool,
}

impl<'s> Walk<'s> {
    fn visit(&mut self, schema: &'s Value, value: &mut Value, at: &mut String) {
        let Some(schema) = self.resolve(schema) else {
            return;
        };
        let wanted = Types::of(schema);
        if let Value::String(text) = value
            && !self.nulls_only
            && !wanted.string
            && let Some((fixed, kind)) = from_string(text, wanted)
        {
            let original = std::mem::replace(value, fixed);
            self.record(at, kind, original);
        }
        match value {
            Value::Object(map) => self.visit_object(schema, map, at),
            Value::Array(items) => {
                if let Some(item_schema) = schema.get("items") {
                    for (index, item) in items.iter_mut().enumerate() {
                        let len = at.len();
                        write!(at, "/{index}").unwrap_or_default();
                        self.visit(item_schema, item, at);
                        at.truncate(len);
                    }
                }
            }
            _ => {}
        }
    }

    fn visit_object(&mut self, schema: &'s Value, map: &mut Map<String, Value>, at: &mut String) {
        let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
            return;
        };
        let unknown: Vec<String> = if self.nulls_only {
            Vec::new()
        } else {
            map.keys()
                .filter(|key| !properties.contains_key(*key))
                .cloned()
                .collect()
        };
        for key in unknown {
            let Some(target) = matching_property(properties, &key) else {
                continue;
            };
            if map.contains_key(target) {
                continue;
            }
            if let Some(value) = map.remove(&key) {
                map.insert(target.to_owned(), value);
                let len = at.len();
                push_pointer(at, target);
                self.record(at, CoercionKind::RenamedKey, Value::String(key));
                at.truncate(len);
            }
        }
        let required = schema.get("required").and_then(Value::as_array);
        for (name, property_schema) in properties {
            let optional = !required.is_some_and(|r| r.iter().any(|n| n == name.as_str()));
            if optional
                && map.get(name).is_some_and(Value::is_null)
                && !self.accepts_null(property_schema)
            {
                map.remove(name);
                let len = at.len();
                push_pointer(at, name);
                self.record(at, CoercionKind::NullAsAbsent, Value::Null);
                at.truncate(len);
                continue;
            }
            if let Some(value) = map.get_mut(name) {
                let len = at.len();
                push_pointer(at, name);
                self.visit(property_schema, value, at);
                at.truncate(len);
            }
        }
    }

    /// Follows local `$ref`s and unwraps `Option`-style `anyOf: [T, null]` to `T`.
    fn resolve(&self, mut schema: &'s Value) -> Option<&'s Value> {
        for _ in 0..MAX_REF_HOPS {
            if let Some(reference) = schema.get("$ref").and_then(Value::as_str) {
                schema = self.root.pointer(reference.strip_prefix('#')?)?;
                continue;
            }
            let branches = schema
                .get("anyOf")
                .or_else(|| schema.get("oneOf"))
                .and_then(Value::as_array);
            if let Some(branches) = branches {
                let mut real = branches.iter().filter(|b| !is_null_schema(b));
                if let (Some(only), None) = (real.next(), real.next()) {
                    schema = only;
                    continue;
                }
            }
            return Some(schema);
        }
        None
    }

    /// Whether `schema` takes `null`; unknown shapes count as taking it, so nothing is
    /// dropped on a guess.
    fn accepts_null(&self, schema: &Value) -> bool {
        let mut schema = schema;
        for _ in 0..MAX_REF_HOPS {
            let Value::Object(map) = schema else {
                return schema != &Value::Bool(false);
            };
            if let Some(reference) = map.get("$ref").and_then(Value::as_str) {
                match reference
                    .strip_prefix('#')
                    .and_then(|p| self.root.pointer(p))
                {
                    Some(target) => {
                        schema = target;
                        continue;
                    }
                    None => return true,
                }
            }
            let branches = ["anyOf", "oneOf"]
                .iter()
                .filter_map(|k| map.get(*k).and_then(Value::as_array))
                .flatten();
            if branches.clone().next().is_some() {
                return branches.into_iter().any(|b| self.accepts_null(b));
            }
            return match map.get("type") {
                Some(Value::String(t)) => t == "null",
                Some(Value::Array(types)) => types.iter().any(|t| t == "null"),
                _ => match (map.get("enum"), map.get("const")) {
                    (Some(Value::Array(values)), _) => values.contains(&Value::Null),
                    (_, Some(value)) => value.is_null(),
                    _ => true,
                },
            };
        }
        true
    }

    fn record(&mut self, at: &str, kind: CoercionKind, original: Value) {
        self.changes.push(Coercion {
            pointer: at.to_owned(),
            kind,
            original,
        });
    }
}

/// Appends `/key` to a JSON pointer, escaped.
fn push_pointer(at: &mut String, key: &str) {
    at.push('/');
    for c in key.chars() {
        match c {
            '~' => at.push_str("~0"),
            '/' => at.push_str("~1"),
            c => at.push(c),
        }
    }
}

fn is_null_schema(schema: &Value) -> bool {
    schema.get("type").and_then(Value::as_str) == Some("null")
        || schema.get("const").is_some_and(Value::is_null)
}

/// The JSON types a schema accepts, as far as repair cares.
#[derive(Clone, Copy, Default)]
#[allow(clippy::struct_excessive_bools, reason = "one flag per JSON type")]
struct Types {
    string: bool,
    integer: bool,
    number: bool,
    boolean: bool,
    object: bool,
    array: bool,
}

impl Types {
    fn of(schema: &Value) -> Self {
        let mut types = Self::default();
        let mut add = |name: &str| match name {
            "string" => types.string = true,
            "integer" => types.integer = true,
            "number" => types.number = true,
            "boolean" => types.boolean = true,
            "object" => types.object = true,
            "array" => types.array = true,
            _ => {}
        };
        match schema.get("type") {
            Some(Value::String(name)) => add(name),
            Some(Value::Array(names)) => names.iter().filter_map(Value::as_str).for_each(add),
            // No `type` (an enum, a const, a bare schema): a string may be meant as one.
            _ => types.string = true,
        }
        types
    }
}

/// The value a string stands for, when the schema wants that type instead of a string.
fn from_string(text: &str, wanted: Types) -> Option<(Value, CoercionKind)> {
    let trimmed = text.trim();
    if wanted.integer || wanted.number {
        let number = if let Ok(int) = trimmed.parse::<i64>() {
            Some(Value::from(int))
        } else if let Ok(int) = trimmed.parse::<u64>() {
            Some(Value::from(int))
        } else if wanted.number {
            trimmed
                .parse::<f64>()
                .ok()
                .filter(|n| n.is_finite())
                .and_then(|n| serde_json::Number::from_f64(n).map(Value::Number))
        } else {
            None
        };
        if let Some(number) = number {
            return Some((number, CoercionKind::NumberFromString));
        }
    }
    if wanted.boolean {
        if trimmed.eq_ignore_ascii_case("true") {
            return Some((Value::Bool(true), CoercionKind::BooleanFromString));
        }
        if trimmed.eq_ignore_ascii_case("false") {
            return Some((Value::Bool(false), CoercionKind::BooleanFromString));
        }
    }
    if wanted.object || wanted.array {
        let parsed: Value = serde_json::from_str(trimmed).ok()?;
        let fits = (wanted.object && parsed.is_object()) || (wanted.array && parsed.is_array());
        if fits {
            return Some((parsed, CoercionKind::ParsedJsonString));
        }
    }
    None
}

/// The one schema property `key` means when case and separators are ignored
/// (`maxResults`, `Max-Results` and `MAX_RESULTS` all mean `max_results`).
fn matching_property<'p>(properties: &'p Map<String, Value>, key: &str) -> Option<&'p str> {
    let wanted = fold(key);
    let mut matches = properties
        .keys()
        .filter(|name| fold(name) == wanted)
        .map(String::as_str);
    let first = matches.next()?;
    matches.next().is_none().then_some(first)
}

fn fold(name: &str) -> String {
    name.chars()
        .filter(|c| !matches!(c, '_' | '-' | ' '))
        .flat_map(char::to_lowercase)
        .collect()
}
