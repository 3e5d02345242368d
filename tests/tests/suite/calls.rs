//! Calling tools through the server: every return form, injection, and bad input.

// Async tools without awaits are the point here: both forms must work.
#![allow(clippy::unused_async)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use aleph_tools::ToolServerBuilder;
use aleph_tools::prelude::*;
use aleph_tools::{ProgressEvent, RegistryError, ToolErrorKind};
use serde_json::{Value, json};

/// Add two integers.
#[tool(register = false)]
fn add(
    /// First addend
    a: i64,
    /// Second addend
    b: i64,
) -> i64 {
    a + b
}

/// Divide, failing on zero.
#[tool(register = false)]
async fn divide(a: f64, b: f64) -> Result<f64, String> {
    if b == 0.0 {
        Err("cannot divide by zero; pass a non-zero `b`".to_owned())
    } else {
        Ok(a / b)
    }
}

/// Fail through anyhow with context.
#[tool(register = false)]
fn read_config(path: String) -> anyhow::Result<String> {
    use anyhow::Context as _;
    std::fs::read_to_string(&path).with_context(|| format!("could not read `{path}`"))
}

/// Refuse with a `ToolError` of a chosen kind.
#[tool(register = false)]
fn guarded(secret: String) -> Result<String, ToolError> {
    if secret == "open sesame" {
        Ok("in".to_owned())
    } else {
        Err(ToolError::permission_denied("guarded", "wrong secret"))
    }
}

/// Return nothing.
#[tool(register = false)]
async fn noop() {}

/// Text for the model, data for code.
#[tool(register = false)]
fn weather(city: String) -> ToolOutput {
    ToolOutput::new(
        format!("Sunny in {city}"),
        json!({ "city": city, "sky": "clear" }),
    )
}

/// Text only.
#[tool(register = false)]
fn shout(text: String) -> ToolOutput {
    ToolOutput::text(text.to_uppercase())
}

struct Counter(AtomicUsize);

/// Count calls in shared state.
#[tool(register = false)]
fn bump(counter: State<Counter>, ctx: &ToolContext) -> Value {
    let n = counter.0.fetch_add(1, Ordering::SeqCst) + 1;
    json!({ "count": n, "tool": ctx.tool_name(), "call_id": ctx.call_id() })
}

/// Stream two chunks.
#[tool(register = false)]
async fn stream(progress: Progress) -> &'static str {
    progress.chunk("one");
    progress.report(1.0, Some(2.0), Some("half"));
    progress.chunk("two");
    "done"
}

/// Wait until cancelled.
#[tool(register = false)]
async fn wait_for_cancel(cancel: CancellationToken) -> &'static str {
    cancel.cancelled().await;
    "saw cancellation"
}

/// Sleep past its own limit.
#[tool(register = false, timeout = "50ms")]
async fn too_slow() -> u8 {
    tokio::time::sleep(Duration::from_secs(30)).await;
    1
}

/// Panic on purpose.
#[tool(register = false)]
fn explode(message: String) -> u8 {
    panic!("{message}");
}

fn server() -> AlephToolServer {
    builder().build().unwrap()
}

fn builder() -> ToolServerBuilder {
    AlephToolServer::builder()
        .with_tool(AddTool)
        .with_tool(DivideTool)
        .with_tool(ReadConfigTool)
        .with_tool(GuardedTool)
        .with_tool(NoopTool)
        .with_tool(WeatherTool)
        .with_tool(ShoutTool)
        .with_tool(BumpTool)
        .with_tool(StreamTool)
        .with_tool(WaitForCancelTool)
        .with_tool(TooSlowTool)
        .with_tool(ExplodeTool)
        .with_state(Counter(AtomicUsize::new(0)))
}

fn failure(result: &ToolResult) -> (String, ToolErrorKind) {
    assert!(!result.success, "expected a failure, got {result:?}");
    assert_eq!(result.output, Value::Null);
    (result.error.clone().unwrap(), result.error_kind.unwrap())
}

#[tokio::test]
async fn plain_output_becomes_the_json_output() {
    let result = server().call("add", json!({ "a": 2, "b": 3 })).await;
    assert!(result.success);
    assert_eq!(result.output, json!(5));
    assert_eq!(result.error, None);
    assert_eq!(result.model_text(), "5");
}

#[tokio::test]
async fn result_forms_map_errors_to_execution_errors() {
    let s = server();
    assert_eq!(
        s.call("divide", json!({ "a": 1.0, "b": 4.0 })).await.output,
        json!(0.25)
    );
    let (message, kind) = failure(&s.call("divide", json!({ "a": 1.0, "b": 0.0 })).await);
    assert_eq!(message, "cannot divide by zero; pass a non-zero `b`");
    assert_eq!(kind, ToolErrorKind::Execution);
}

#[tokio::test]
async fn anyhow_errors_keep_their_chain_of_causes() {
    let result = server()
        .call("read_config", json!({ "path": "/no/such/file" }))
        .await;
    let (message, _) = failure(&result);
    assert!(
        message.starts_with("could not read `/no/such/file`: "),
        "{message}"
    );
    assert!(
        message.contains("No such file"),
        "the cause is kept: {message}"
    );
}

#[tokio::test]
async fn a_tool_error_returned_by_the_tool_keeps_its_kind() {
    let s = server();
    let result = s.call("guarded", json!({ "secret": "guess" })).await;
    let (message, kind) = failure(&result);
    assert_eq!(kind, ToolErrorKind::PermissionDenied);
    assert_eq!(message, "permission denied for `guarded`: wrong secret");
    assert_eq!(
        s.call("guarded", json!({ "secret": "open sesame" }))
            .await
            .output,
        json!("in")
    );
}

#[tokio::test]
async fn unit_output_is_null() {
    let result = server().call("noop", json!({})).await;
    assert!(result.success);
    assert_eq!(result.output, Value::Null);
    assert_eq!(result.model_text(), "");
}

#[tokio::test]
async fn tool_output_carries_text_and_data() {
    let s = server();
    let result = s.call("weather", json!({ "city": "Porto" })).await;
    assert_eq!(result.content, [Content::text("Sunny in Porto")]);
    assert_eq!(result.output, json!({ "city": "Porto", "sky": "clear" }));
    assert_eq!(result.model_text(), "Sunny in Porto");

    let result = s.call("shout", json!({ "text": "hey" })).await;
    assert_eq!(result.output, json!("HEY"));
    assert_eq!(result.model_text(), "HEY");
}

#[tokio::test]
async fn state_and_context_are_injected() {
    let s = server();
    let first = s.call("bump", json!({})).await;
    let second = s.call("bump", Value::Null).await;
    assert_eq!(first.output["count"], 1);
    assert_eq!(second.output["count"], 2);
    assert_eq!(first.output["tool"], "bump");
    assert_ne!(first.output["call_id"], second.output["call_id"]);
}

#[test]
fn missing_state_is_a_clear_error() {
    let err = AlephToolServer::builder()
        .with_tool(BumpTool)
        .build()
        .unwrap_err();
    let message = err.to_string();
    assert!(matches!(err, RegistryError::MissingState { .. }));
    assert!(
        message.contains("calls::Counter") && message.contains("with_state"),
        "{message}"
    );
}

#[tokio::test]
async fn progress_reaches_the_context_listener() {
    let s = server();
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = Arc::clone(&seen);
    let ctx = ToolContext::new()
        .with_progress(move |tool, event| sink.lock().unwrap().push((tool.to_owned(), event)));
    let result = s.call("stream", json!({})).context(ctx).await;
    assert_eq!(result.output, json!("done"));
    let seen = seen.lock().unwrap();
    assert_eq!(
        *seen,
        vec![
            (
                "stream".to_owned(),
                ProgressEvent::Chunk { text: "one".into() }
            ),
            (
                "stream".to_owned(),
                ProgressEvent::Progress {
                    progress: 1.0,
                    total: Some(2.0),
                    message: Some("half".into())
                }
            ),
            (
                "stream".to_owned(),
                ProgressEvent::Chunk { text: "two".into() }
            ),
        ]
    );
}

#[tokio::test]
async fn cancellation_ends_a_running_tool() {
    let s = server();
    let token = CancellationToken::new();
    let ctx = ToolContext::new().with_cancellation(token.clone());
    let handle = s.clone();
    let call =
        tokio::spawn(async move { handle.call("wait_for_cancel", json!({})).context(ctx).await });
    tokio::time::sleep(Duration::from_millis(20)).await;
    token.cancel();
    let result = call.await.unwrap();
    assert_eq!(
        result.error_kind,
        Some(ToolErrorKind::Cancelled),
        "{result:?}"
    );
}

#[tokio::test]
async fn a_tool_past_its_timeout_is_stopped() {
    let result = server().call("too_slow", json!({})).await;
    let (message, kind) = failure(&result);
    assert_eq!(kind, ToolErrorKind::Timeout);
    assert_eq!(message, "`too_slow` did not finish within 50ms");
}

#[tokio::test]
async fn the_server_default_timeout_applies_to_tools_without_one() {
    /// Sleep a while.
    #[tool(register = false)]
    async fn nap() {
        tokio::time::sleep(Duration::from_secs(30)).await;
    }
    let s = AlephToolServer::builder()
        .with_tool(NapTool)
        .with_default_timeout(Duration::from_millis(20))
        .build()
        .unwrap();
    assert_eq!(
        failure(&s.call("nap", json!({})).await).1,
        ToolErrorKind::Timeout
    );
}

#[tokio::test]
async fn a_panicking_tool_becomes_an_error_and_the_server_keeps_serving() {
    let s = server();
    let (message, kind) = failure(&s.call("explode", json!({ "message": "boom" })).await);
    assert_eq!(kind, ToolErrorKind::Panicked);
    assert_eq!(message, "`explode` failed unexpectedly: boom");
    for i in 0..1_000 {
        let result = s.call("add", json!({ "a": i, "b": 1 })).await;
        assert_eq!(result.output, json!(i + 1));
    }
}

#[tokio::test]
async fn bad_input_names_the_field_or_the_tool() {
    let s = server();
    let cases = [
        (
            "add",
            json!("2 + 3"),
            ToolErrorKind::InvalidArgs,
            "the arguments: expected a JSON object of named arguments, received the string \"2 + 3\"",
        ),
        (
            "add",
            json!([2, 3]),
            ToolErrorKind::InvalidArgs,
            "received an array of 2 items",
        ),
        (
            "add",
            json!(42),
            ToolErrorKind::InvalidArgs,
            "received the number 42",
        ),
        (
            "add",
            json!({ "a": "two", "b": 3 }),
            ToolErrorKind::InvalidArgs,
            "`/a`: expected an integer, received the string \"two\"",
        ),
        (
            "add",
            json!({ "a": 1.5, "b": 3 }),
            ToolErrorKind::InvalidArgs,
            "`/a`: expected an integer, received the number 1.5",
        ),
        (
            "add",
            json!({ "a": 2 }),
            ToolErrorKind::InvalidArgs,
            "`/b`: expected a value for this required argument, received nothing",
        ),
        (
            "add",
            json!({}),
            ToolErrorKind::InvalidArgs,
            "- `/a`: expected a value for this required argument, received nothing\n- `/b`",
        ),
        (
            "weather",
            json!({ "city": null }),
            ToolErrorKind::InvalidArgs,
            "`/city`: expected a string, received null",
        ),
        (
            "ad",
            json!({}),
            ToolErrorKind::NotFound,
            "unknown tool `ad`; did you mean `add`?",
        ),
        ("", json!({}), ToolErrorKind::NotFound, "unknown tool ``"),
        (
            "zzzz",
            json!({}),
            ToolErrorKind::NotFound,
            "unknown tool `zzzz`",
        ),
    ];
    for (name, args, kind, needle) in cases {
        let result = s.call(name, args.clone()).await;
        let (message, got) = failure(&result);
        assert_eq!(got, kind, "{name}({args}): {message}");
        assert!(
            message.contains(needle),
            "{name}({args}): `{message}` lacks `{needle}`"
        );
    }
    let (message, _) = failure(&s.call("add", json!({ "a": "x", "b": 1 })).await);
    assert!(
        message.ends_with("Fix the arguments and call `add` again."),
        "{message}"
    );
}

#[tokio::test]
async fn serialized_results_have_the_documented_keys() {
    let ok = serde_json::to_value(server().call("add", json!({ "a": 1, "b": 1 })).await).unwrap();
    let keys: Vec<&str> = ok.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, ["duration_ms", "error", "output", "success"]);
    let err = serde_json::to_value(server().call("nope", json!({})).await).unwrap();
    assert_eq!(err["success"], false);
    assert_eq!(err["error_kind"], "not_found");
}

#[tokio::test]
async fn typed_calls_skip_json_entirely() {
    let output = AddTool
        .call(AddArgs { a: 20, b: 22 }, &ToolContext::new())
        .await
        .unwrap();
    assert_eq!(output, 42);
    // The same tool called with JSON, alone, as any `AlephToolDyn` is.
    let ctx = ToolContext::new();
    let json_output = aleph_tools::AlephToolDyn::call(&AddTool, json!({ "a": 1, "b": 2 }), &ctx)
        .await
        .unwrap();
    assert_eq!(json_output.data, Some(json!(3)));
    // The function stays callable as written.
    assert_eq!(add(1, 2), 3);
}

#[tokio::test]
async fn errors_inside_nested_arguments_name_the_exact_position() {
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct Point {
        x: i32,
        y: i32,
    }
    /// Sum points.
    #[tool(register = false)]
    fn sum(points: Vec<Point>) -> i32 {
        points.iter().map(|p| p.x + p.y).sum()
    }
    let s = AlephToolServer::builder()
        .with_tool(SumTool)
        .build()
        .unwrap();
    let ok = s
        .call(
            "sum",
            json!({ "points": [{ "x": 1, "y": 2 }, { "x": 3, "y": 4 }] }),
        )
        .await;
    assert_eq!(ok.output, json!(10));
    let (message, kind) = failure(
        &s.call("sum", json!({ "points": [{ "x": 1, "y": "two" }] }))
            .await,
    );
    assert_eq!(kind, ToolErrorKind::InvalidArgs);
    assert!(
        message.contains("`/points/0/y`: expected an integer, received the string \"two\""),
        "{message}"
    );
}

#[tokio::test]
async fn strict_tools_reject_unknown_arguments_by_name() {
    /// Strictly one argument.
    #[tool(register = false, strict)]
    fn only_x(x: i32) -> i32 {
        x
    }
    let s = AlephToolServer::builder()
        .with_tool(OnlyXTool)
        .build()
        .unwrap();
    let (message, _) = failure(&s.call("only_x", json!({ "x": 1, "a/b~c": 2 })).await);
    assert!(
        message.contains("`/a~1b~0c`: expected one of the arguments `x`, received an unknown key"),
        "{message}"
    );
    // Non-strict tools ignore extra keys, as models often send them.
    let lenient = AlephToolServer::builder()
        .with_tool(AddTool)
        .build()
        .unwrap();
    assert!(
        lenient
            .call("add", json!({ "a": 1, "b": 2, "note": "extra" }))
            .await
            .success
    );
}

#[tokio::test]
async fn a_call_context_state_wins_over_the_server_state_and_the_server_fills_the_rest() {
    struct Label(&'static str);
    /// Read two kinds of state.
    #[tool(register = false)]
    fn labels(label: State<Label>, counter: State<Counter>) -> String {
        format!("{}:{}", label.0, counter.0.load(Ordering::SeqCst))
    }
    let s = AlephToolServer::builder()
        .with_tool(LabelsTool)
        .with_state(Label("server"))
        .with_state(Counter(AtomicUsize::new(7)))
        .build()
        .unwrap();
    assert_eq!(s.call("labels", json!({})).await.output, json!("server:7"));
    let ctx = ToolContext::new().with_state(Label("call"));
    assert_eq!(
        s.call("labels", json!({})).context(ctx).await.output,
        json!("call:7")
    );
}

#[tokio::test]
async fn the_working_directory_reaches_the_tool() {
    /// Report the working directory.
    #[tool(register = false)]
    fn where_am_i(ctx: &ToolContext) -> Option<String> {
        ctx.working_dir().map(|dir| dir.display().to_string())
    }
    let s = AlephToolServer::builder()
        .with_tool(WhereAmITool)
        .with_working_dir("/srv/work")
        .build()
        .unwrap();
    assert_eq!(
        s.call("where_am_i", json!({})).await.output,
        json!("/srv/work")
    );
    let ctx = ToolContext::new().with_working_dir("/elsewhere");
    assert_eq!(
        s.call("where_am_i", json!({})).context(ctx).await.output,
        json!("/elsewhere")
    );
    let bare = AlephToolServer::builder()
        .with_tool(WhereAmITool)
        .build()
        .unwrap();
    assert_eq!(bare.call("where_am_i", json!({})).await.output, Value::Null);
}

/// A value built from the context rather than the model's arguments.
struct RequestTag(String);

impl aleph_tools::FromToolContext for RequestTag {
    fn from_tool_context(ctx: &ToolContext) -> Result<Self, ToolError> {
        match ctx.caller() {
            Caller::Human => Ok(Self(format!("human#{}", ctx.call_id()))),
            _ => Err(ToolError::permission_denied(
                ctx.tool_name().unwrap_or_default(),
                "humans only",
            )),
        }
    }
}

#[tokio::test]
async fn custom_injected_parameters_and_the_caller() {
    /// Tag the request.
    #[tool(register = false, callers = [human, code_execution])]
    fn tagged(#[arg(inject)] tag: RequestTag, caller: Caller) -> String {
        format!("{} {caller:?}", tag.0)
    }
    let s = AlephToolServer::builder()
        .with_tool(TaggedTool)
        .build()
        .unwrap();
    assert!(
        TaggedTool.definition().parameters["properties"]
            .as_object()
            .unwrap()
            .is_empty()
    );
    let human = s.call("tagged", json!({})).await;
    assert!(
        human.output.as_str().unwrap().starts_with("human#"),
        "{human:?}"
    );
    assert!(
        human.output.as_str().unwrap().ends_with(" Human"),
        "{human:?}"
    );
    let ctx = ToolContext::new().with_caller(Caller::CodeExecution);
    let (message, kind) = failure(&s.call("tagged", json!({})).context(ctx).await);
    assert_eq!(kind, ToolErrorKind::PermissionDenied);
    assert_eq!(message, "permission denied for `tagged`: humans only");
}

#[tokio::test]
async fn allowed_callers_are_enforced() {
    /// Only for sandboxed code.
    #[tool(register = false, callers = [code_execution])]
    fn sandbox_only() {}
    /// For both.
    #[tool(register = false, callers = [human, code_execution])]
    fn anyone() {}
    let s = AlephToolServer::builder()
        .with_tool(SandboxOnlyTool)
        .with_tool(AnyoneTool)
        .with_tool(AddTool)
        .build()
        .unwrap();
    let code = || ToolContext::new().with_caller(Caller::CodeExecution);

    let (message, kind) = failure(&s.call("sandbox_only", json!({})).await);
    assert_eq!(kind, ToolErrorKind::PermissionDenied);
    assert_eq!(
        message,
        "permission denied for `sandbox_only`: it may not be called by the model in conversation"
    );
    assert!(
        s.call("sandbox_only", json!({}))
            .context(code())
            .await
            .success
    );

    let args = json!({ "a": 1, "b": 2 });
    let (message, _) = failure(&s.call("add", args.clone()).context(code()).await);
    assert!(
        message.ends_with("it may not be called by code running in a sandbox"),
        "{message}"
    );
    assert!(s.call("add", args).await.success, "human only by default");

    assert!(s.call("anyone", json!({})).await.success);
    assert!(s.call("anyone", json!({})).context(code()).await.success);
}

/// What a parse gives, under a name of its own.
type Parsed<T> = Result<T, std::num::ParseIntError>;

/// Read a number.
#[tool(register = false, result)]
fn read_number(text: String) -> Parsed<u8> {
    text.parse()
}

#[tokio::test]
async fn a_result_under_another_name_fails_the_call_with_its_error() {
    let server = AlephToolServer::builder()
        .with_tool(ReadNumberTool)
        .build()
        .unwrap();
    let read = server.call("read_number", json!({ "text": "42" })).await;
    assert_eq!(read.output, json!(42));
    let failed = server.call("read_number", json!({ "text": "forty" })).await;
    assert_eq!(failed.error_kind, Some(ToolErrorKind::Execution));
    assert!(
        failed.error.unwrap().contains("invalid digit"),
        "the error's own message"
    );
}
