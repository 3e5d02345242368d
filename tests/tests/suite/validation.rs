//! Arguments are checked against the tool's schema before it runs, and every problem comes
//! back in one format: where (JSON pointer), what was expected, what came, what is allowed.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use aleph_tools::ToolServerBuilder;
use aleph_tools::prelude::*;
use aleph_tools::{AlephToolDyn, ArgumentProblem, BoxFuture, RegistryError, ToolErrorKind};
use serde_json::{Value, json};

/// Units for a reading.
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Unit {
    /// Degrees Celsius
    Celsius,
    /// Degrees Fahrenheit
    Fahrenheit,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[allow(dead_code, reason = "only deserialized")]
struct Window {
    from: u32,
    to: u32,
}

/// Read a sensor.
#[tool(register = false)]
fn read_sensor(
    /// Sensor id
    id: u8,
    unit: Unit,
    window: Option<Window>,
    tags: Vec<String>,
) -> String {
    let _ = (unit, window, tags);
    format!("sensor {id}")
}

fn server() -> AlephToolServer {
    builder().build().unwrap()
}

fn builder() -> ToolServerBuilder {
    AlephToolServer::builder().with_tool(ReadSensorTool)
}

fn problems(result: &ToolResult) -> String {
    assert!(!result.success, "expected a failure, got {result:?}");
    assert_eq!(result.error_kind, Some(ToolErrorKind::InvalidArgs));
    result.error.clone().unwrap()
}

#[tokio::test]
async fn valid_arguments_pass() {
    let result = server()
        .call(
            "read_sensor",
            json!({ "id": 7, "unit": "celsius", "tags": ["a"], "window": { "from": 1, "to": 2 } }),
        )
        .await;
    assert!(result.success, "{result:?}");
    assert_eq!(result.output, json!("sensor 7"));
}

#[tokio::test]
async fn an_enum_lists_the_allowed_values() {
    let result = server()
        .call(
            "read_sensor",
            json!({ "id": 1, "unit": "kelvin", "tags": [] }),
        )
        .await;
    assert_eq!(
        problems(&result),
        "invalid arguments for `read_sensor`: `/unit`: expected one of the allowed values, \
         received the string \"kelvin\"; allowed: \"celsius\", \"fahrenheit\". \
         Fix the arguments and call `read_sensor` again."
    );
}

#[tokio::test]
async fn every_problem_is_listed_with_its_exact_position() {
    let result = server()
        .call(
            "read_sensor",
            json!({ "id": 300, "unit": 5, "tags": ["ok", 2], "window": { "from": "soon" } }),
        )
        .await;
    let message = problems(&result);
    for needle in [
        "- `/id`: expected a number of at most 255, received the number 300",
        "- `/unit`: ",
        "- `/tags/1`: expected a string, received the number 2",
        "- `/window/from`: expected an integer, received the string \"soon\"",
        "- `/window/to`: expected a value for this required argument, received nothing",
    ] {
        assert!(message.contains(needle), "`{message}` lacks `{needle}`");
    }
    assert!(message.starts_with("invalid arguments for `read_sensor`:\n"));
    assert!(message.ends_with("Fix the arguments and call `read_sensor` again."));
}

#[tokio::test]
async fn null_means_no_arguments_and_other_non_objects_are_refused() {
    /// Takes nothing.
    #[tool(register = false)]
    fn ping() -> &'static str {
        "pong"
    }
    let s = AlephToolServer::builder()
        .with_tool(PingTool)
        .build()
        .unwrap();
    assert!(s.call("ping", Value::Null).await.success);
    let message = problems(&s.call("ping", json!(["x"])).await);
    assert!(
        message.contains(
            "the arguments: expected a JSON object of named arguments, received an array of 1 items"
        ),
        "{message}"
    );
}

/// A hand-written tool with a hand-written schema, which the server enforces.
struct Counter {
    runs: Arc<AtomicUsize>,
    schema: Value,
}

impl AlephToolDyn for Counter {
    fn name(&self) -> &'static str {
        "count"
    }

    fn definition(&self) -> ToolDefinition {
        ToolDefinition::new("count", "Count up.", self.schema.clone())
    }

    fn call<'a>(
        &'a self,
        _args: Value,
        _ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        self.runs.fetch_add(1, Ordering::SeqCst);
        Box::pin(async { Ok(ToolOutput::text("counted")) })
    }
}

#[tokio::test]
async fn dynamic_tools_are_held_to_their_schema_and_never_run_on_bad_arguments() {
    let runs = Arc::new(AtomicUsize::new(0));
    let s = AlephToolServer::new();
    s.add(Counter {
        runs: Arc::clone(&runs),
        schema: json!({
            "type": "object",
            "properties": {
                "step": { "type": "integer", "minimum": 1, "maximum": 10 },
                "label": { "type": "string", "minLength": 2, "pattern": "^[a-z]+$" },
                "mode": { "const": "fast" }
            },
            "required": ["step"],
            "additionalProperties": false
        }),
    })
    .unwrap();
    let cases = [
        (
            json!({ "step": 0 }),
            "`/step`: expected a number of at least 1, received the number 0",
        ),
        (
            json!({ "step": 11 }),
            "`/step`: expected a number of at most 10, received the number 11",
        ),
        (
            json!({ "step": 1, "label": "a" }),
            "`/label`: expected a string of at least 2 characters",
        ),
        (
            json!({ "step": 1, "label": "AB" }),
            "`/label`: expected a string matching the pattern `^[a-z]+$`",
        ),
        (
            json!({ "step": 1, "mode": "slow" }),
            "`/mode`: expected exactly \"fast\", received the string \"slow\"; allowed: \"fast\"",
        ),
        (
            json!({ "step": 1, "extra": true }),
            "`/extra`: expected one of the arguments `label`, `mode`, `step`, received an unknown key",
        ),
        (
            json!({}),
            "`/step`: expected a value for this required argument, received nothing",
        ),
    ];
    for (args, needle) in cases {
        let message = problems(&s.call("count", args.clone()).await);
        assert!(
            message.contains(needle),
            "{args}: `{message}` lacks `{needle}`"
        );
    }
    assert_eq!(
        runs.load(Ordering::SeqCst),
        0,
        "the tool ran on bad arguments"
    );
    assert!(s.call("count", json!({ "step": 3 })).await.success);
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[test]
fn a_schema_that_is_not_json_schema_is_refused_when_added() {
    let s = AlephToolServer::new();
    let err = s
        .add(Counter {
            runs: Arc::default(),
            schema: json!({ "type": "object", "properties": { "x": { "type": "integer", "minimum": "one" } } }),
        })
        .unwrap_err();
    assert!(
        matches!(&err, RegistryError::InvalidDefinition { name, reason }
            if name == "count" && reason.starts_with("its input schema is not a valid JSON Schema")),
        "{err}"
    );
    assert!(s.is_empty());
}

/// A type whose rules go beyond its schema: serde's error comes back in the same format.
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(try_from = "String")]
struct Even(#[allow(dead_code)] String);

impl TryFrom<String> for Even {
    type Error = String;

    fn try_from(value: String) -> Result<Self, String> {
        if value.len().is_multiple_of(2) {
            Ok(Self(value))
        } else {
            Err(format!(
                "invalid value: an odd-length string, expected an even-length string (got {} characters)",
                value.len()
            ))
        }
    }
}

/// Accepts even-length words.
#[tool(register = false)]
fn even_word(word: Even) -> bool {
    let _ = word;
    true
}

#[tokio::test]
async fn deserialization_errors_past_the_schema_use_the_same_format() {
    let s = AlephToolServer::builder()
        .with_tool(EvenWordTool)
        .build()
        .unwrap();
    assert!(s.call("even_word", json!({ "word": "ab" })).await.success);
    let message = problems(&s.call("even_word", json!({ "word": "abc" })).await);
    assert_eq!(
        message,
        "invalid arguments for `even_word`: `/word`: expected an even-length string (got 3 characters), \
         received an odd-length string. Fix the arguments and call `even_word` again."
    );
}

#[test]
fn argument_problems_render_and_serialize() {
    let problem = ArgumentProblem::new("/limit", "a positive number")
        .received("the number -1")
        .allowed([json!(1), json!(2)]);
    assert_eq!(
        problem.to_string(),
        "`/limit`: expected a positive number, received the number -1; allowed: 1, 2"
    );
    let error = ToolError::invalid_args("t", vec![problem.clone()]);
    assert_eq!(
        error.to_string(),
        "invalid arguments for `t`: `/limit`: expected a positive number, received the number -1; allowed: 1, 2. Fix the arguments and call `t` again."
    );
    let json = serde_json::to_value(&problem).unwrap();
    assert_eq!(json["pointer"], "/limit");
    let back: ArgumentProblem = serde_json::from_value(json).unwrap();
    assert_eq!(back, problem);
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Paging {
    page: u32,
    /// Items per page
    #[serde(default)]
    per_page: u32,
}

/// Search with optional settings, as a strict-mode model fills them in.
#[tool(register = false)]
fn search_nulls(
    query: String,
    #[arg(default = 10)] limit: u32,
    paging: Option<Paging>,
    note: Option<String>,
) -> String {
    let paging = paging.map(|p| (p.page, p.per_page));
    format!("{query} {limit} {paging:?} {note:?}")
}

#[tokio::test]
async fn null_for_an_optional_argument_means_absent() {
    let server = AlephToolServer::builder()
        .with_tool(SearchNullsTool)
        .build()
        .unwrap();
    // Strict mode sends every argument; the optional ones it leaves out come as null.
    let result = server
        .call(
            "search_nulls",
            json!({ "query": "q", "limit": null, "paging": { "page": 2, "per_page": null }, "note": null }),
        )
        .await;
    assert!(result.success, "{result:?}");
    assert_eq!(result.output, "q 10 Some((2, 0)) None");
    let dropped: Vec<&str> = result
        .coercions
        .iter()
        .map(|c| c.pointer.as_str())
        .collect();
    assert_eq!(
        dropped,
        ["/limit", "/paging/per_page"],
        "`note` takes null as it is"
    );
    assert!(
        result
            .coercions
            .iter()
            .all(|c| c.kind == aleph_tools::CoercionKind::NullAsAbsent)
    );

    // A null for a required argument is still an error, naming it.
    let result = server.call("search_nulls", json!({ "query": null })).await;
    assert_eq!(result.error_kind, Some(ToolErrorKind::InvalidArgs));
    assert!(result.error.unwrap().contains("`/query`"));
    // Nulls dropped but another problem remains: the error is about that one only.
    let result = server
        .call("search_nulls", json!({ "query": 5, "limit": null }))
        .await;
    let error = result.error.unwrap();
    assert!(
        error.contains("`/query`") && !error.contains("`/limit`"),
        "{error}"
    );
}
