use std::collections::HashMap;

use aleph_tools::prelude::*;

struct Db;

/// Every kind of parameter, sync.
#[tool(register = false)]
fn sync_params(
    /// Required
    a: String,
    /// Optional
    b: Option<u32>,
    /// Defaulted with Default
    #[arg(default)]
    c: Vec<String>,
    /// Defaulted with an expression
    #[arg(default = 1.5)]
    d: f64,
    mut e: HashMap<String, i32>,
    ctx: &ToolContext,
    db: State<Db>,
    progress: Progress,
    cancel: CancellationToken,
    caller: Caller,
    owned_ctx: ToolContext,
) -> usize {
    e.insert(a, 1);
    let _ = (b, c, d, ctx, db, progress, cancel, caller, owned_ctx);
    e.len()
}

/// Async with a reference to the context held across an await.
#[tool(register = false)]
async fn async_params(n: u8, ctx: &ToolContext) -> u8 {
    tokio::task::yield_now().await;
    let _ = ctx.call_id();
    n
}

/// Const fns are sync fns.
#[tool(register = false)]
const fn const_fn(n: u8) -> u8 {
    n
}

fn main() {
    let schema = SyncParamsTool.definition().parameters;
    assert_eq!(schema["required"], serde_json::json!(["a", "e"]));
    assert_eq!(schema["properties"]["d"]["default"], 1.5);
    assert_eq!(schema["properties"]["c"]["default"], serde_json::json!([]));
    assert_eq!(const_fn(3), 3);
    let _ = AsyncParamsTool;
    let _ = ConstFnTool;
}
