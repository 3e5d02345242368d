//! Provider dialects: one canonical schema, rewritten into what each model API accepts.
//!
//! Every tool has one canonical input schema (JSON Schema 2020-12, from schemars). Model
//! APIs each take a different subset of JSON Schema, so [`Dialect::apply`] rewrites the
//! canonical schema into the subset a provider takes, keeping as much meaning as the subset
//! can carry: keywords a provider refuses move into the description as words, never
//! silently lost. The server keeps validating calls against the canonical schema.

mod node;
mod refs;
mod rewrite;

use std::fmt;

use serde_json::Value;

use self::refs::Defs;
use self::rewrite::Rules;

/// A provider's flavour of JSON Schema.
///
/// Each is a documented, deterministic rewrite of the canonical schema:
///
/// - [`Canonical`](Dialect::Canonical): the schema as generated, unchanged.
/// - [`OpenAi { strict: true }`](Dialect::OpenAi): OpenAI Structured Outputs. Every object
///   gets `additionalProperties: false`; every property is listed in `required`, and the
///   ones that were optional accept `null` instead (a `null` for such an argument is read as
///   "absent" by the server); `oneOf` becomes `anyOf`; `const` becomes a one-value `enum`;
///   `$ref`s are inlined, except into recursive types, which stay under `$defs` (OpenAI
///   accepts recursion through `$ref`); keywords outside OpenAI's supported set
///   (`default`, `minLength`, `uniqueItems`, unsupported `format`s, …) move into the
///   description. A schema that cannot be closed (a map, a value of any shape) is an error.
/// - [`OpenAi { strict: false }`](Dialect::OpenAi): plain JSON Schema with `$ref`s
///   inlined, optional properties without their `null` branch, and documented enum
///   variants folded into one `enum`.
/// - [`Anthropic`](Dialect::Anthropic): `input_schema` JSON Schema; `$defs` kept or inlined,
///   whichever is smaller; optional properties without their `null` branch; documented enum
///   variants folded into one `enum`. The root may not be a `oneOf`/`anyOf`/`allOf`.
/// - [`Gemini`](Dialect::Gemini): the OpenAPI 3.0 subset Gemini's function declarations
///   take: everything inlined (a recursive type is an error, since Gemini has no `$ref`),
///   upper-case `type` names, `nullable: true` instead of `null` in a type or union,
///   `const` as a one-value `enum`, no `additionalProperties` (a map's value type goes into
///   the description), enums of strings only, and only the keywords Gemini's `Schema`
///   object lists.
/// - [`Mcp { refs }`](Dialect::Mcp): an MCP `inputSchema`; `$ref`s handled per [`Refs`]
///   (inlined by default, since some MCP clients do not follow them), optional properties
///   without their `null` branch (some clients refuse `type: [T, "null"]`), and documented
///   enum variants folded into one `enum`. A root `$schema` stays: MCP reads it as the
///   schema's dialect.
///
/// ```
/// use aleph_tools::schema::Dialect;
/// use serde_json::json;
///
/// let canonical = json!({
///     "type": "object",
///     "properties": {
///         "query": { "type": "string" },
///         "limit": { "type": ["integer", "null"], "format": "uint32", "minimum": 0 }
///     },
///     "required": ["query"]
/// });
/// let strict = Dialect::OpenAi { strict: true }.apply(&canonical)?;
/// assert_eq!(strict["required"], json!(["query", "limit"]));
/// assert_eq!(strict["additionalProperties"], json!(false));
///
/// let gemini = Dialect::Gemini.apply(&canonical)?;
/// assert_eq!(gemini["properties"]["limit"]["type"], "INTEGER");
/// # Ok::<(), aleph_tools::schema::DialectError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Dialect {
    /// The schema as generated.
    Canonical,
    /// OpenAI function tools (chat completions and responses).
    OpenAi {
        /// Structured Outputs' strict mode: the model's arguments always match the schema.
        strict: bool,
    },
    /// Anthropic tools (`input_schema`).
    Anthropic,
    /// Gemini function declarations (`parameters`).
    Gemini,
    /// MCP tools (`inputSchema`).
    Mcp {
        /// What to do with `$ref`s.
        refs: Refs,
    },
}

/// What a dialect does with `$ref`s into `$defs`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Refs {
    /// Replace each `$ref` with the schema it names. Recursive types stay under `$defs`,
    /// and so does every type when writing them all out would pass 20,000 schema nodes.
    #[default]
    Inline,
    /// Keep `$defs` and `$ref`s as generated.
    Keep,
    /// Whichever of the two serializes smaller, tool by tool: a type used in many places
    /// is shared once under `$defs`, a type used once is inlined.
    Smallest,
}

impl Dialect {
    /// The MCP dialect with `$ref`s inlined.
    pub const MCP: Self = Self::Mcp { refs: Refs::Inline };

    /// A short name for messages and reports (`"openai-strict"`, `"gemini"`, …).
    pub const fn name(self) -> &'static str {
        match self {
            Self::Canonical => "canonical",
            Self::OpenAi { strict: true } => "openai-strict",
            Self::OpenAi { strict: false } => "openai",
            Self::Anthropic => "anthropic",
            Self::Gemini => "gemini",
            Self::Mcp { .. } => "mcp",
        }
    }

    /// Rewrites a tool's canonical input schema into this dialect.
    ///
    /// The input is left as is; the result is a new value.
    ///
    /// # Errors
    ///
    /// [`DialectError`] when the schema's root is not an object, when it cannot be
    /// expressed in this dialect (a map under OpenAI strict mode, a recursive type for
    /// Gemini), or when a `$ref` points nowhere.
    pub fn apply(self, schema: &Value) -> Result<Value, DialectError> {
        if self == Self::Canonical {
            return Ok(schema.clone());
        }
        if !super::is_object_schema(schema) {
            return Err(DialectError::RootNotObject { dialect: self });
        }
        let defs = Defs::of(schema)?;
        let refs = match self {
            Self::Canonical => Refs::Keep,
            Self::Gemini | Self::OpenAi { .. } => Refs::Inline,
            Self::Anthropic => Refs::Smallest,
            Self::Mcp { refs } => refs,
        };
        let rules = Rules::of(self);
        let inlined = match refs {
            Refs::Keep => None,
            Refs::Inline | Refs::Smallest => match defs.inline(schema, self) {
                Ok(inlined) => Some(rules.run(&inlined)?),
                // Too big written out: share the types instead, where the dialect can.
                Err(DialectError::TooLarge { .. } | DialectError::TooDeep { .. })
                    if self != Self::Gemini =>
                {
                    None
                }
                Err(err) => return Err(err),
            },
        };
        let mut out = match (refs, inlined) {
            (Refs::Smallest, Some(inlined)) => {
                let kept = rules.run(schema)?;
                if serialized_len(&kept) < serialized_len(&inlined) {
                    kept
                } else {
                    inlined
                }
            }
            (_, Some(inlined)) => inlined,
            (_, None) => rules.run(schema)?,
        };
        // MCP schemas are JSON Schema 2020-12 unless `$schema` says otherwise: a declared
        // dialect is part of the schema's meaning there, not noise.
        if let (Self::Mcp { .. }, Some(declared), Value::Object(root)) =
            (self, schema.get("$schema"), &mut out)
        {
            root.insert("$schema".to_owned(), declared.clone());
        }
        Ok(out)
    }
}

impl fmt::Display for Dialect {
    /// The provider's name as people write it: `OpenAI strict mode`, `Gemini`, `MCP`, ….
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Canonical => "the canonical schema",
            Self::OpenAi { strict: true } => "OpenAI strict mode",
            Self::OpenAi { strict: false } => "OpenAI",
            Self::Anthropic => "Anthropic",
            Self::Gemini => "Gemini",
            Self::Mcp { .. } => "MCP",
        })
    }
}

fn serialized_len(value: &Value) -> usize {
    serde_json::to_vec(value).map_or(usize::MAX, |bytes| bytes.len())
}

/// Why a schema cannot be written in a dialect.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DialectError {
    /// Tools take an object of named arguments; this schema's root is something else.
    #[error("{dialect} needs an input schema whose root is an object (`\"type\": \"object\"`)")]
    RootNotObject {
        /// The dialect asked for.
        dialect: Dialect,
    },
    /// The root is a union, which the dialect refuses at the top level.
    #[error(
        "{dialect} does not accept `{keyword}` at the root of an input schema; an enum flattened into the arguments causes this: make it a named argument instead"
    )]
    RootUnion {
        /// The dialect asked for.
        dialect: Dialect,
        /// `oneOf`, `anyOf` or `allOf`.
        keyword: &'static str,
    },
    /// The schema refers to itself, and the dialect has no `$ref` to say so.
    #[error(
        "{dialect} cannot take the recursive type `{type_name}`: it has no `$ref`, so a type that contains itself cannot be written out; use a non-recursive type (a flat list with parent ids, a depth-limited copy) or another dialect"
    )]
    Recursive {
        /// The dialect asked for.
        dialect: Dialect,
        /// The `$defs` name of the recursive type.
        type_name: String,
    },
    /// Strict mode needs every object closed, and this part of the schema accepts keys it
    /// does not list (a map, `serde_json::Value`, a free-form object).
    #[error(
        "OpenAI strict mode needs a schema with every key known, and `{pointer}` {reason}; use a struct with named fields there, or turn strict mode off for this tool"
    )]
    NotStrict {
        /// JSON pointer into the canonical schema.
        pointer: String,
        /// What is open about it.
        reason: &'static str,
    },
    /// Writing every `$ref` out would make the schema too large (types that refer to other
    /// types several times, level after level), and the dialect cannot share them.
    #[error(
        "{dialect} needs every `$ref` written out, and this schema would grow past {limit} nodes that way; use fewer levels of types that refer to each other several times"
    )]
    TooLarge {
        /// The dialect asked for.
        dialect: Dialect,
        /// The most nodes inlining writes.
        limit: usize,
    },
    /// Writing every `$ref` out would nest the schema deeper than a reader can be expected
    /// to follow (types nesting types, level after level), and the dialect cannot share
    /// them.
    #[error(
        "{dialect} needs every `$ref` written out, and this schema would nest more than {limit} levels deep that way; use fewer levels of types inside types"
    )]
    TooDeep {
        /// The dialect asked for.
        dialect: Dialect,
        /// The deepest nesting inlining writes.
        limit: usize,
    },
    /// A `$ref` that does not name an entry of `$defs`.
    #[error("the schema refers to `{reference}`, which is not under its `$defs`")]
    UnresolvedRef {
        /// The reference as written.
        reference: String,
    },
}
