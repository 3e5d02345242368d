//! A server changed after it was built: every call sees the change, including calls of
//! `inline` tools, which a server as built finds without loading its table.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use aleph_tools::__private_0_1_0::TypedArguments;
use aleph_tools::middleware::{Layer, Priority, ToolCall};
use aleph_tools::prelude::*;
use aleph_tools::{AlephToolDyn, BoxFuture, ToolDefinition, ToolErrorKind, ToolOutput};
use serde_json::{Value, json};

/// Add two integers.
#[tool(register = false, inline)]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

/// Multiply two integers, served as `add`.
#[tool(register = false, inline, name = "add")]
fn multiply(a: i64, b: i64) -> i64 {
    a * b
}

fn served() -> AlephToolServer {
    AlephToolServer::builder()
        .with_tool(AddTool)
        .build()
        .unwrap()
}

async fn add_2_3(server: &AlephToolServer) -> ToolResult {
    server.call("add", json!({ "a": 2, "b": 3 })).await
}

#[tokio::test]
async fn a_tool_replaced_or_removed_after_the_build_is_called_as_changed() {
    let server = served();
    assert_eq!(add_2_3(&server).await.output, json!(5));

    assert!(server.replace(MultiplyTool).unwrap().was_replaced);
    assert_eq!(add_2_3(&server).await.output, json!(6));

    assert!(server.remove("add"));
    let gone = add_2_3(&server).await;
    assert_eq!(gone.error_kind, Some(ToolErrorKind::NotFound), "{gone:?}");

    server.add(AddTool).unwrap();
    assert_eq!(add_2_3(&server).await.output, json!(5));
}

#[tokio::test]
async fn a_layer_or_a_filter_set_after_the_build_holds_for_inline_calls() {
    let server = served();
    let seen = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&seen);
    let layer = server.add_layer(Layer::interceptor(
        Priority::Normal,
        move |call: ToolCall| {
            counter.fetch_add(1, Ordering::SeqCst);
            async move { Ok(call) }
        },
    ));
    assert_eq!(add_2_3(&server).await.output, json!(5));
    assert_eq!(seen.load(Ordering::SeqCst), 1);
    assert!(server.remove_layer(layer));
    assert_eq!(add_2_3(&server).await.output, json!(5));
    assert_eq!(seen.load(Ordering::SeqCst), 1);

    let filtered = served();
    assert_eq!(add_2_3(&filtered).await.output, json!(5));
    filtered.set_filter(ToolFilter::new().block("add")).unwrap();
    let blocked = add_2_3(&filtered).await;
    assert!(!blocked.success, "{blocked:?}");
    filtered.set_filter(ToolFilter::new()).unwrap();
    assert_eq!(add_2_3(&filtered).await.output, json!(5));
}

#[tokio::test]
async fn a_misspelled_name_is_repaired_on_a_server_as_built() {
    let server = served();
    let repaired = server.call("Add", json!({ "a": 2, "b": 3 })).await;
    assert_eq!(repaired.output, json!(5));
    let repair = repaired.repair.as_ref().expect("the name was repaired");
    assert_eq!(
        (repair.original_name.as_str(), repair.repaired_name.as_str()),
        ("Add", "add")
    );
    let refused = server.call("add", json!({ "a": "two", "b": 3 })).await;
    assert_eq!(
        refused.error_kind,
        Some(ToolErrorKind::InvalidArgs),
        "{refused:?}"
    );
}

/// An inline tool that holds something: dropping it says so.
struct Holding {
    dropped: Arc<AtomicBool>,
}

impl Drop for Holding {
    fn drop(&mut self) {
        self.dropped.store(true, Ordering::SeqCst);
    }
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct NoArgs {}

impl AlephTool for Holding {
    const NAME: &'static str = "holding";
    const DESCRIPTION: &'static str = "Hold something until dropped.";
    const READS_CONTEXT: bool = false;
    const INLINE: bool = true;
    type Args = NoArgs;
    type Output = bool;

    async fn call(&self, _args: NoArgs, _ctx: &ToolContext) -> Result<bool, ToolError> {
        Ok(true)
    }
}

/// A tool that holds something is dropped as soon as it is removed, though the server
/// keeps the tools it was built with that hold nothing for its whole life.
#[tokio::test]
async fn a_removed_tool_that_holds_something_is_dropped_at_once() {
    let dropped = Arc::new(AtomicBool::new(false));
    let server = AlephToolServer::builder()
        .with_tool(AddTool)
        .with_tool(Holding {
            dropped: Arc::clone(&dropped),
        })
        .build()
        .unwrap();
    assert_eq!(server.call("holding", json!({})).await.output, json!(true));
    assert!(!dropped.load(Ordering::SeqCst));
    assert!(server.remove("holding"));
    assert!(dropped.load(Ordering::SeqCst));
    assert_eq!(add_2_3(&server).await.output, json!(5));
}

/// A wrapper that holds something and answers for its arguments with the `#[tool]` it
/// wraps, whose type holds nothing: it answers for itself whether it holds something.
struct Wrapping {
    inner: AddTool,
    _holding: Holding,
}

impl AlephToolDyn for Wrapping {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn definition(&self) -> ToolDefinition {
        AlephToolDyn::definition(&self.inner)
    }

    fn call<'a>(
        &'a self,
        args: Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        AlephToolDyn::call(&self.inner, args, ctx)
    }

    fn typed_arguments(&self) -> Option<&dyn TypedArguments> {
        self.inner.typed_arguments()
    }
}

#[tokio::test]
async fn a_removed_wrapper_of_a_tool_that_holds_nothing_is_dropped_at_once() {
    let dropped = Arc::new(AtomicBool::new(false));
    let wrapping = Wrapping {
        inner: AddTool,
        _holding: Holding {
            dropped: Arc::clone(&dropped),
        },
    };
    assert!(!wrapping.holds_nothing());
    let server = AlephToolServer::builder()
        .with_dyn_tool(wrapping)
        .build()
        .unwrap();
    assert_eq!(add_2_3(&server).await.output, json!(5));
    assert!(server.remove("add"));
    assert!(dropped.load(Ordering::SeqCst));
}
