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

/// An alias of `Result` under another name.
type Outcome<T> = Result<T, std::num::ParseIntError>;

/// An alias the `result` key marks.
#[tool(register = false, result)]
fn renamed_alias(text: String) -> Outcome<u8> {
    text.parse()
}

mod own {
    use aleph_tools::prelude::*;

    /// A type of its own named `Result`.
    #[derive(serde::Serialize, schemars::JsonSchema)]
    pub struct Result {
        pub passed: bool,
    }

    /// A plain value named `Result`, which the `result` key says is not one.
    #[tool(register = false, result = false)]
    pub fn own_result() -> Result {
        Result { passed: true }
    }
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
    assert_output::<RenamedAliasTool, u8>();
    assert_output::<own::OwnResultTool, own::Result>();
    assert_output::<OutputTool, ToolOutput>();
    assert_output::<FallibleOutputTool, ToolOutput>();
    assert_output::<ValueTool, serde_json::Value>();
    assert!(PlainTool.definition().output_schema.is_some());
    assert!(UnitTool.definition().output_schema.is_none());
}
