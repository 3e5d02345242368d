//! Argument repair: opt-in, schema-guided fixes for arguments a model got nearly right,
//! each recorded in the result.

use aleph_tools::prelude::*;
use aleph_tools::{Coercion, CoercionKind, ToolErrorKind};
use serde_json::{Value, json};

#[derive(Debug, serde::Deserialize, serde::Serialize, schemars::JsonSchema)]
struct Filter {
    max_size: u64,
    include_hidden: bool,
}

/// List files.
#[tool(register = false)]
fn list_files(
    path: String,
    max_results: u32,
    recursive: bool,
    ratio: Option<f64>,
    filter: Option<Filter>,
    extensions: Vec<String>,
) -> Value {
    json!({
        "path": path,
        "max_results": max_results,
        "recursive": recursive,
        "ratio": ratio,
        "filter": filter,
        "extensions": extensions,
    })
}

fn repairing() -> AlephToolServer {
    AlephToolServer::builder()
        .with_tool(ListFilesTool)
        .with_argument_repair(true)
        .build()
        .unwrap()
}

fn kinds(coercions: &[Coercion]) -> Vec<(&str, CoercionKind)> {
    coercions
        .iter()
        .map(|c| (c.pointer.as_str(), c.kind))
        .collect()
}

#[tokio::test]
async fn repair_is_off_unless_asked_for() {
    let plain = AlephToolServer::builder()
        .with_tool(ListFilesTool)
        .build()
        .unwrap();
    let result = plain
        .call(
            "list_files",
            json!({ "path": "/", "max_results": "5", "recursive": true, "extensions": [] }),
        )
        .await;
    assert_eq!(result.error_kind, Some(ToolErrorKind::InvalidArgs));
    assert!(result.coercions.is_empty());
}

#[tokio::test]
async fn numbers_and_booleans_sent_as_strings_are_converted_and_recorded() {
    let result = repairing()
        .call(
            "list_files",
            json!({
                "path": "42",
                "max_results": " 10 ",
                "recursive": "TRUE",
                "ratio": "0.5",
                "extensions": ["rs"],
            }),
        )
        .await;
    assert!(result.success, "{result:?}");
    assert_eq!(result.output["max_results"], 10);
    assert_eq!(result.output["recursive"], true);
    assert_eq!(result.output["ratio"], 0.5);
    // A string the schema wants as a string is left alone, even when it looks like a number.
    assert_eq!(result.output["path"], "42");
    let mut got = kinds(&result.coercions);
    got.sort_unstable();
    assert_eq!(
        got,
        [
            ("/max_results", CoercionKind::NumberFromString),
            ("/ratio", CoercionKind::NumberFromString),
            ("/recursive", CoercionKind::BooleanFromString),
        ]
    );
    let max = result
        .coercions
        .iter()
        .find(|c| c.pointer == "/max_results")
        .unwrap();
    assert_eq!(max.original, json!(" 10 "));
}

#[tokio::test]
async fn objects_and_arrays_sent_as_json_text_are_parsed_and_repaired_inside() {
    let result = repairing()
        .call(
            "list_files",
            json!({
                "path": "/",
                "max_results": 1,
                "recursive": false,
                "filter": "{\"maxSize\": \"2048\", \"include_hidden\": \"false\"}",
                "extensions": "[\"md\", \"rs\"]",
            }),
        )
        .await;
    assert!(result.success, "{result:?}");
    assert_eq!(
        result.output["filter"],
        json!({ "max_size": 2048, "include_hidden": false })
    );
    assert_eq!(result.output["extensions"], json!(["md", "rs"]));
    let mut got = kinds(&result.coercions);
    got.sort_unstable();
    assert_eq!(
        got,
        [
            ("/extensions", CoercionKind::ParsedJsonString),
            ("/filter", CoercionKind::ParsedJsonString),
            ("/filter/include_hidden", CoercionKind::BooleanFromString),
            ("/filter/max_size", CoercionKind::NumberFromString),
            ("/filter/max_size", CoercionKind::RenamedKey),
        ]
    );
}

#[tokio::test]
async fn keys_in_another_case_are_renamed_to_the_schemas() {
    let result = repairing()
        .call(
            "list_files",
            json!({
                "Path": "/tmp",
                "maxResults": 3,
                "RECURSIVE": true,
                "extensions": [],
            }),
        )
        .await;
    assert!(result.success, "{result:?}");
    assert_eq!(result.output["path"], "/tmp");
    assert_eq!(result.output["max_results"], 3);
    let renamed: Vec<(&str, &Value)> = result
        .coercions
        .iter()
        .filter(|c| c.kind == CoercionKind::RenamedKey)
        .map(|c| (c.pointer.as_str(), &c.original))
        .collect();
    assert!(
        renamed.contains(&("/max_results", &json!("maxResults"))),
        "{renamed:?}"
    );
    assert!(renamed.contains(&("/path", &json!("Path"))), "{renamed:?}");
    assert!(
        renamed.contains(&("/recursive", &json!("RECURSIVE"))),
        "{renamed:?}"
    );
}

#[tokio::test]
async fn a_key_already_present_is_never_overwritten_by_a_rename() {
    let result = repairing()
        .call(
            "list_files",
            json!({
                "path": "/a",
                "PATH": "/b",
                "max_results": 1,
                "recursive": true,
                "extensions": [],
            }),
        )
        .await;
    assert!(result.success, "{result:?}");
    assert_eq!(result.output["path"], "/a");
    assert!(result.coercions.is_empty(), "{:?}", result.coercions);
}

#[tokio::test]
async fn what_cannot_be_repaired_fails_with_the_usual_error() {
    let s = repairing();
    for (args, needle) in [
        (
            json!({ "path": "/", "max_results": "ten", "recursive": true, "extensions": [] }),
            "`/max_results`: expected an integer, received the string \"ten\"",
        ),
        (
            json!({ "path": "/", "max_results": "1.5", "recursive": true, "extensions": [] }),
            "`/max_results`: expected an integer, received the string \"1.5\"",
        ),
        (
            json!({ "path": "/", "max_results": 1, "recursive": "yes", "extensions": [] }),
            "`/recursive`: expected a boolean, received the string \"yes\"",
        ),
        (
            json!({ "path": "/", "max_results": 1, "recursive": true, "extensions": "{\"a\": 1}" }),
            "`/extensions`: expected an array",
        ),
        (
            json!({ "path": "/", "max_results": 1, "recursive": true, "extensions": "[unclosed" }),
            "`/extensions`: expected an array",
        ),
    ] {
        let result = s.call("list_files", args.clone()).await;
        assert_eq!(
            result.error_kind,
            Some(ToolErrorKind::InvalidArgs),
            "{args}"
        );
        let message = result.error.unwrap();
        assert!(
            message.contains(needle),
            "{args}: `{message}` lacks `{needle}`"
        );
    }
}

#[tokio::test]
async fn ambiguous_keys_are_left_alone() {
    /// Two keys that fold to the same letters.
    #[tool(register = false)]
    fn pick(
        #[serde(rename = "max_size")] small: Option<u32>,
        #[serde(rename = "maxSize")] large: Option<u32>,
    ) -> Value {
        json!([small, large])
    }
    let s = AlephToolServer::builder()
        .with_tool(PickTool)
        .with_argument_repair(true)
        .build()
        .unwrap();
    let result = s.call("pick", json!({ "MAX_SIZE": 1 })).await;
    assert!(result.success, "{result:?}");
    assert_eq!(result.output, json!([null, null]));
    assert!(result.coercions.is_empty());
}

#[tokio::test]
async fn repairs_survive_serialization_of_the_result() {
    let result = repairing()
        .call(
            "list_files",
            json!({ "path": "/", "max_results": "2", "recursive": true, "extensions": [] }),
        )
        .await;
    let json = serde_json::to_value(&result).unwrap();
    assert_eq!(
        json["coercions"],
        json!([{ "pointer": "/max_results", "kind": "number_from_string", "original": "2" }])
    );
    let clean = repairing()
        .call(
            "list_files",
            json!({ "path": "/", "max_results": 2, "recursive": true, "extensions": [] }),
        )
        .await;
    assert!(
        serde_json::to_value(&clean)
            .unwrap()
            .get("coercions")
            .is_none()
    );
}
