//! The server's table of tools: registry, add, remove, replace, listing, handles, and calls
//! racing with hot swaps.

use std::sync::Arc;
use std::time::Duration;

use aleph_tools::prelude::*;
use aleph_tools::registry::registered_tools;
use aleph_tools::{AlephToolDyn, BoxFuture, RegistryError, ToolOutput};
use serde_json::{Value, json};

/// Echo the text back.
#[tool(read_only)]
fn echo(
    /// Text to echo
    text: String,
) -> String {
    text
}

/// Reverse the text.
#[tool(category = Skill, confirm, example = r#"{"text": "abc"}"#)]
fn reverse(
    /// Text to reverse
    text: String,
) -> String {
    text.chars().rev().collect()
}

/// Not in the registry.
#[tool(register = false)]
fn hidden() -> u8 {
    7
}

/// A tool known only at run time, the way plugins and MCP servers add theirs.
struct Constant {
    name: String,
    value: Value,
}

impl AlephToolDyn for Constant {
    fn name(&self) -> &str {
        &self.name
    }

    fn definition(&self) -> ToolDefinition {
        ToolDefinition::new(
            &self.name,
            "Return a constant.",
            json!({ "type": "object", "properties": {} }),
        )
        .with_category(ToolCategory::Plugin)
    }

    fn call<'a>(
        &'a self,
        _args: Value,
        _ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move { Ok(ToolOutput::json(self.value.clone())) })
    }
}

fn constant(name: &str, value: Value) -> Constant {
    Constant {
        name: name.to_owned(),
        value,
    }
}

#[tokio::test]
async fn from_registry_serves_every_registered_tool_and_only_those() {
    let server = AlephToolServer::from_registry().unwrap();
    assert_eq!(server.tools().names(), ["echo", "reverse"]);
    assert!(!server.contains("hidden"));
    let result = server.call("echo", json!({ "text": "hi" })).await;
    assert_eq!(result.output, json!("hi"));

    let registrations = registered_tools();
    let echo = registrations.iter().find(|r| r.name() == "echo").unwrap();
    assert!(
        echo.location().file.ends_with("server.rs"),
        "{}",
        echo.location()
    );
    assert_eq!(echo.location().module_path, "server");
}

/// What the registry hands the server is the tool itself, behind a reference to the
/// linker's copy: every question put to it gets the tool's own answer.
#[tokio::test]
async fn a_registered_tool_answers_as_the_tool_itself() {
    let registrations = registered_tools();
    let echo = registrations.iter().find(|r| r.name() == "echo").unwrap();
    let served = echo.instantiate();
    assert_eq!(served.name(), "echo");
    assert_eq!(served.definition(), AlephToolDyn::definition(&EchoTool));
    assert_eq!(
        served.required_state(),
        AlephToolDyn::required_state(&EchoTool)
    );
    assert!(
        served.typed_arguments().is_some(),
        "a registered #[tool] keeps the server's typed fast path"
    );
    assert_eq!(
        served.holds_nothing(),
        AlephToolDyn::holds_nothing(&EchoTool)
    );
    assert!(
        served.holds_nothing(),
        "a `#[tool]` function's type holds nothing"
    );
    let refused = served.validate(&json!({ "text": 5 })).unwrap_err();
    assert_eq!(
        refused.to_string(),
        EchoTool
            .validate(&json!({ "text": 5 }))
            .unwrap_err()
            .to_string()
    );
    let ctx = ToolContext::new();
    let output = served.call(json!({ "text": "hi" }), &ctx).await.unwrap();
    assert_eq!(output.data, Some(json!("hi")));
}

#[tokio::test]
async fn definitions_carry_every_key_and_list_in_name_order() {
    let server = AlephToolServer::builder()
        .with_registry()
        .with_tool(HiddenTool)
        .build()
        .unwrap();
    let names: Vec<String> = server
        .tools()
        .definitions()
        .iter()
        .map(|d| d.name.clone())
        .collect();
    assert_eq!(names, ["echo", "hidden", "reverse"]);
    let reverse = server.tools().get("reverse").unwrap();
    assert_eq!(reverse.category, ToolCategory::Skill);
    assert!(reverse.requires_confirmation);
    assert_eq!(reverse.examples, [r#"{"text": "abc"}"#]);
    assert!(server.tools().get("missing").is_none());
}

#[tokio::test]
async fn add_remove_and_replace() {
    let server = AlephToolServer::new();
    assert!(server.is_empty());
    server.add(EchoTool).unwrap();
    assert_eq!(
        server.add(EchoTool),
        Err(RegistryError::AlreadyServed {
            name: "echo".into()
        })
    );

    let info = server.replace(constant("echo", json!("replaced"))).unwrap();
    assert_eq!(info.tool_name, "echo");
    assert!(info.was_replaced);
    assert_eq!(
        server.call("echo", json!({ "text": "x" })).await.output,
        json!("replaced")
    );
    assert_eq!(
        server.tools().get("echo").unwrap().category,
        ToolCategory::Plugin
    );

    let info = server.replace(constant("fresh", json!(1))).unwrap();
    assert!(!info.was_replaced);

    assert!(server.remove("echo"));
    assert!(!server.remove("echo"));
    let gone = server.call("echo", json!({ "text": "x" })).await;
    assert!(!gone.success);
    assert_eq!(server.tools().names(), ["fresh"]);
}

#[tokio::test]
async fn unusable_definitions_are_refused_with_the_reason() {
    struct NotAnObject;
    impl AlephToolDyn for NotAnObject {
        fn name(&self) -> &'static str {
            "scalar_args"
        }
        fn definition(&self) -> ToolDefinition {
            ToolDefinition::new(
                "scalar_args",
                "Takes a bare string.",
                json!({ "type": "string" }),
            )
        }
        fn call<'a>(
            &'a self,
            _: Value,
            _: &'a ToolContext,
        ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
            Box::pin(async { Ok(ToolOutput::default()) })
        }
    }
    let server = AlephToolServer::new();
    for bad in ["", "has space", "dots.not.allowed", &"x".repeat(65)] {
        let err = server.add(constant(bad, json!(0))).unwrap_err();
        assert!(
            matches!(err, RegistryError::InvalidDefinition { .. }),
            "{bad:?}: {err}"
        );
        assert!(err.to_string().contains("1 to 64 characters"), "{err}");
    }

    let err = server.add(NotAnObject).unwrap_err();
    assert!(
        err.to_string()
            .contains("root must be `\"type\": \"object\"`"),
        "{err}"
    );
    assert!(server.is_empty(), "nothing was added");
}

#[tokio::test]
async fn a_dyn_tool_that_panics_before_returning_its_future_is_contained() {
    struct PanicsEarly;
    impl AlephToolDyn for PanicsEarly {
        fn name(&self) -> &'static str {
            "panics_early"
        }
        fn definition(&self) -> ToolDefinition {
            ToolDefinition::new(
                "panics_early",
                "Panics.",
                json!({ "type": "object", "properties": {} }),
            )
        }
        fn call<'a>(
            &'a self,
            _: Value,
            _: &'a ToolContext,
        ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
            panic!("not even a future")
        }
    }
    let server = AlephToolServer::builder()
        .with_tool(EchoTool)
        .build()
        .unwrap();
    server.add(PanicsEarly).unwrap();
    let result = server.call("panics_early", json!({})).await;
    assert_eq!(
        result.error.as_deref(),
        Some("`panics_early` failed unexpectedly: not even a future")
    );
    assert!(
        server
            .call("echo", json!({ "text": "still here" }))
            .await
            .success
    );
}

#[tokio::test]
async fn handles_share_one_table() {
    let server = AlephToolServer::builder()
        .with_tool(EchoTool)
        .build()
        .unwrap();
    let handle = server.clone();
    let spawned = tokio::spawn({
        let handle = handle.clone();
        async move { handle.call("echo", json!({ "text": "from a task" })).await }
    });
    assert_eq!(spawned.await.unwrap().output, json!("from a task"));
    handle.add(HiddenTool).unwrap();
    assert!(
        server.contains("hidden"),
        "a handle's change is the server's change"
    );
    let from_thread = std::thread::spawn(move || handle.len()).join().unwrap();
    assert_eq!(from_thread, 2);
}

#[tokio::test]
async fn a_call_in_flight_finishes_on_the_tool_it_started_on() {
    /// Sleep, then answer.
    #[tool(register = false, name = "slow")]
    async fn slow_v1() -> &'static str {
        tokio::time::sleep(Duration::from_millis(100)).await;
        "v1"
    }
    let server = AlephToolServer::builder()
        .with_tool(SlowV1Tool)
        .build()
        .unwrap();
    let handle = server.clone();
    let in_flight = tokio::spawn(async move { handle.call("slow", json!({})).await });
    tokio::time::sleep(Duration::from_millis(20)).await;
    server.replace(constant("slow", json!("v2"))).unwrap();
    assert_eq!(in_flight.await.unwrap().output, json!("v1"));
    assert_eq!(server.call("slow", json!({})).await.output, json!("v2"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn calls_race_hot_swaps_without_losing_one() {
    const TASKS: usize = 8;
    const CALLS: usize = 10_000;
    let server = AlephToolServer::builder()
        .with_tool(EchoTool)
        .with_tool(HiddenTool)
        .build()
        .unwrap();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));

    let swapper = tokio::spawn({
        let handle = server.clone();
        let stop = Arc::clone(&stop);
        async move {
            let mut swaps = 0_u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                // `hidden` comes and goes; `echo` is replaced by an identical tool.
                handle.remove("hidden");
                handle.replace(EchoTool).unwrap();
                handle.add(HiddenTool).unwrap();
                handle.add(constant("churn", json!(swaps))).unwrap();
                handle.remove("churn");
                swaps += 1;
                tokio::task::yield_now().await;
            }
            swaps
        }
    });

    let workers: Vec<_> = (0..TASKS)
        .map(|task| {
            let handle = server.clone();
            tokio::spawn(async move {
                for i in 0..CALLS {
                    let text = format!("{task}-{i}");
                    let result = handle.call("echo", json!({ "text": text })).await;
                    assert!(result.success, "call {text} failed: {:?}", result.error);
                    assert_eq!(result.output, json!(text));
                }
            })
        })
        .collect();
    for worker in workers {
        worker.await.unwrap();
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let swaps = swapper.await.unwrap();
    assert!(swaps > 0, "the table changed while calls ran");
    assert_eq!(server.tools().names(), ["echo", "hidden"]);
}

#[tokio::test]
async fn runtime_tools_are_served_like_any_other() {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use aleph_tools::{RuntimeTool, ToolContext, ToolDefinition, ToolErrorKind};

    let schema = json!({
        "type": "object",
        "properties": { "n": { "type": "integer", "minimum": 0 } },
        "required": ["n"]
    });
    let runs = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&runs);
    let double = RuntimeTool::new(
        ToolDefinition::new("double", "Double a number.", schema.clone()),
        move |args: Value, ctx: ToolContext| {
            seen.fetch_add(1, Ordering::SeqCst);
            async move {
                assert_eq!(ctx.tool_name(), Some("double"));
                let n = args["n"].as_i64().unwrap_or_default();
                Ok::<_, ToolError>(ToolOutput::json(json!(n * 2)))
            }
        },
    );
    let refuse = RuntimeTool::new(
        ToolDefinition::new("refuse", "Always fail.", json!({ "type": "object" })),
        |_: Value, _: ToolContext| async { Err::<ToolOutput, _>(ToolError::execution("no")) },
    );
    let explode = RuntimeTool::new(
        ToolDefinition::new("explode", "Panic.", json!({ "type": "object" })),
        |_: Value, _: ToolContext| async { panic!("handler blew up") },
    );
    let server = AlephToolServer::builder()
        .with_dyn_tool(double)
        .with_dyn_tool(refuse)
        .build()
        .unwrap();
    server.add(explode).unwrap();

    assert_eq!(
        server.call("double", json!({ "n": 21 })).await.output,
        json!(42)
    );
    // The definition's schema is enforced before the handler runs.
    let bad = server.call("double", json!({ "n": -1 })).await;
    assert_eq!(bad.error_kind, Some(ToolErrorKind::InvalidArgs));
    assert!(bad.error.unwrap().contains("`/n`"));
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    // Repair finds runtime tools too.
    let repaired = server.call("Double", json!({ "n": 2 })).await;
    assert_eq!(repaired.output, json!(4));
    assert_eq!(repaired.repair.unwrap().repaired_name, "double");

    assert_eq!(
        server.call("refuse", json!({})).await.error.as_deref(),
        Some("no")
    );
    let boom = server.call("explode", json!({})).await;
    assert_eq!(boom.error_kind, Some(ToolErrorKind::Panicked));
    assert_eq!(
        server.call("double", json!({ "n": 1 })).await.output,
        json!(2)
    );
}

#[test]
fn a_runtime_tool_with_an_unusable_definition_is_refused() {
    use aleph_tools::{RuntimeTool, ToolContext, ToolDefinition};

    let handler = |_: Value, _: ToolContext| async { Ok::<_, ToolError>(ToolOutput::text("x")) };
    let bad_name = RuntimeTool::new(
        ToolDefinition::new("two words", "d", json!({ "type": "object" })),
        handler,
    );
    let err = AlephToolServer::new().add(bad_name).unwrap_err();
    assert!(
        err.to_string()
            .contains("is not a tool name model providers accept"),
        "{err}"
    );
    let not_object = RuntimeTool::new(
        ToolDefinition::new("t", "d", json!({ "type": "string" })),
        handler,
    );
    let err = AlephToolServer::builder()
        .with_dyn_tool(not_object)
        .build()
        .unwrap_err();
    assert!(err.to_string().contains("root must be"), "{err}");
}

#[test]
fn build_checks_everything_at_once() {
    // One name given twice is an error, never a silent replacement.
    let err = AlephToolServer::builder()
        .with_tool(EchoTool)
        .with_tool(EchoTool)
        .build()
        .unwrap_err();
    assert_eq!(
        err,
        RegistryError::DuplicateTool {
            name: "echo".into()
        }
    );
    assert!(
        err.to_string().contains("a server serves each name once"),
        "{err}"
    );
    // A registered tool and one given by hand may not share a name either.
    let err = AlephToolServer::builder()
        .with_registry()
        .with_tool(EchoTool)
        .build()
        .unwrap_err();
    assert!(
        matches!(err, RegistryError::DuplicateTool { ref name } if name == "echo"),
        "{err}"
    );
    // The filter's patterns are checked with the rest.
    let err = AlephToolServer::builder()
        .with_tool(EchoTool)
        .with_filter(ToolFilter::new().allow("[unclosed"))
        .build()
        .unwrap_err();
    let RegistryError::Filter(pattern) = &err else {
        panic!("unexpected {err:?}");
    };
    assert_eq!(pattern.list, "allowed");
    assert!(
        err.to_string().contains("`[unclosed` is not a valid glob"),
        "{err}"
    );
}

#[test]
fn the_macro_states_the_tool_name_rule_as_the_runtime_does() {
    // `#[tool]` cannot share code with this crate, so its copy of the rule is held to the same
    // words here, through the compile error it gives.
    let stderr = include_str!("../../ui-tests/fail/invalid_name.stderr");
    assert!(stderr.contains(aleph_tools::TOOL_NAME_RULE), "{stderr}");
}
