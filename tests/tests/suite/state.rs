//! Typed state: a tool that takes `State<T>` on a server without a `T` is reported when the
//! server is built.

use aleph_tools::prelude::*;
use aleph_tools::{BoxFuture, FromToolContext, RegistryError, StateType, ToolErrorKind};
use serde_json::{Value, json};

struct Database {
    name: &'static str,
}

struct Clock;

/// Read from the database.
#[tool(register = false)]
fn query(sql: String, db: State<Database>) -> String {
    format!("{sql} on {}", db.name)
}

/// Both kinds of state.
#[tool(register = false)]
fn stamp(db: State<Database>, clock: State<Clock>, progress: Progress) -> String {
    let _ = (clock, progress);
    db.name.to_owned()
}

#[test]
fn tools_declare_the_state_they_take() {
    assert_eq!(QueryTool::required_state(), [StateType::of::<Database>()]);
    assert_eq!(
        StampTool::required_state(),
        [StateType::of::<Database>(), StateType::of::<Clock>()]
    );
    assert!(StateType::of::<Clock>().name().ends_with("Clock"));
}

#[test]
fn build_reports_missing_state() {
    let err = AlephToolServer::builder()
        .with_tool(QueryTool)
        .with_tool(StampTool)
        .with_state(Database { name: "main" })
        .build()
        .unwrap_err();
    let RegistryError::MissingState { name, type_name } = &err else {
        panic!("unexpected {err:?}");
    };
    assert_eq!(name, "stamp");
    assert!(type_name.ends_with("Clock"));
    assert!(
        err.to_string()
            .contains("give the builder one with `with_state`"),
        "{err}"
    );
}

#[tokio::test]
async fn a_complete_server_builds_and_serves() {
    let s = AlephToolServer::builder()
        .with_tool(QueryTool)
        .with_tool(StampTool)
        .with_state(Clock)
        .with_state(Database { name: "main" })
        .build()
        .unwrap();
    let result = s.call("query", json!({ "sql": "select 1" })).await;
    assert_eq!(result.output, json!("select 1 on main"));
}

#[tokio::test]
async fn after_build_added_tools_are_checked_too() {
    let s = AlephToolServer::builder()
        .with_state(Clock)
        .build()
        .unwrap();
    let err = s.add(QueryTool).unwrap_err();
    assert!(matches!(err, RegistryError::MissingState { .. }), "{err}");
    let err = s.replace(QueryTool).unwrap_err();
    assert!(matches!(err, RegistryError::MissingState { .. }), "{err}");
    assert!(s.is_empty());
}

/// Takes `State<Database>` without declaring it, as a hand-written tool may.
struct Undeclared;

impl aleph_tools::AlephToolDyn for Undeclared {
    fn name(&self) -> &'static str {
        "undeclared"
    }

    fn definition(&self) -> ToolDefinition {
        ToolDefinition::new(
            "undeclared",
            "Reads state it does not declare.",
            json!({ "type": "object" }),
        )
    }

    fn call<'a>(
        &'a self,
        _args: Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let db = State::<Database>::from_tool_context(ctx)?;
            Ok(ToolOutput::text(db.name))
        })
    }
}

#[tokio::test]
async fn state_a_tool_does_not_declare_fails_its_call_clearly() {
    let s = AlephToolServer::builder()
        .with_dyn_tool(Undeclared)
        .build()
        .unwrap();
    let result = s.call("undeclared", json!({})).await;
    assert_eq!(result.error_kind, Some(ToolErrorKind::MissingState));
    assert!(result.error.unwrap().contains("with_state"));
    let s = AlephToolServer::builder()
        .with_dyn_tool(Undeclared)
        .with_state(Database { name: "main" })
        .build()
        .unwrap();
    assert_eq!(s.call("undeclared", json!({})).await.output, json!("main"));
}
