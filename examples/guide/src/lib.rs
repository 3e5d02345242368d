//! One runnable program per chapter of the aleph-tools guide, under `src/bin/`:
//! `cargo run -p guide-examples --bin <chapter>`.
//!
//! The MCP chapter's two programs share the calculator they serve: [`calculator`].

use aleph_tools::prelude::*;

/// Add two integers.
#[tool(read_only, idempotent, register = false)]
fn add(
    /// First addend
    a: i64,
    /// Second addend
    b: i64,
) -> Result<i64, String> {
    a.checked_add(b)
        .ok_or_else(|| format!("{a} + {b} overflows a 64-bit integer"))
}

/// Divide one integer by another, rounding toward zero.
#[tool(read_only, idempotent, register = false)]
fn divide(
    /// The dividend
    a: i64,
    /// The divisor; not zero
    b: i64,
) -> Result<i64, String> {
    a.checked_div(b)
        .ok_or_else(|| format!("cannot divide {a} by {b}; pick a divisor other than 0"))
}

/// Raise an integer to a power.
#[tool(read_only, idempotent, register = false)]
fn power(
    /// The base
    base: i64,
    /// The exponent
    exponent: u32,
) -> Result<i64, String> {
    base.checked_pow(exponent)
        .ok_or_else(|| format!("{base}^{exponent} overflows a 64-bit integer"))
}

/// Makes the `power` tool available.
#[tool(register = false)]
fn unlock_power(server: State<Calculator>) -> Result<&'static str, String> {
    let handle = server.0.get().ok_or("the calculator is not running")?;
    handle.replace(PowerTool).map_err(|e| e.to_string())?;
    Ok("power is available")
}

/// Where `unlock_power` finds the server it adds to.
#[derive(Clone, Default)]
pub struct Calculator(std::sync::Arc<std::sync::OnceLock<AlephToolServer>>);

/// The MCP chapter's calculator: `add`, `divide` and `unlock_power`, which adds `power` while
/// the server runs.
///
/// # Panics
///
/// Never: its tools are valid.
pub fn calculator() -> AlephToolServer {
    let slot = Calculator::default();
    let server = AlephToolServer::builder()
        .with_tool(AddTool)
        .with_tool(DivideTool)
        .with_tool(UnlockPowerTool)
        .with_state(slot.clone())
        .build()
        .expect("the calculator's tools are valid");
    let _ = slot.0.set(server.clone());
    server
}
