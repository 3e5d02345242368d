//! The server reads a call's arguments one of several ways: a `#[tool]` served straight to
//! the tool deserializes them as they came (JSON text or a value) and consults the schema
//! only when serde refuses; every other call (layers, confirmation, argument repair, schemas
//! with limits serde does not check) is checked after the last layer, and read into the
//! tool's arguments once. Whatever the way, a call gets the same answer.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use aleph_tools::middleware::{self, Listen, Next, ToolCall, ToolProgressHandler};
use aleph_tools::prelude::*;
use aleph_tools::{AlephTool, ProgressEvent, ToolErrorKind};
use serde_json::{Value, json};

/// Units for a reading.
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Unit {
    Celsius,
    Fahrenheit,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
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
    #[arg(default = 3)] samples: u16,
    tags: Vec<String>,
) -> String {
    let unit = match unit {
        Unit::Celsius => "C",
        Unit::Fahrenheit => "F",
    };
    let window = window.map(|w| (w.from, w.to));
    format!("sensor {id} in {unit}, {samples} samples, window {window:?}, tags {tags:?}")
}

/// Arguments as a model might send them, good and bad.
const CASES: &[&str] = &[
    r#"{"id": 7, "unit": "celsius", "tags": ["a"]}"#,
    r#"{"id": 7, "unit": "celsius", "tags": [], "window": {"from": 1, "to": 2}, "samples": 9}"#,
    r#"{"id": 7, "unit": "celsius", "tags": [], "window": null, "samples": null}"#,
    r#"{"id": 300, "unit": "celsius", "tags": []}"#,
    r#"{"id": -1, "unit": "kelvin", "tags": "a"}"#,
    r#"{"id": "7", "unit": "celsius", "tags": []}"#,
    r#"{"id": 7, "unit": "celsius", "tags": [], "window": {"from": 1, "to": 2, "step": 1}}"#,
    r#"{"id": 7, "unit": "celsius", "tags": [], "extra": true}"#,
    r#"{"unit": "celsius"}"#,
    r#"{"id": 7.5, "unit": "celsius", "tags": []}"#,
    r#"{"id": 7, "unit": "celsius", "tags": [1, 2]}"#,
    r#"{"id": 7, "id": 8, "unit": "celsius", "tags": []}"#,
    "[1, 2]",
    r#"[7, "celsius", null, 3, []]"#,
    r#"{"id": 7, "unit": "celsius", "tags": [], "window": [1, 2]}"#,
    "null",
    "{}",
];

/// A result with its timing cleared, to compare results of different runs.
fn untimed(mut result: ToolResult) -> ToolResult {
    result.duration_ms = 0;
    result
}

/// A layer that passes every call on unchanged.
fn pass_through() -> impl middleware::Middleware {
    middleware::from_fn(|call: ToolCall, next: Next| next.run(call))
}

#[tokio::test]
async fn text_values_and_the_checked_path_answer_alike() {
    let direct = AlephToolServer::builder()
        .with_tool(ReadSensorTool)
        .build()
        .unwrap();
    let layered = AlephToolServer::builder()
        .with_tool(ReadSensorTool)
        .with_middleware(pass_through())
        .build()
        .unwrap();
    let mut failures = 0;
    for text in CASES {
        let value: Value = serde_json::from_str(text).unwrap();
        let from_text = untimed(direct.call_str("read_sensor", text).await);
        let from_value = untimed(direct.call("read_sensor", value.clone()).await);
        let checked = untimed(layered.call("read_sensor", value).await);
        assert_eq!(from_text, from_value, "text and value differ on {text}");
        assert_eq!(from_value, checked, "direct and checked differ on {text}");
        if !from_text.success {
            failures += 1;
            assert_eq!(
                from_text.error_kind,
                Some(ToolErrorKind::InvalidArgs),
                "{text}"
            );
        }
    }
    assert_eq!(failures, 12, "the corpus has twelve bad calls");
}

#[tokio::test]
async fn every_problem_is_listed_whichever_way_the_arguments_came() {
    let server = AlephToolServer::builder()
        .with_tool(ReadSensorTool)
        .build()
        .unwrap();
    let result = server
        .call_str(
            "read_sensor",
            r#"{"id": -1, "unit": "kelvin", "tags": "a"}"#,
        )
        .await;
    let error = result.error.unwrap();
    for needle in [
        "`/id`: expected a number of at least 0, received the number -1",
        "`/unit`: expected one of the allowed values, received the string \"kelvin\"; allowed: \"celsius\", \"fahrenheit\"",
        "`/tags`: expected an array, received the string \"a\"",
    ] {
        assert!(error.contains(needle), "`{error}` lacks `{needle}`");
    }
}

#[tokio::test]
async fn text_that_is_not_json_is_an_argument_error() {
    let server = AlephToolServer::builder()
        .with_tool(ReadSensorTool)
        .build()
        .unwrap();
    for text in [
        r#"{"id": 7, "unit": "#,
        "{'id': 7}",
        r#"{"id": 7} trailing"#,
    ] {
        let result = server.call_str("read_sensor", text).await;
        assert_eq!(
            result.error_kind,
            Some(ToolErrorKind::InvalidArgs),
            "{text}"
        );
        let error = result.error.unwrap();
        assert!(
            error.contains("received text that is not valid JSON"),
            "{text}: {error}"
        );
    }
    // Blank text is no arguments, so the required ones are missing.
    let error = server.call_str("read_sensor", "  ").await.error.unwrap();
    assert!(
        error.contains("`/id`: expected a value for this required argument"),
        "{error}"
    );
    // The server keeps serving.
    let good = r#"{"id": 1, "unit": "fahrenheit", "tags": []}"#;
    assert!(server.call_str("read_sensor", good).await.success);
}

/// Count up to a limit.
#[tool(register = false)]
fn bounded(
    /// How far to count
    #[schemars(range(min = 1, max = 10))]
    count: u32,
    /// A word of lowercase letters
    #[schemars(regex(pattern = r"^[a-z]+$"))]
    word: Option<String>,
) -> u32 {
    let _ = word;
    count
}

#[tokio::test]
async fn limits_serde_does_not_check_are_always_checked() {
    let server = AlephToolServer::builder()
        .with_tool(BoundedTool)
        .build()
        .unwrap();
    assert!(server.call_str("bounded", r#"{"count": 10}"#).await.success);
    for (text, needle) in [
        (
            r#"{"count": 11}"#,
            "`/count`: expected a number of at most 10",
        ),
        (
            r#"{"count": 0}"#,
            "`/count`: expected a number of at least 1",
        ),
        (
            r#"{"count": 2, "word": "A1"}"#,
            "`/word`: expected a string matching the pattern `^[a-z]+$`",
        ),
    ] {
        let error = server.call_str("bounded", text).await.error.unwrap();
        assert!(error.contains(needle), "{text}: `{error}` lacks `{needle}`");
        let error = server
            .call("bounded", serde_json::from_str(text).unwrap())
            .await
            .error
            .unwrap();
        assert!(error.contains(needle), "{text}: `{error}` lacks `{needle}`");
    }
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct ColorArgs {
    /// A color name
    color: String,
}

/// A hand-written tool whose schema says more than its arguments type.
struct Paint {
    runs: Arc<AtomicUsize>,
}

impl AlephTool for Paint {
    const NAME: &'static str = "paint";
    const DESCRIPTION: &'static str = "Paint with a primary color.";
    type Args = ColorArgs;
    type Output = String;

    fn input_schema() -> Arc<Value> {
        Arc::new(json!({
            "type": "object",
            "properties": { "color": { "type": "string", "enum": ["red", "green", "blue"] } },
            "required": ["color"],
        }))
    }

    async fn call(&self, args: ColorArgs, _ctx: &ToolContext) -> Result<String, ToolError> {
        self.runs.fetch_add(1, Ordering::SeqCst);
        Ok(args.color)
    }
}

#[tokio::test]
async fn a_schema_of_its_own_is_checked_though_serde_would_accept() {
    let runs = Arc::new(AtomicUsize::new(0));
    let server = AlephToolServer::builder()
        .with_tool(Paint {
            runs: Arc::clone(&runs),
        })
        .build()
        .unwrap();
    let result = server.call_str("paint", r#"{"color": "mauve"}"#).await;
    let error = result.error.unwrap();
    assert!(
        error.contains("allowed: \"red\", \"green\", \"blue\""),
        "{error}"
    );
    assert_eq!(
        runs.load(Ordering::SeqCst),
        0,
        "ran on a color outside the schema"
    );
    assert_eq!(
        server.call_str("paint", r#"{"color": "red"}"#).await.output,
        "red"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

/// A type whose deserialization panics on one value.
#[derive(schemars::JsonSchema)]
struct Fragile(#[allow(dead_code)] String);

impl<'de> serde::Deserialize<'de> for Fragile {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        assert!(text != "boom", "Fragile cannot hold `boom`");
        Ok(Self(text))
    }
}

/// Take a fragile value.
#[tool(register = false)]
fn fragile(value: Fragile) -> bool {
    let _ = value;
    true
}

#[tokio::test]
async fn a_panic_while_deserializing_costs_only_its_call() {
    let server = AlephToolServer::builder()
        .with_tool(FragileTool)
        .build()
        .unwrap();
    for result in [
        server.call_str("fragile", r#"{"value": "boom"}"#).await,
        server.call("fragile", json!({ "value": "boom" })).await,
    ] {
        assert_eq!(
            result.error_kind,
            Some(ToolErrorKind::Panicked),
            "{result:?}"
        );
        assert!(result.error.unwrap().contains("Fragile cannot hold `boom`"));
    }
    assert!(
        server
            .call_str("fragile", r#"{"value": "ok"}"#)
            .await
            .success
    );
}

/// Delete a record.
#[tool(register = false, confirm)]
fn delete_record(id: u32) -> String {
    format!("deleted {id}")
}

#[tokio::test]
async fn confirmation_sees_only_arguments_that_passed() {
    let asked = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&asked);
    let server = AlephToolServer::builder()
        .with_tool(DeleteRecordTool)
        .with_confirmation_handler(move |request: ConfirmationRequest| {
            counter.fetch_add(1, Ordering::SeqCst);
            assert_eq!(request.arguments, json!({ "id": 4 }));
            async { Confirmation::Approve }
        })
        .build()
        .unwrap();
    let bad = server.call_str("delete_record", r#"{"id": "four"}"#).await;
    assert_eq!(bad.error_kind, Some(ToolErrorKind::InvalidArgs));
    assert_eq!(asked.load(Ordering::SeqCst), 0, "asked about bad arguments");
    let good = server.call_str("delete_record", r#"{"id": 4}"#).await;
    assert_eq!(good.output, "deleted 4");
    assert_eq!(asked.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn argument_repair_still_applies_to_text() {
    let server = AlephToolServer::builder()
        .with_tool(ReadSensorTool)
        .with_argument_repair(true)
        .build()
        .unwrap();
    let result = server
        .call_str(
            "read_sensor",
            r#"{"id": "7", "unit": "celsius", "tags": []}"#,
        )
        .await;
    assert!(result.success, "{result:?}");
    assert_eq!(result.coercions.len(), 1, "{result:?}");
    assert!(result.output.as_str().unwrap().starts_with("sensor 7 in C"));
}

/// Add two numbers; reads nothing of its call.
#[tool(register = false, inline)]
fn plain_sum(a: i64, b: i64) -> i64 {
    PLAIN_RUNS.fetch_add(1, Ordering::SeqCst);
    a + b
}

static PLAIN_RUNS: AtomicUsize = AtomicUsize::new(0);

/// Where a reading comes from.
struct Site(&'static str);

/// Say what the call's context holds.
#[tool(register = false, inline)]
fn introspect(ctx: &ToolContext, site: State<Site>) -> String {
    format!(
        "call {} of {} on a server: {}, at {}",
        ctx.call_id(),
        ctx.tool_name().unwrap_or("?"),
        ctx.server().is_some(),
        site.0
    )
}

/// Report progress, nothing else.
#[tool(register = false, inline)]
fn progress_only(progress: Progress) {
    progress.report(1.0, None, None);
}

/// Wait for cancellation, nothing else.
#[tool(register = false)]
async fn cancellable(token: CancellationToken) {
    token.cancelled().await;
}

// A tool reads its context exactly when it has an injected parameter (checked as this file
// compiles).
const _: () = {
    assert!(!<PlainSumTool as AlephTool>::READS_CONTEXT);
    assert!(!<ReadSensorTool as AlephTool>::READS_CONTEXT);
    assert!(<IntrospectTool as AlephTool>::READS_CONTEXT);
    assert!(<ProgressOnlyTool as AlephTool>::READS_CONTEXT);
    assert!(<CancellableTool as AlephTool>::READS_CONTEXT);
};

#[tokio::test]
async fn a_tool_that_reads_its_context_gets_all_of_it_on_the_fast_path() {
    let server = AlephToolServer::builder()
        .with_tool(IntrospectTool)
        .with_tool(PlainSumTool)
        .with_state(Site("the roof"))
        .build()
        .unwrap();
    // Ids are the server's, one per call, whichever tools the calls went to.
    assert!(
        server
            .call_str("plain_sum", r#"{"a":1,"b":2}"#)
            .await
            .success
    );
    let first = server.call_str("introspect", "{}").await;
    let second = server.call("introspect", json!({})).await;
    let texts: Vec<_> = [first, second]
        .into_iter()
        .map(|result| result.output.as_str().unwrap().to_owned())
        .collect();
    assert!(
        texts[0].ends_with("of introspect on a server: true, at the roof"),
        "{}",
        texts[0]
    );
    let id = |text: &str| -> u64 { text.split(' ').nth(1).unwrap().parse().unwrap() };
    assert!(id(&texts[1]) > id(&texts[0]), "{texts:?}");
}

#[tokio::test]
async fn a_context_free_tool_cancelled_before_it_starts_never_runs() {
    let server = AlephToolServer::builder()
        .with_tool(PlainSumTool)
        .build()
        .unwrap();
    let token = CancellationToken::new();
    token.cancel();
    let before = PLAIN_RUNS.load(Ordering::SeqCst);
    let result = server
        .call_str("plain_sum", r#"{"a":1,"b":2}"#)
        .context(ToolContext::new().with_cancellation(token))
        .await;
    assert_eq!(
        result.error_kind,
        Some(ToolErrorKind::Cancelled),
        "{result:?}"
    );
    assert_eq!(PLAIN_RUNS.load(Ordering::SeqCst), before);
    // The caller's context still decides who may call.
    let result = server
        .call_str("plain_sum", r#"{"a":1,"b":2}"#)
        .context(ToolContext::new().with_caller(Caller::CodeExecution))
        .await;
    assert_eq!(result.error_kind, Some(ToolErrorKind::PermissionDenied));
    assert_eq!(PLAIN_RUNS.load(Ordering::SeqCst), before);
}

#[tokio::test]
async fn progress_handlers_hear_every_call_however_it_runs() {
    #[derive(Default)]
    struct Heard(std::sync::Mutex<Vec<String>>);
    impl ToolProgressHandler for Heard {
        fn on_tool_start(&self, tool_name: &str, args_summary: &str) {
            self.0
                .lock()
                .unwrap()
                .push(format!("start {tool_name} {args_summary}"));
        }
        fn on_tool_result(&self, tool_name: &str, result_summary: &str, success: bool) {
            let line = format!("result {tool_name} {result_summary} {success}");
            self.0.lock().unwrap().push(line);
        }
        fn on_tool_progress(
            &self,
            tool_name: &str,
            progress: f64,
            _: Option<f64>,
            _: Option<&str>,
        ) {
            self.0
                .lock()
                .unwrap()
                .push(format!("progress {tool_name} {progress}"));
        }
    }
    let heard = Arc::new(Heard::default());
    let server = AlephToolServer::builder()
        .with_tool(PlainSumTool)
        .with_tool(ProgressOnlyTool)
        .with_middleware(Listen::new(Arc::clone(&heard)))
        .build()
        .unwrap();
    server.call_str("plain_sum", r#"{"a":1,"b":2}"#).await;
    // Refused by serde, so checked against the schema: heard the same way.
    server.call_str("plain_sum", r#"{"a":"one"}"#).await;
    server.call_str("progress_only", "{}").await;
    let heard = heard.0.lock().unwrap();
    assert_eq!(heard.len(), 7, "{heard:#?}");
    assert_eq!(heard[0], r#"start plain_sum {"a":1,"b":2}"#);
    assert_eq!(heard[1], "result plain_sum 3 true");
    assert!(
        heard[3].starts_with("result plain_sum invalid arguments"),
        "{heard:#?}"
    );
    assert_eq!(heard[5], "progress progress_only 1");
}

/// Count a call, in place.
#[tool(register = false, inline)]
fn tally() -> usize {
    TALLIES.fetch_add(1, Ordering::SeqCst) + 1
}

static TALLIES: AtomicUsize = AtomicUsize::new(0);

/// Break, in place.
#[tool(register = false, inline)]
fn snap() -> u8 {
    panic!("snapped in place")
}

/// Claims to be inline, then waits.
struct Liar;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct NoArgs {}

impl AlephTool for Liar {
    const NAME: &'static str = "liar";
    const DESCRIPTION: &'static str = "Says it never waits, and waits.";
    const INLINE: bool = true;
    type Args = NoArgs;
    type Output = &'static str;

    async fn call(&self, _args: NoArgs, _ctx: &ToolContext) -> Result<&'static str, ToolError> {
        tokio::task::yield_now().await;
        Ok("waited")
    }
}

const _: () = assert!(<TallyTool as AlephTool>::INLINE && !<CancellableTool as AlephTool>::INLINE);

/// A call of an inline tool without a time limit runs as its future is made, with nothing
/// left to poll for, whatever its context carries when the tool takes none; a cancelled call
/// never runs, and one under a time limit runs when polled.
#[tokio::test]
async fn an_inline_tool_runs_as_its_future_is_made() {
    use std::future::IntoFuture;

    let tallies = || TALLIES.load(Ordering::SeqCst);
    let server = AlephToolServer::builder()
        .with_tool(TallyTool)
        .build()
        .unwrap();
    let before = tallies();
    let made = server.call_str("tally", "{}").into_future();
    assert_eq!(tallies(), before + 1);
    assert!(format!("{made:?}").contains("ended"), "{made:?}");
    assert_eq!(made.await.output, json!(before + 1));

    // Nothing could act on a call that ends as it starts: a token and a progress listener
    // leave it in place.
    let token = CancellationToken::new();
    let carrying = ToolContext::new()
        .with_cancellation(token.clone())
        .with_progress(|_: &str, _: ProgressEvent| {});
    let made = server
        .call_str("tally", "{}")
        .context(carrying.clone())
        .into_future();
    assert_eq!(tallies(), before + 2, "run as made");
    assert_eq!(made.await.output, json!(before + 2));

    token.cancel();
    let cancelled = server.call_str("tally", "{}").context(carrying).await;
    assert_eq!(
        cancelled.error_kind,
        Some(ToolErrorKind::Cancelled),
        "{cancelled:?}"
    );
    assert_eq!(tallies(), before + 2, "a cancelled call never runs");

    let limited = AlephToolServer::builder()
        .with_tool(TallyTool)
        .with_default_timeout(Duration::from_secs(5))
        .build()
        .unwrap();
    let made = limited.call_str("tally", "{}").into_future();
    assert_eq!(tallies(), before + 2, "not run yet");
    assert!(made.await.success);
    assert_eq!(tallies(), before + 3);
}

/// A panic in an inline tool fails its call, and a tool that says it is inline but waits
/// fails its call saying so; the server serves on.
#[tokio::test]
async fn inline_tools_that_panic_or_wait_fail_only_their_call() {
    let server = AlephToolServer::builder()
        .with_tool(SnapTool)
        .with_tool(Liar)
        .with_tool(TallyTool)
        .build()
        .unwrap();
    let snapped = server.call_str("snap", "{}").await;
    assert_eq!(
        snapped.error_kind,
        Some(ToolErrorKind::Panicked),
        "{snapped:?}"
    );
    assert!(snapped.error.unwrap().contains("snapped in place"));

    let lied = server.call("liar", json!({})).await;
    assert_eq!(lied.error_kind, Some(ToolErrorKind::Execution), "{lied:?}");
    assert!(
        lied.error
            .as_deref()
            .unwrap_or_default()
            .contains("says it is inline"),
        "{lied:?}"
    );
    // With a cancellation token the call is polled as any other, and waiting is fine.
    let limited = server
        .call("liar", json!({}))
        .context(ToolContext::new().with_cancellation(CancellationToken::new()))
        .await;
    assert_eq!(limited.output, json!("waited"), "{limited:?}");

    assert!(server.call_str("tally", "{}").await.success);
}

/// Repeat a word, in place; only code may call it.
#[tool(register = false, inline, callers = [code_execution])]
fn echo_word(word: String, times: usize) -> String {
    word.repeat(times)
}

/// A plain call of an inline tool that reads nothing of its context runs with nothing
/// prepared for it, and still keeps every rule of a call: the caller check, name repair,
/// the output limit, the argument errors of the checked path, and a time limit when the
/// server sets one.
#[tokio::test]
async fn a_call_run_in_place_keeps_every_rule() {
    let server = AlephToolServer::builder()
        .with_tool(EchoWordTool)
        .with_tool(PlainSumTool)
        .with_output_limit(40)
        .build()
        .unwrap();
    let code = || ToolContext::new().with_caller(Caller::CodeExecution);

    let refused = server
        .call_str("echo_word", r#"{"word":"a","times":2}"#)
        .await;
    assert_eq!(
        refused.error_kind,
        Some(ToolErrorKind::PermissionDenied),
        "{refused:?}"
    );

    let repaired = server
        .call_str("EchoWord", r#"{"word":"ab","times":50}"#)
        .context(code())
        .await;
    assert!(repaired.success, "{repaired:?}");
    let repair = repaired.repair.as_ref().expect("the name was repaired");
    assert_eq!(repair.original_name, "EchoWord");
    assert_eq!(
        repaired.output,
        json!("ab".repeat(50)),
        "output stays whole"
    );
    let [shown] = &repaired.content[..] else {
        panic!("one shortened text block: {repaired:?}");
    };
    let shown = shown.as_text().expect("a text block");
    assert!(shown.chars().count() < 100, "{shown}");

    let wrong = server.call_str("plain_sum", r#"{"a":"one","b":2}"#).await;
    assert_eq!(
        wrong.error_kind,
        Some(ToolErrorKind::InvalidArgs),
        "{wrong:?}"
    );
    let said = wrong.error.unwrap();
    assert!(said.contains("/a") || said.contains("`a`"), "{said}");

    let timed = AlephToolServer::builder()
        .with_tool(PlainSumTool)
        .with_default_timeout(Duration::from_secs(5))
        .build()
        .unwrap();
    let sum = timed.call_str("plain_sum", r#"{"a":40,"b":2}"#).await;
    assert_eq!(sum.output, json!(42), "{sum:?}");
}

/// Arguments that count how often serde reads them.
#[derive(schemars::JsonSchema)]
struct Counted {
    n: u32,
}

static DECODES: AtomicUsize = AtomicUsize::new(0);

impl<'de> serde::Deserialize<'de> for Counted {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(serde::Deserialize)]
        struct Plain {
            n: u32,
        }
        DECODES.fetch_add(1, Ordering::SeqCst);
        Plain::deserialize(deserializer).map(|plain| Self { n: plain.n })
    }
}

/// Doubles `n`; its arguments count their reads.
struct Double;

impl AlephTool for Double {
    const NAME: &'static str = "double";
    const DESCRIPTION: &'static str = "Doubles n.";
    type Args = Counted;
    type Output = u32;

    async fn call(&self, args: Counted, _ctx: &ToolContext) -> Result<u32, ToolError> {
        Ok(args.n * 2)
    }
}

/// Whatever a call passes through (layers, confirmation, both, neither), serde reads its
/// arguments once.
#[tokio::test]
async fn every_path_reads_the_arguments_once() {
    let plain = AlephToolServer::builder()
        .with_tool(Double)
        .build()
        .unwrap();
    let layered = AlephToolServer::builder()
        .with_tool(Double)
        .with_middleware(middleware::from_fn(|call: ToolCall, next: Next| {
            next.run(call)
        }))
        .build()
        .unwrap();
    let confirmed = AlephToolServer::builder()
        .with_tool(Double)
        .with_filter(ToolFilter::new().confirm("double"))
        .with_confirmation_handler(|_: ConfirmationRequest| async { Confirmation::Approve })
        .build()
        .unwrap();
    let both = AlephToolServer::builder()
        .with_tool(Double)
        .with_filter(ToolFilter::new().confirm("double"))
        .with_confirmation_handler(|_: ConfirmationRequest| async { Confirmation::Approve })
        .with_middleware(middleware::from_fn(|call: ToolCall, next: Next| {
            next.run(call)
        }))
        .build()
        .unwrap();
    for (name, server) in [
        ("plain", &plain),
        ("layered", &layered),
        ("confirmed", &confirmed),
        ("both", &both),
    ] {
        for text in [false, true] {
            let before = DECODES.load(Ordering::SeqCst);
            let result = if text {
                server.call_str("double", r#"{"n":21}"#).await
            } else {
                server.call("double", json!({ "n": 21 })).await
            };
            assert_eq!(result.output, json!(42), "{name}: {result:?}");
            let reads = DECODES.load(Ordering::SeqCst) - before;
            assert_eq!(
                reads, 1,
                "{name} (text: {text}) read the arguments {reads} times"
            );
        }
    }
}
