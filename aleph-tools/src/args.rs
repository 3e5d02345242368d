//! Deserializing a tool's JSON arguments, with the argument that failed named by JSON pointer.
//!
//! Arguments arrive as an owned [`Value`] and are moved into the typed arguments, exactly as
//! `serde_json::from_value` would, so strings are not copied; `serde_path_to_error` tracks
//! where serde was when it failed, which becomes the pointer in the error.

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use serde_path_to_error::{Path, Segment};

use crate::error::{ArgumentProblem, ToolError};

/// What the arguments as a whole must be, in argument errors.
pub(crate) const ARGUMENTS_OBJECT: &str = "a JSON object of named arguments";

/// Deserializes `args` into `A`. `null` counts as no arguments: models send it for tools
/// without parameters.
pub(crate) fn parse_args<A: DeserializeOwned>(tool: &str, args: Value) -> Result<A, ToolError> {
    let args = match args {
        Value::Object(map) => Value::Object(map),
        Value::Null => Value::Object(Map::new()),
        other => {
            return Err(ToolError::invalid_args(
                tool,
                vec![ArgumentProblem::new("", ARGUMENTS_OBJECT).received(describe(&other))],
            ));
        }
    };
    serde_path_to_error::deserialize(args).map_err(|err| {
        let pointer = path_pointer(err.path());
        ToolError::invalid_args(tool, vec![serde_problem(pointer, &err.inner().to_string())])
    })
}

/// The JSON pointer of the place serde failed at: the keys and indexes it went through.
fn path_pointer(path: &Path) -> String {
    path.iter()
        .filter_map(|segment| match segment {
            Segment::Map { key } => Some(pointer(key)),
            Segment::Seq { index } => Some(format!("/{index}")),
            Segment::Enum { .. } | Segment::Unknown => None,
        })
        .collect()
}

/// The JSON pointer of a top-level argument.
pub(crate) fn pointer(key: &str) -> String {
    format!("/{}", key.replace('~', "~0").replace('/', "~1"))
}

/// Reads serde's error messages (invalid type or value, missing or unknown field, unknown
/// variant) into the one argument-error shape.
fn serde_problem(pointer: String, message: &str) -> ArgumentProblem {
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
            let received = ["invalid type: ", "invalid value: ", "unknown variant "]
                .iter()
                .find_map(|prefix| received.strip_prefix(prefix))
                .unwrap_or(received);
            ArgumentProblem::new(pointer, expected).received(received)
        }
        None => ArgumentProblem::new(pointer, message),
    }
}

/// The pointer of `field` in the object at `object`, unless `object` already ends with it.
fn within(object: String, field: &str) -> String {
    let field = pointer(field);
    if object.ends_with(&field) {
        object
    } else {
        object + &field
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
        window: Option<Window>,
        #[allow(dead_code)]
        #[serde(default)]
        tags: Vec<String>,
    }

    fn refusal(args: Value) -> String {
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
                "`/id`: expected u8, received string \"one\"",
            ),
            (
                json!({ "id": 1, "window": { "from": 1 } }),
                "`/window/to`: expected a value",
            ),
            (
                json!({ "id": 1, "window": { "from": -1, "to": 2 } }),
                "`/window/from`: expected u32",
            ),
            (
                json!({ "id": 1, "window": { "from": 1, "to": 2, "by": 3 } }),
                "`/window/by`: expected",
            ),
            (
                json!({ "id": 1, "tags": ["a", 2] }),
                "`/tags/1`: expected a string, received integer `2`",
            ),
        ];
        for (args, expected) in cases {
            let refusal = refusal(args.clone());
            assert!(refusal.contains(expected), "{args}: {refusal}");
        }
        assert!(refusal(json!([1])).contains("expected a JSON object of named arguments"));
        assert!(parse_args::<Args>("read", json!({ "id": 1 })).is_ok());
    }
}
