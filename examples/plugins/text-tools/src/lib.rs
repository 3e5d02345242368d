//! Text tools as a WebAssembly plugin. Each tool is an exported function that takes the
//! call's arguments as JSON and returns JSON.

use extism_pdk::{FnResult, Json, WithReturnCode, plugin_fn};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

// ANCHOR: args
#[derive(Deserialize)]
struct CountArgs {
    text: String,
}

#[derive(Serialize)]
struct Counts {
    words: usize,
    lines: usize,
    characters: usize,
}
// ANCHOR_END: args

// ANCHOR: word_count
/// `word_count`: its schema is written in the manifest.
#[plugin_fn]
pub fn word_count(Json(args): Json<CountArgs>) -> FnResult<Json<Counts>> {
    Ok(Json(Counts {
        words: args.text.split_whitespace().count(),
        lines: args.text.lines().count(),
        characters: args.text.chars().count(),
    }))
}
// ANCHOR_END: word_count

#[derive(Deserialize)]
struct SlugArgs {
    text: String,
    #[serde(default = "dash")]
    separator: String,
}

fn dash() -> String {
    "-".to_owned()
}

/// `slugify`: its schema comes from `describe` below. Refuses text with nothing to keep,
/// which the host reports to the model as the tool's error.
#[plugin_fn]
pub fn slugify(Json(args): Json<SlugArgs>) -> FnResult<Json<String>> {
    let words: Vec<String> = args
        .text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    if words.is_empty() {
        return Err(WithReturnCode::new(
            extism_pdk::Error::msg("the text has no letters or digits to make a slug from"),
            1,
        ));
    }
    Ok(Json(words.join(&args.separator)))
}

/// `echo`: returns its arguments. It declares no schema, so it takes any object.
#[plugin_fn]
pub fn echo(Json(args): Json<Value>) -> FnResult<Json<Value>> {
    Ok(Json(args))
}

// ANCHOR: describe
/// The schemas of the tools whose manifest entry has none.
#[plugin_fn]
pub fn describe() -> FnResult<Json<Value>> {
    Ok(Json(json!({
        "slugify": {
            "type": "object",
            "properties": {
                "text": { "type": "string", "description": "Text to turn into a slug" },
                "separator": {
                    "type": "string",
                    "description": "Put between words",
                    "default": "-",
                    "maxLength": 3
                }
            },
            "required": ["text"]
        }
    })))
}
// ANCHOR_END: describe

/// The `version` command, run directly by a user.
#[plugin_fn]
pub fn version(Json(_input): Json<Value>) -> FnResult<Json<Value>> {
    Ok(Json(
        json!({ "plugin": "text-tools", "version": env!("CARGO_PKG_VERSION") }),
    ))
}

// ANCHOR: route
/// The request an HTTP route handler gets, as far as this plugin reads it.
#[derive(Deserialize)]
struct HttpRequest {
    #[serde(default)]
    body: String,
    #[serde(default)]
    query: serde_json::Map<String, Value>,
}

/// `POST /plugins/text-tools/count`: counts the request's body (text). `?only=words`
/// answers the word count alone, as text.
#[plugin_fn]
pub fn count_route(Json(request): Json<HttpRequest>) -> FnResult<Json<Value>> {
    let words = request.body.split_whitespace().count();
    if request.query.get("only").and_then(Value::as_str) == Some("words") {
        return Ok(Json(json!({ "status": 200, "body": words.to_string() })));
    }
    Ok(Json(json!({
        "status": 200,
        "headers": { "cache-control": "no-store" },
        "body": {
            "words": words,
            "lines": request.body.lines().count(),
            "characters": request.body.chars().count(),
        },
    })))
}
// ANCHOR_END: route
