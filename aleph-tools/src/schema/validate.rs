//! Checking a call's arguments against the tool's input schema before the tool runs, and
//! reading every failure into the one argument-error shape ([`ArgumentProblem`]).

use jsonschema::error::{TypeKind, ValidationErrorKind};
use jsonschema::{JsonType, ValidationError, Validator};
use serde_json::Value;

use crate::args::{ARGUMENTS_OBJECT, describe, pointer};
use crate::error::ArgumentProblem;

/// The most problems one error lists; a model fixes the first ones and retries.
const MAX_PROBLEMS: usize = 20;

/// A tool's input schema, compiled once when the tool is added.
pub(crate) struct ArgumentValidator {
    /// `None` accepts everything (the tool's own deserialization still checks).
    validator: Validator,
}

impl ArgumentValidator {
    /// Compiles `schema`; the message says why a schema cannot be used. Every tool's
    /// arguments are checked against its schema, `typed` or not.
    pub(crate) fn new(schema: &Value, typed: bool) -> Result<Self, String> {
        let _ = typed;
        jsonschema::validator_for(schema)
            .map(|validator| Self { validator })
            .map_err(|err| format!("its input schema is not a valid JSON Schema: {err}"))
    }

    /// Checks `args` against the schema `self` was compiled from (`schema`, for the names
    /// of known arguments in messages).
    pub(crate) fn check(&self, schema: &Value, args: &Value) -> Result<(), Vec<ArgumentProblem>> {
        let validator = &self.validator;
        if validator.is_valid(args) {
            return Ok(());
        }
        let mut problems = Vec::new();
        for error in validator.iter_errors(args) {
            read_error(schema, &error, &mut problems);
            if problems.len() >= MAX_PROBLEMS {
                break;
            }
        }
        problems.dedup();
        problems.truncate(MAX_PROBLEMS);
        if problems.is_empty() {
            problems.push(ArgumentProblem::new(
                "",
                "arguments the tool's schema accepts",
            ));
        }
        Err(problems)
    }
}

/// Appends the problems one validation error stands for.
fn read_error(schema: &Value, error: &ValidationError<'_>, out: &mut Vec<ArgumentProblem>) {
    let at = error.instance_path().as_str();
    let received = || describe(error.instance());
    let expected = match error.kind() {
        ValidationErrorKind::Type {
            kind: TypeKind::Single(JsonType::Object),
        } if at.is_empty() => ARGUMENTS_OBJECT.to_owned(),
        ValidationErrorKind::Type { kind } => type_phrase(kind),
        ValidationErrorKind::Enum { options } => {
            let allowed = options.as_array().cloned().unwrap_or_default();
            out.push(
                ArgumentProblem::new(at, "one of the allowed values")
                    .received(received())
                    .allowed(allowed),
            );
            return;
        }
        ValidationErrorKind::Constant { expected_value } => {
            out.push(
                ArgumentProblem::new(at, format!("exactly {expected_value}"))
                    .received(received())
                    .allowed([Value::clone(expected_value)]),
            );
            return;
        }
        ValidationErrorKind::Required { property } => {
            let name = property.as_str().unwrap_or_default();
            out.push(
                ArgumentProblem::new(
                    format!("{at}{}", pointer(name)),
                    "a value for this required argument",
                )
                .received("nothing"),
            );
            return;
        }
        ValidationErrorKind::AdditionalProperties { unexpected }
        | ValidationErrorKind::UnevaluatedProperties { unexpected } => {
            let expected = known_names(schema, error.schema_path().as_str(), at.is_empty());
            for key in unexpected {
                out.push(
                    ArgumentProblem::new(format!("{at}{}", pointer(key)), expected.clone())
                        .received("an unknown key"),
                );
            }
            return;
        }
        ValidationErrorKind::AnyOf { context } | ValidationErrorKind::OneOfNotValid { context } => {
            if let Some(allowed) = constants(context) {
                out.push(
                    ArgumentProblem::new(at, "one of the allowed values")
                        .received(received())
                        .allowed(allowed),
                );
                return;
            }
            if let Some(branch) = only_real_branch(context) {
                for inner in branch {
                    read_error(schema, inner, out);
                }
                return;
            }
            "a value of one of the accepted shapes".to_owned()
        }
        ValidationErrorKind::OneOfMultipleValid { .. } => {
            "a value that fits exactly one of the accepted shapes, not several".to_owned()
        }
        ValidationErrorKind::Minimum { limit } => format!("a number of at least {limit}"),
        ValidationErrorKind::Maximum { limit } => format!("a number of at most {limit}"),
        ValidationErrorKind::ExclusiveMinimum { limit } => format!("a number above {limit}"),
        ValidationErrorKind::ExclusiveMaximum { limit } => format!("a number below {limit}"),
        ValidationErrorKind::MultipleOf { multiple_of } => format!("a multiple of {multiple_of}"),
        ValidationErrorKind::MinLength { limit } => {
            format!("a string of at least {limit} characters")
        }
        ValidationErrorKind::MaxLength { limit } => {
            format!("a string of at most {limit} characters")
        }
        ValidationErrorKind::MinItems { limit } => format!("an array of at least {limit} items"),
        ValidationErrorKind::MaxItems { limit } => format!("an array of at most {limit} items"),
        ValidationErrorKind::MinProperties { limit } => {
            format!("an object with at least {limit} keys")
        }
        ValidationErrorKind::MaxProperties { limit } => {
            format!("an object with at most {limit} keys")
        }
        ValidationErrorKind::UniqueItems => "an array whose items all differ".to_owned(),
        ValidationErrorKind::Pattern { pattern } => {
            format!("a string matching the pattern `{pattern}`")
        }
        ValidationErrorKind::Format { format } => format!("a string in the `{format}` format"),
        _ => format!("a value the schema accepts ({error})"),
    };
    out.push(ArgumentProblem::new(at, expected).received(received()));
}

/// "a string", "an integer or null".
fn type_phrase(kind: &TypeKind) -> String {
    let one = |ty: JsonType| match ty {
        JsonType::Null => "null",
        JsonType::Boolean => "a boolean",
        JsonType::Integer => "an integer",
        JsonType::Number => "a number",
        JsonType::String => "a string",
        JsonType::Array => "an array",
        JsonType::Object => "an object",
    };
    match kind {
        TypeKind::Single(ty) => one(*ty).to_owned(),
        TypeKind::Multiple(set) => set.iter().map(one).collect::<Vec<_>>().join(" or "),
    }
}

/// In an `anyOf` that failed, the one branch worth reporting: `Option<T>` schemas are
/// `anyOf: [T, null]`, and "expected null" only distracts from what is wrong with the `T`.
fn only_real_branch<'a>(
    branches: &'a [Vec<ValidationError<'static>>],
) -> Option<&'a [ValidationError<'static>]> {
    let mut real = branches.iter().filter(|errors| !is_null_branch(errors));
    let first = real.next()?;
    real.next().is_none().then_some(first.as_slice())
}

/// The values of a choice between constants (how schemars writes an enum whose variants
/// have doc comments: `oneOf: [{const: "a"}, {const: "b"}]`).
fn constants(branches: &[Vec<ValidationError<'static>>]) -> Option<Vec<Value>> {
    let mut values = Vec::new();
    for errors in branches {
        match errors.as_slice() {
            [only] => match only.kind() {
                ValidationErrorKind::Constant { expected_value } => {
                    values.push(Value::clone(expected_value));
                }
                ValidationErrorKind::Enum { options } => {
                    values.extend(options.as_array()?.iter().cloned());
                }
                _ => return None,
            },
            _ => return None,
        }
    }
    (!values.is_empty()).then_some(values)
}

fn is_null_branch(errors: &[ValidationError<'_>]) -> bool {
    matches!(
        errors,
        [only] if matches!(
            only.kind(),
            ValidationErrorKind::Type { kind: TypeKind::Single(JsonType::Null) }
        )
    )
}

/// "one of the arguments `a`, `b`", from the object schema that holds the failed keyword.
fn known_names(schema: &Value, keyword_path: &str, top_level: bool) -> String {
    let object = keyword_path
        .rsplit_once('/')
        .and_then(|(parent, _)| schema.pointer(parent));
    let names: Vec<String> = object
        .and_then(|object| object.get("properties"))
        .and_then(Value::as_object)
        .map(|properties| properties.keys().map(|k| format!("`{k}`")).collect())
        .unwrap_or_default();
    let what = if top_level { "arguments" } else { "keys" };
    if names.is_empty() {
        format!("no {what} here")
    } else {
        format!("one of the {what} {}", names.join(", "))
    }
}
