//! Reading a tool's JSON arguments into its types, with the argument that failed named by
//! JSON pointer.
//!
//! [`reader`] reads them and keeps the place a read failed at, which becomes the pointer in
//! the error; the value found there is described as the schema check describes it, so an
//! error reads the same whichever of the two found it.

pub(crate) mod fields;
mod reader;

use std::sync::LazyLock;

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use self::reader::Failure;
pub(crate) use self::reader::read;
use crate::error::{ArgumentProblem, ToolError};

/// What the arguments as a whole must be, in argument errors.
pub(crate) const ARGUMENTS_OBJECT: &str = "a JSON object of named arguments";

/// Reads `args` into `A`, or says what is wrong with them. `null` counts as no arguments:
/// models send it for tools without parameters.
pub(crate) fn parse_args<A: DeserializeOwned>(tool: &str, args: &Value) -> Result<A, ToolError> {
    // Matches, not `?`: each `?` here would compile one more function for every tool.
    match arguments_object(tool, args) {
        Ok(args) => match read(args) {
            Ok(parsed) => Ok(parsed),
            Err(failure) => Err(refused(tool, args, failure)),
        },
        Err(err) => Err(err),
    }
}

/// The arguments as an object: `null` read as no arguments, anything else refused.
fn arguments_object<'a>(tool: &str, args: &'a Value) -> Result<&'a Value, ToolError> {
    static NONE: LazyLock<Value> = LazyLock::new(|| Value::Object(Map::new()));
    match args {
        Value::Object(_) => Ok(args),
        Value::Null => Ok(&NONE),
        other => Err(ToolError::invalid_args(
            tool,
            vec![ArgumentProblem::new("", ARGUMENTS_OBJECT).received(describe(other))],
        )),
    }
}

/// The argument error of a read serde refused.
#[cold]
fn refused(tool: &str, args: &Value, failure: Failure) -> ToolError {
    let found = match &failure.key {
        Some(key) => Some(format!("the key \"{key}\"")),
        None => args.pointer(&failure.pointer).map(describe),
    };
    let problem = serde_problem(failure.pointer, &failure.error.to_string(), found);
    ToolError::invalid_args(tool, vec![problem])
}

/// The JSON pointer of a top-level argument.
pub(crate) fn pointer(key: &str) -> String {
    format!("/{}", key.replace('~', "~0").replace('/', "~1"))
}

/// Reads serde's error messages (invalid type or value, missing or unknown field, unknown
/// variant) into the one argument-error shape; `found` describes the value at `pointer`.
fn serde_problem(pointer: String, message: &str, found: Option<String>) -> ArgumentProblem {
    if let Some(field) = between(message, "missing field `", "`") {
        // Serde misses a field at the end of the object that lacks it.
        let pointer = within(pointer, field);
        return ArgumentProblem::new(pointer, "a value for this required argument")
            .received("nothing");
    }
    if let Some(field) = between(message, "unknown field `", "`") {
        let pointer = within(pointer, field);
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
            let variant = received.strip_prefix("unknown variant ");
            let said = ["invalid type: ", "invalid value: "]
                .iter()
                .find_map(|prefix| received.strip_prefix(prefix))
                .or(variant)
                .unwrap_or(received);
            // Serde's own words for a value (`integer `42``) read as the schema check's do; a
            // type's own message (`an odd-length string`) is kept as its author wrote it.
            let serdes = variant.is_some() || SERDE_WORDS.iter().any(|w| said.starts_with(w));
            let received = match found {
                Some(found) if serdes => found,
                _ => said.to_owned(),
            };
            ArgumentProblem::new(pointer, in_words(expected)).received(received)
        }
        None => ArgumentProblem::new(pointer, message),
    }
}

/// How serde's errors begin to name the value they met (`serde::de::Unexpected`).
const SERDE_WORDS: &[&str] = &[
    "boolean `",
    "integer `",
    "floating point `",
    "char ",
    "string \"",
    "byte array",
    "null",
    "Option value",
    "unit value",
    "unit variant",
    "newtype struct",
    "newtype variant",
    "sequence",
    "map",
    "enum",
    "tuple variant",
    "struct variant",
];

/// What serde expected, in words where it names a Rust number type (`u8`, `f64`).
fn in_words(expected: &str) -> String {
    let range = |min: i128, max: u128| format!("an integer from {min} to {max}");
    match expected {
        "u8" => range(0, u8::MAX.into()),
        "u16" => range(0, u16::MAX.into()),
        "u32" => range(0, u32::MAX.into()),
        "u64" | "usize" => range(0, u64::MAX.into()),
        "i8" => range(i8::MIN.into(), i8::MAX.unsigned_abs().into()),
        "i16" => range(i16::MIN.into(), i16::MAX.unsigned_abs().into()),
        "i32" => range(i32::MIN.into(), i32::MAX.unsigned_abs().into()),
        "i64" | "isize" => range(i64::MIN.into(), i64::MAX.unsigned_abs().into()),
        "u128" | "i128" => "an integer".to_owned(),
        "f32" | "f64" => "a number".to_owned(),
        other => other.to_owned(),
    }
}

/// The pointer of `field` in the object at `object`: serde names a missing or unknown field
/// at the object that lacks or holds it.
fn within(object: String, field: &str) -> String {
    object + &pointer(field)
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

#[cfg(test)]
mod tests {
    use serde::Deserialize;
    use serde_json::json;

    use super::*;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Window {
        #[allow(dead_code)]
        from: u32,
        #[allow(dead_code)]
        to: u32,
    }

    #[derive(Debug, Deserialize)]
    struct Args {
        #[allow(dead_code)]
        id: u8,
        #[allow(dead_code)]
        #[serde(default)]
        by_day: std::collections::BTreeMap<u8, String>,
        #[allow(dead_code)]
        #[serde(default)]
        window_again: Option<Again>,
        #[allow(dead_code)]
        window: Option<Window>,
        #[allow(dead_code)]
        #[serde(default)]
        tags: Vec<String>,
    }

    /// A struct with a field of the name it is found under.
    #[derive(Debug, Deserialize)]
    struct Again {
        #[allow(dead_code)]
        window_again: u8,
    }

    fn refusal(args: &Value) -> String {
        parse_args::<Args>("read", args).unwrap_err().to_string()
    }

    #[test]
    fn errors_name_the_argument_wherever_it_is() {
        let cases = [
            (
                json!({}),
                "`/id`: expected a value for this required argument, received nothing",
            ),
            (
                json!({ "id": "one" }),
                "`/id`: expected an integer from 0 to 255, received the string \"one\"",
            ),
            (
                json!({ "id": 1, "window": { "from": 1 } }),
                "`/window/to`: expected a value",
            ),
            (
                json!({ "id": 1, "window": { "from": -1, "to": 2 } }),
                "`/window/from`: expected an integer from 0 to 4294967295, received the number -1",
            ),
            (
                json!({ "id": 1, "window": { "from": 1, "to": 2, "by": 3 } }),
                "`/window/by`: expected",
            ),
            (
                json!({ "id": 1, "tags": ["a", 2] }),
                "`/tags/1`: expected a string, received the number 2",
            ),
            (
                json!({ "id": 1, "by_day": { "x": "one" } }),
                "`/by_day`: expected an integer from 0 to 255, received the key \"x\"",
            ),
            (
                json!({ "id": 1, "window_again": {} }),
                "`/window_again/window_again`: expected a value for this required argument",
            ),
        ];
        for (args, expected) in cases {
            let refusal = refusal(&args);
            assert!(refusal.contains(expected), "{args}: {refusal}");
        }
        assert!(refusal(&json!([1])).contains("expected a JSON object of named arguments"));
        assert!(parse_args::<Args>("read", &json!({ "id": 1 })).is_ok());
        assert!(parse_args::<Args>("read", &json!({ "id": [1] })).is_err());
    }
}
