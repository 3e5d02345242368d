//! Arbitrary JSON as an input schema, rewritten into every provider's dialect: each answer
//! is a schema or an error, never a panic, and a rewritten schema rewrites again.
#![no_main]

use aleph_tools::schema::{Dialect, Refs};
use libfuzzer_sys::fuzz_target;

const DIALECTS: [Dialect; 7] = [
    Dialect::OpenAi { strict: true },
    Dialect::OpenAi { strict: false },
    Dialect::Anthropic,
    Dialect::Gemini,
    Dialect::Mcp { refs: Refs::Inline },
    Dialect::Mcp { refs: Refs::Keep },
    Dialect::Mcp {
        refs: Refs::Smallest,
    },
];

fuzz_target!(|data: &[u8]| {
    let Ok(schema) = serde_json::from_slice::<serde_json::Value>(data) else {
        return;
    };
    for dialect in DIALECTS {
        if let Ok(rewritten) = dialect.apply(&schema) {
            assert!(rewritten.is_object(), "{dialect}: {rewritten}");
            let _ = dialect.apply(&rewritten);
        }
    }
});
