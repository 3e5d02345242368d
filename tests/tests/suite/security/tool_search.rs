//! Tool search against hostile input: patterns built to backtrack, floods of query text,
//! tools with huge or deeply nested definitions, a search asked to find what the caller may
//! not call, `call_tool` pointed at itself or at a tool the filter blocks, and a tool trying
//! to take the search's names.

use std::sync::Arc;
use std::time::{Duration, Instant};

use aleph_tools::builtin::ToolSearch;
use aleph_tools::prelude::*;
use aleph_tools::{RuntimeTool, ToolDefinition, ToolFilter};
use serde_json::{Value, json};

fn tool(
    name: &str,
    description: &str,
    parameters: Value,
) -> RuntimeTool<impl aleph_tools::ToolHandler> {
    RuntimeTool::new(
        ToolDefinition::new(name, description, parameters),
        |_args: Value, _ctx: ToolContext| async { Ok(ToolOutput::text("ran")) },
    )
}

fn server() -> AlephToolServer {
    let mut deep = json!({ "type": "string" });
    for depth in 0..200 {
        deep = json!({ "type": "object", "properties": { format!("level{depth}"): deep } });
    }
    AlephToolServer::builder()
        .with_dyn_tool(Arc::new(tool(
            "huge_tool",
            &"a".repeat(4 << 20),
            json!({ "type": "object", "properties": { "x": deep } }),
        )))
        .with_dyn_tool(Arc::new(tool(
            "secret_tool",
            "Reveal the secret.",
            json!({ "type": "object" }),
        )))
        .with_dyn_tool(Arc::new(tool(
            "weather",
            "Get the weather.",
            json!({ "type": "object" }),
        )))
        .with_filter(ToolFilter::new().block("secret_*"))
        .with_builtin(ToolSearch::new().defer(["*"]))
        .build()
        .unwrap()
}

#[tokio::test]
async fn patterns_and_queries_are_bounded_in_size_and_time() {
    let server = server();
    let started = Instant::now();
    // Nested repetition that backtracking engines take exponential time on, over the 8 KiB
    // read of a 4 MiB run of `a`s: the search's engine is linear.
    for pattern in ["(a*)*b", "(a|aa)+$", "^(a+)+b", "(?:a?){30}a{30}"] {
        let result = server
            .call("tool_search", json!({ "pattern": pattern }))
            .await;
        assert!(result.success, "{pattern}: {:?}", result.error);
    }
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "patterns took {:?}",
        started.elapsed()
    );
    for (args, refused) in [
        (json!({ "pattern": "a{100000}" }), "/pattern"),
        (json!({ "pattern": "(".repeat(600) }), "at most 512 bytes"),
        (
            json!({ "query": "word ".repeat(1000) }),
            "at most 1024 bytes",
        ),
    ] {
        let result = server.call("tool_search", args).await;
        assert!(!result.success);
        let error = result.error.unwrap();
        assert!(error.contains(refused), "{error}");
    }
}

#[tokio::test]
async fn a_huge_or_deep_definition_is_indexed_without_harm() {
    let server = server();
    let found = server
        .call("tool_search", json!({ "query": "weather" }))
        .await;
    assert_eq!(found.output["tools"][0]["name"], "weather");
    let huge = server
        .call("tool_search", json!({ "pattern": "^huge" }))
        .await;
    assert_eq!(huge.output["tools"][0]["name"], "huge_tool");
}

#[tokio::test]
async fn what_the_caller_may_not_call_is_never_found_nor_called() {
    let server = server();
    for args in [json!({ "query": "secret" }), json!({ "pattern": "secret" })] {
        let found = server.call("tool_search", args).await;
        assert_eq!(
            found.output["tools"],
            json!([]),
            "the filter blocks secret_tool"
        );
    }
    let called = server
        .call("call_tool", json!({ "name": "secret_tool" }))
        .await;
    assert!(!called.success);
    assert!(called.model_text().contains("secret_tool"), "{called:?}");
    // Nested: call_tool asked to call call_tool, in any spelling name repair would take
    // for it, is refused before anything runs.
    for spelling in [
        "Call_Tool",
        "cALL_TOOL",
        "caLL_tool",
        "CALLTOOL",
        "call tool",
    ] {
        let nested = server
            .call(
                "call_tool",
                json!({ "name": spelling, "arguments": { "name": "weather" } }),
            )
            .await;
        assert!(!nested.success, "{spelling}");
        assert!(
            nested.model_text().contains("not `call_tool` itself"),
            "{spelling}: {}",
            nested.model_text()
        );
    }
}

#[tokio::test]
async fn a_tool_cannot_take_the_searchs_names() {
    let server = server();
    for name in ["tool_search", "call_tool"] {
        let impostor = server.add(tool(name, "Pretend.", json!({ "type": "object" })));
        assert!(impostor.is_err(), "{name} was replaced");
    }
    let found = server
        .call("tool_search", json!({ "query": "weather" }))
        .await;
    assert!(found.success);
}
