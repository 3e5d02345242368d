use aleph_tools::prelude::*;
use serde_json::json;

/// Unit.
#[tool(register = false)]
fn unit() {}

/// Explicit unit.
#[tool(register = false)]
fn explicit_unit() -> () {}

/// Plain value.
#[tool(register = false)]
fn plain() -> Vec<u8> {
    vec![1, 2]
}

/// Result with a String error.
#[tool(register = false)]
fn string_error() -> Result<u8, String> {
    Err("no".into())
}

/// anyhow's alias.
#[tool(register = false)]
fn anyhow_alias() -> anyhow::Result<u8> {
    Ok(1)
}

/// std's alias.
#[tool(register = false)]
fn io_alias() -> std::io::Result<u8> {
    Ok(2)
}

/// A ToolError passes through.
#[tool(register = false)]
fn tool_error() -> Result<u8, ToolError> {
    Err(ToolError::execution("kept"))
}

/// Text and data.
#[tool(register = false)]
fn output() -> ToolOutput {
    ToolOutput::new("text", json!({}))
}

/// Result of ToolOutput.
#[tool(register = false)]
async fn fallible_output() -> Result<ToolOutput, std::fmt::Error> {
    Ok(ToolOutput::text("ok"))
}

/// serde_json::Value.
#[tool(register = false)]
fn value() -> serde_json::Value {
    json!(null)
}

fn assert_output<T: AlephTool<Output = O>, O>() {}

fn main() {
    assert_output::<UnitTool, ()>();
    assert_output::<ExplicitUnitTool, ()>();
    assert_output::<PlainTool, Vec<u8>>();
    assert_output::<StringErrorTool, u8>();
    assert_output::<AnyhowAliasTool, u8>();
    assert_output::<IoAliasTool, u8>();
    assert_output::<ToolErrorTool, u8>();
    assert_output::<OutputTool, ToolOutput>();
    assert_output::<FallibleOutputTool, ToolOutput>();
    assert_output::<ValueTool, serde_json::Value>();
    assert!(PlainTool.definition().output_schema.is_some());
    assert!(UnitTool.definition().output_schema.is_none());
}
