//! A tool name (the first line) and arguments (the rest) as a model might send them: name
//! repair, JSON parsing, validation, argument repair and deserialization must answer every
//! input with a result, never a panic.
#![no_main]

use aleph_tools_fuzz::{runtime, server};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let (name, args) = text.split_once('\n').unwrap_or((&text, "{}"));
    let args = match serde_json::from_str(args) {
        Ok(args) => args,
        // Not JSON: what a provider round passes on as the raw text.
        Err(_) => serde_json::Value::String(args.to_owned()),
    };
    let result = runtime().block_on(server().call(name, args).into_future());
    if !result.success {
        assert!(result.error.is_some(), "a failed call says why");
    }
});
