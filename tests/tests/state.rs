//! Typed state: a tool that takes `State<T>` on a server without a `T` is reported when the
//! server is built.

use aleph_tools::prelude::*;
use aleph_tools::{RegistryError, StateType, ToolErrorKind};
use serde_json::json;

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
    let err = AlephToolServer::new()
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
            .contains("give it one with `with_state` before `build`"),
        "{err}"
    );
}

#[tokio::test]
async fn a_complete_server_builds_and_serves() {
    let s = AlephToolServer::new()
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
    let s = AlephToolServer::new().with_state(Clock).build().unwrap();
    let err = s.add_tool(QueryTool).unwrap_err();
    assert!(matches!(err, RegistryError::MissingState { .. }), "{err}");
    let err = s.replace_tool(QueryTool).unwrap_err();
    assert!(matches!(err, RegistryError::MissingState { .. }), "{err}");
    assert!(s.is_empty());
}

#[tokio::test]
async fn without_build_the_call_reports_it() {
    let s = AlephToolServer::new().with_tool(QueryTool);
    let result = s.call("query", json!({ "sql": "x" })).await;
    assert_eq!(result.error_kind, Some(ToolErrorKind::MissingState));
}
