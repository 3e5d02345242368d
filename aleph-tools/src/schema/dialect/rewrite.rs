//! The rewrite itself: one bottom-up pass over a schema under a dialect's rules.

use std::fmt::Write as _;

use serde_json::{Map, Value, json};

use super::node::{
    close_object, fold_constants, gemini, keep_only, merge_all_of, not_strict, required_names,
    unwrap_single_branch, without_null,
};
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
pub(super) const NUMBER_FORMATS: &[&str] = &[
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
