//! `$defs` and `$ref`s: which named types a schema holds, which of them are recursive, and
//! inlining every reference that can be inlined.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

use super::{Dialect, DialectError};

/// The reference a recursive root type uses for itself.
const ROOT: &str = "#";

/// The most schema nodes inlining may write. A type referred to twice by a type referred to
/// twice, and so on, doubles with each level: a schema from an untrusted source could
/// otherwise grow without bound.
const MAX_INLINED_NODES: usize = 20_000;

/// The deepest nesting inlining writes, counting each keyword, schema and followed `$ref`
/// as a level: deeper, every reader of the schema (this crate's rewrites, a provider's
/// parser) recurses that deep too.
const MAX_INLINED_DEPTH: usize = 128;

/// Keywords whose value is data (a default, an example, an allowed value), not a schema:
/// a `$ref` inside one is left as it is.
const VALUE_KEYWORDS: &[&str] = &["enum", "const", "default", "examples"];

/// The named types of one schema.
pub(super) struct Defs<'s> {
    /// Name → schema, from `$defs` (or the older `definitions`).
    types: BTreeMap<String, &'s Value>,
    /// Names whose schema reaches itself through references.
    recursive: BTreeSet<String>,
}

impl<'s> Defs<'s> {
    /// Reads the named types of `root` and checks that every reference resolves.
    pub(super) fn of(root: &'s Value) -> Result<Self, DialectError> {
        let mut types = BTreeMap::new();
        for key in ["definitions", "$defs"] {
            if let Some(map) = root.get(key).and_then(Value::as_object) {
                for (name, schema) in map {
                    types.insert(name.clone(), schema);
                }
            }
        }
        let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        let mut root_refs = BTreeSet::new();
        collect_refs(root, &mut root_refs, true);
        for reference in &root_refs {
            target(reference, &types)?;
        }
        for (name, schema) in &types {
            let mut found = BTreeSet::new();
            collect_refs(schema, &mut found, false);
            let mut names = BTreeSet::new();
            for reference in found {
                names.insert(target(&reference, &types)?.to_owned());
            }
            edges.insert(name.clone(), names);
        }
        let recursive = types
            .keys()
            .filter(|name| reaches(&edges, name, name))
            .cloned()
            .collect();
        Ok(Self { types, recursive })
    }

    /// A copy of `root` with every reference to a non-recursive type replaced by that type,
    /// and `$defs` cut down to the recursive types still referred to.
    pub(super) fn inline(&self, root: &Value, dialect: Dialect) -> Result<Value, DialectError> {
        let mut kept = BTreeSet::new();
        let mut budget = MAX_INLINED_NODES;
        let mut out = self.inline_node(root, dialect, &mut kept, &mut budget, 0)?;
        let Value::Object(map) = &mut out else {
            return Ok(out);
        };
        map.remove("definitions");
        map.remove("$defs");
        // Recursive types refer to each other; keep every one reachable from the root.
        let mut pending: Vec<String> = kept.iter().cloned().collect();
        let mut defs = Map::new();
        while let Some(name) = pending.pop() {
            if defs.contains_key(&name) {
                continue;
            }
            let mut more = BTreeSet::new();
            let schema = self.inline_node(self.types[&name], dialect, &mut more, &mut budget, 1)?;
            defs.insert(name, schema);
            pending.extend(more.into_iter().filter(|n| !defs.contains_key(n)));
        }
        if !defs.is_empty() {
            map.insert("$defs".to_owned(), Value::Object(defs));
        }
        Ok(out)
    }

    fn inline_node(
        &self,
        node: &Value,
        dialect: Dialect,
        kept: &mut BTreeSet<String>,
        budget: &mut usize,
        depth: usize,
    ) -> Result<Value, DialectError> {
        *budget = budget.checked_sub(1).ok_or(DialectError::TooLarge {
            dialect,
            limit: MAX_INLINED_NODES,
        })?;
        if depth > MAX_INLINED_DEPTH {
            return Err(DialectError::TooDeep {
                dialect,
                limit: MAX_INLINED_DEPTH,
            });
        }
        let is_root = depth == 0;
        let Value::Object(map) = node else {
            return Ok(node.clone());
        };
        if let Some(reference) = map.get("$ref").and_then(Value::as_str) {
            if reference == ROOT {
                if dialect == Dialect::Gemini {
                    return Err(DialectError::Recursive {
                        dialect,
                        type_name: "the arguments".to_owned(),
                    });
                }
                return Ok(node.clone());
            }
            let name = target(reference, &self.types)?;
            if self.recursive.contains(name) {
                if dialect == Dialect::Gemini {
                    return Err(DialectError::Recursive {
                        dialect,
                        type_name: name.to_owned(),
                    });
                }
                kept.insert(name.to_owned());
                return Ok(Value::Object(canonical_ref(map, name)));
            }
            // Following a reference counts as a level too: every recursive call goes one
            // deeper, so the recursion itself stays within the limit.
            let mut inlined =
                self.inline_node(self.types[name], dialect, kept, budget, depth + 1)?;
            // Keywords beside the `$ref` (a field's description, its default) win over
            // the type's own.
            if let Value::Object(target) = &mut inlined {
                for (key, value) in map {
                    if key != "$ref" {
                        let value = self.inline_value(key, value, dialect, kept, budget, depth)?;
                        target.insert(key.clone(), value);
                    }
                }
            }
            return Ok(inlined);
        }
        let mut out = Map::with_capacity(map.len());
        for (key, value) in map {
            if is_root && (key == "$defs" || key == "definitions") {
                out.insert(key.clone(), value.clone());
                continue;
            }
            let value = self.inline_value(key, value, dialect, kept, budget, depth)?;
            out.insert(key.clone(), value);
        }
        Ok(Value::Object(out))
    }

    /// The value of keyword `key` of a schema at `depth`, its schemas inlined.
    fn inline_value(
        &self,
        key: &str,
        value: &Value,
        dialect: Dialect,
        kept: &mut BTreeSet<String>,
        budget: &mut usize,
        depth: usize,
    ) -> Result<Value, DialectError> {
        Ok(match value {
            _ if VALUE_KEYWORDS.contains(&key) => value.clone(),
            Value::Object(_) => self.inline_node(value, dialect, kept, budget, depth + 1)?,
            Value::Array(items) if is_schema_list(key) => Value::Array(
                items
                    .iter()
                    .map(|item| self.inline_node(item, dialect, kept, budget, depth + 1))
                    .collect::<Result<_, _>>()?,
            ),
            _ => value.clone(),
        })
    }
}

/// A reference written the 2020-12 way (`#/$defs/Name`), with its sibling keywords.
fn canonical_ref(map: &Map<String, Value>, name: &str) -> Map<String, Value> {
    let mut out = map.clone();
    out.insert(
        "$ref".to_owned(),
        Value::String(format!("#/$defs/{}", escape(name))),
    );
    out
}

/// Keywords whose value is a list of schemas.
fn is_schema_list(key: &str) -> bool {
    matches!(key, "anyOf" | "oneOf" | "allOf" | "prefixItems")
}

/// Every `$ref` under `node`; skips the root's own `$defs` when `skip_defs`.
fn collect_refs(node: &Value, out: &mut BTreeSet<String>, skip_defs: bool) {
    match node {
        Value::Object(map) => {
            for (key, value) in map {
                if skip_defs && (key == "$defs" || key == "definitions") {
                    continue;
                }
                if key == "$ref" {
                    if let Value::String(reference) = value {
                        out.insert(reference.clone());
                    }
                } else if !VALUE_KEYWORDS.contains(&key.as_str()) {
                    collect_refs(value, out, false);
                }
            }
        }
        Value::Array(items) => {
            for item in items {
                collect_refs(item, out, false);
            }
        }
        _ => {}
    }
}

/// The `$defs` name a reference points to.
fn target<'t>(
    reference: &str,
    types: &'t BTreeMap<String, &Value>,
) -> Result<&'t str, DialectError> {
    let unresolved = || DialectError::UnresolvedRef {
        reference: reference.to_owned(),
    };
    if reference == ROOT {
        return Ok("");
    }
    let name = reference
        .strip_prefix("#/$defs/")
        .or_else(|| reference.strip_prefix("#/definitions/"))
        .ok_or_else(unresolved)?;
    let name = name.replace("~1", "/").replace("~0", "~");
    types
        .get_key_value(&name)
        .map(|(key, _)| key.as_str())
        .ok_or_else(unresolved)
}

fn escape(name: &str) -> String {
    name.replace('~', "~0").replace('/', "~1")
}

/// Whether `to` is reachable from `from` in one or more steps.
fn reaches(edges: &BTreeMap<String, BTreeSet<String>>, from: &str, to: &str) -> bool {
    let mut seen = BTreeSet::new();
    let mut stack: Vec<&str> = edges
        .get(from)
        .map(|next| next.iter().map(String::as_str).collect())
        .unwrap_or_default();
    while let Some(name) = stack.pop() {
        if name == to {
            return true;
        }
        if seen.insert(name)
            && let Some(next) = edges.get(name)
        {
            stack.extend(next.iter().map(String::as_str));
        }
    }
    false
}
