//! Compile-time tests of `#[tool]`.
//!
//! This library is itself one: the tools below use every key, parameter kind and return form,
//! and the crate denies `clippy::pedantic`, `missing_docs` and `unused_qualifications`, so
//! an expansion that trips any of them fails `cargo clippy -- -D warnings`.

#![deny(clippy::pedantic, missing_docs, unused_qualifications)]

use aleph_tools::ToolAnnotations;
use aleph_tools::prelude::*;
use serde::{Deserialize, Serialize};

/// A sort order.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, schemars::JsonSchema)]
pub enum Order {
    /// Ascending
    Asc,
    /// Descending
    Desc,
}

/// Shared application data.
#[derive(Debug, Default)]
pub struct Db;

/// Every key at once.
///
/// # Errors
///
/// Never; the signature shows the form.
#[tool(
    name = "lint_every_key",
    description = "Every key at once.",
    tags = ["a", "b"],
    category = Builtin,
    confirm,
    read_only,
    destructive = false,
    idempotent,
    open_world,
    timeout = "5s",
    example = "{}",
    callers = [human, code_execution],
    strict,
    register = false,
    crate = aleph_tools,
)]
pub async fn lint_every_key(
    /// A required string
    query: String,
    /// An optional number
    limit: Option<u32>,
    /// A defaulted enum
    #[arg(default = Order::Asc)]
    order: Order,
    /// Defaulted through `Default`
    #[arg(default)]
    labels: Vec<String>,
    ctx: &ToolContext,
    db: State<Db>,
    progress: Progress,
    cancel: CancellationToken,
) -> Result<Vec<String>, ToolError> {
    let _ = (limit, order, ctx, db, progress, cancel);
    tokio::task::yield_now().await;
    Ok(labels.into_iter().chain([query]).collect())
}

/// A sync tool returning a plain value.
#[tool]
#[must_use]
pub fn lint_plain(
    /// Left
    a: i64,
    /// Right
    b: i64,
) -> i64 {
    a.saturating_add(b)
}

/// A tool returning nothing.
#[tool]
pub async fn lint_unit() {
    tokio::task::yield_now().await;
}

/// A tool returning text and data.
#[tool]
#[must_use]
pub fn lint_output() -> ToolOutput {
    ToolOutput::text("ok")
}

/// A tool with an anyhow error.
///
/// # Errors
///
/// When `text` is not a number.
#[tool]
pub fn lint_anyhow(
    /// Text to parse
    text: String,
) -> anyhow::Result<u32> {
    Ok(text.parse()?)
}

/// A sync tool reading its context and injected values on the blocking pool.
#[tool]
#[must_use]
pub fn lint_sync_context(
    /// How many
    n: u8,
    ctx: &ToolContext,
    progress: Progress,
) -> String {
    progress.chunk("counting");
    format!("{n} in {}", ctx.tool_name().unwrap_or_default())
}

/// A sync tool run in place.
#[tool(inline)]
#[must_use]
pub fn lint_inline(
    /// The value
    x: u8,
) -> u8 {
    x
}

/// A private tool.
#[tool(register = false)]
fn lint_private(undocumented: u8) -> u8 {
    undocumented
}

/// The hints of `lint_every_key`, read through the public API.
#[must_use]
pub fn every_key_annotations() -> ToolAnnotations {
    let _ = lint_private(1);
    let _ = LintPrivateTool.definition();
    LintEveryKeyTool.definition().annotations
}
