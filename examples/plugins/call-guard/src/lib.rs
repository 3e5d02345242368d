//! Hooks as a WebAssembly plugin: no tools of its own, two interceptors on everyone else's.
//! Each hook is an exported function that takes the call's context as JSON and answers
//! `null` (go on), `{"arguments": …}` (go on with these) or `{"block": "why"}`.

use extism_pdk::{FnResult, Json, plugin_fn};
use serde::Deserialize;
use serde_json::{Value, json};

/// What an interceptor is told of a call about to run.
#[derive(Deserialize)]
struct Context {
    tool: String,
    arguments: Value,
}

// ANCHOR: guard
/// Blocks every tool whose name starts with `dangerous_`.
#[plugin_fn]
pub fn guard(Json(ctx): Json<Context>) -> FnResult<Json<Value>> {
    if ctx.tool.starts_with("dangerous_") {
        return Ok(Json(
            json!({ "block": "tools named dangerous_* are turned off" }),
        ));
    }
    Ok(Json(Value::Null))
}
// ANCHOR_END: guard

/// Replaces the value of every `password` argument, at any depth, with `***`.
#[plugin_fn]
pub fn redact(Json(ctx): Json<Context>) -> FnResult<Json<Value>> {
    let mut arguments = ctx.arguments;
    if !redact_passwords(&mut arguments) {
        return Ok(Json(Value::Null));
    }
    Ok(Json(json!({ "arguments": arguments })))
}

fn redact_passwords(value: &mut Value) -> bool {
    let mut changed = false;
    match value {
        Value::Object(map) => {
            for (key, item) in map.iter_mut() {
                if key == "password" && item.is_string() {
                    *item = Value::String("***".into());
                    changed = true;
                } else {
                    changed |= redact_passwords(item);
                }
            }
        }
        Value::Array(items) => {
            for item in items {
                changed |= redact_passwords(item);
            }
        }
        _ => {}
    }
    changed
}
