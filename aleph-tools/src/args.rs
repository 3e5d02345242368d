//! Deserializing a tool's JSON arguments, with the argument that failed named by JSON pointer.
//!
//! Arguments arrive as an owned [`Value`] and are moved field by field into the typed
//! arguments, exactly as `serde_json::from_value` would, so strings are not copied. The only
//! addition is that the top-level map remembers which key it was reading when an error
//! struck; that key is the pointer in the error.

use serde::de::{self, DeserializeOwned, DeserializeSeed, IntoDeserializer, MapAccess, Visitor};
use serde_json::{Map, Value};

use crate::error::{ArgumentProblem, ToolError};

/// What the arguments as a whole must be, in argument errors.
pub(crate) const ARGUMENTS_OBJECT: &str = "a JSON object of named arguments";

/// Deserializes `args` into `A`. `null` counts as no arguments: models send it for tools
/// without parameters.
pub(crate) fn parse_args<A: DeserializeOwned>(tool: &str, args: Value) -> Result<A, ToolError> {
    let map = match args {
        Value::Object(map) => map,
        Value::Null => Map::new(),
        other => {
            return Err(ToolError::invalid_args(
                tool,
                vec![ArgumentProblem::new("", ARGUMENTS_OBJECT).received(describe(&other))],
            ));
        }
    };
    let mut failed_key = None;
    A::deserialize(Arguments {
        map,
        failed_key: &mut failed_key,
    })
    .map_err(|err| {
        let pointer = failed_key.map_or_else(String::new, |key| pointer(&key));
        ToolError::invalid_args(tool, vec![serde_problem(pointer, &err.to_string())])
    })
}

/// The JSON pointer of a top-level argument.
pub(crate) fn pointer(key: &str) -> String {
    format!("/{}", key.replace('~', "~0").replace('/', "~1"))
}

/// Reads serde's error messages (invalid type or value, missing or unknown field, unknown
/// variant) into the one argument-error shape.
fn serde_problem(pointer: String, message: &str) -> ArgumentProblem {
    if let Some(field) = between(message, "missing field `", "`") {
        let pointer = if pointer.is_empty() {
            self::pointer(field)
        } else {
            pointer
        };
        return ArgumentProblem::new(pointer, "a value for this required argument")
            .received("nothing");
    }
    if let Some(field) = between(message, "unknown field `", "`") {
        let pointer = if pointer.is_empty() {
            self::pointer(field)
        } else {
            pointer
        };
        let expected = message
            .split_once(", expected ")
            .map_or("only the arguments this tool takes", |(_, expected)| {
                expected
            });
        return ArgumentProblem::new(pointer, expected)
            .received("an argument this tool does not take");
    }
    match message.split_once(", expected ") {
        Some((received, expected)) => {
            let received = ["invalid type: ", "invalid value: ", "unknown variant "]
                .iter()
                .find_map(|prefix| received.strip_prefix(prefix))
                .unwrap_or(received);
            ArgumentProblem::new(pointer, expected).received(received)
        }
        None => ArgumentProblem::new(pointer, message),
    }
}

fn between<'a>(text: &'a str, start: &str, end: &str) -> Option<&'a str> {
    let rest = text.strip_prefix(start)?;
    rest.split_once(end).map(|(inside, _)| inside)
}

/// A short description of a JSON value for error messages: its type and, for scalars, the
/// value.
pub(crate) fn describe(value: &Value) -> String {
    match value {
        Value::Null => "null".to_owned(),
        Value::Bool(b) => format!("the boolean {b}"),
        Value::Number(n) => format!("the number {n}"),
        Value::String(s) if s.chars().count() > 40 => {
            let head: String = s.chars().take(40).collect();
            format!("the string \"{head}…\"")
        }
        Value::String(s) => format!("the string \"{s}\""),
        Value::Array(items) => format!("an array of {} items", items.len()),
        Value::Object(_) => "an object".to_owned(),
    }
}

/// The top-level arguments object.
struct Arguments<'k> {
    map: Map<String, Value>,
    failed_key: &'k mut Option<String>,
}

impl<'de> de::Deserializer<'de> for Arguments<'_> {
    type Error = serde_json::Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        let len = self.map.len();
        let mut access = Fields {
            iter: self.map.into_iter(),
            pending: None,
            failed_key: self.failed_key,
        };
        let value = visitor.visit_map(&mut access)?;
        if access.iter.len() == 0 {
            Ok(value)
        } else {
            Err(de::Error::invalid_length(len, &"fewer elements in map"))
        }
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map struct enum identifier ignored_any
    }
}

struct Fields<'k> {
    iter: serde_json::map::IntoIter,
    pending: Option<(String, Value)>,
    failed_key: &'k mut Option<String>,
}

impl<'de> MapAccess<'de> for Fields<'_> {
    type Error = serde_json::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Self::Error> {
        let Some((key, value)) = self.iter.next() else {
            return Ok(None);
        };
        let parsed = seed.deserialize(KeyDeserializer(&key));
        match parsed {
            Ok(parsed) => {
                self.pending = Some((key, value));
                Ok(Some(parsed))
            }
            Err(err) => {
                *self.failed_key = Some(key);
                Err(err)
            }
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(
        &mut self,
        seed: V,
    ) -> Result<V::Value, Self::Error> {
        let Some((key, value)) = self.pending.take() else {
            return Err(de::Error::custom("a value was asked for before its key"));
        };
        seed.deserialize(value)
            .inspect_err(|_| *self.failed_key = Some(key))
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.iter.len())
    }
}

/// A map key, offered as a string.
struct KeyDeserializer<'a>(&'a str);

impl<'de> de::Deserializer<'de> for KeyDeserializer<'_> {
    type Error = serde_json::Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        self.0.into_deserializer().deserialize_any(visitor)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map struct enum identifier ignored_any
    }
}
