//! The `{{id}}` plugin: its tools as functions of a WebAssembly module, which the host runs
//! in a sandbox. Each tool is an export that takes the call's arguments as JSON (already
//! checked against the manifest's `input_schema`) and returns JSON.

use extism_pdk::{Error, FnResult, Json, WithReturnCode, plugin_fn};
use serde::{Deserialize, Serialize};

/// The arguments of `greet`, as the manifest's `input_schema` describes them.
#[derive(Deserialize)]
struct GreetArgs {
    /// Who to greet.
    name: String,
    /// Whether to answer in capitals.
    #[serde(default)]
    shout: bool,
}

/// What `greet` returns.
#[derive(Serialize)]
struct Greeting {
    greeting: String,
}

/// `greet`: a greeting for someone. An `Err` is the call's error, which the model reads.
#[plugin_fn]
pub fn greet(Json(args): Json<GreetArgs>) -> FnResult<Json<Greeting>> {
    if args.name.trim().is_empty() {
        return Err(WithReturnCode::new(
            Error::msg("`name` is empty; give the name of someone to greet"),
            1,
        ));
    }
    let greeting = format!("Hello, {}!", args.name);
    Ok(Json(Greeting {
        greeting: if args.shout {
            greeting.to_uppercase()
        } else {
            greeting
        },
    }))
}
