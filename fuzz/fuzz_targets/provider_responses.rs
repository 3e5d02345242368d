//! Arbitrary JSON as a model API's response, run through every provider's tool-call parser
//! and the server: each is a round of results or an error, never a panic.
#![no_main]

use std::future::IntoFuture as _;

use aleph_tools::provider::Provider;
use aleph_tools_fuzz::{runtime, server};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(response) = serde_json::from_slice::<serde_json::Value>(data) else {
        return;
    };
    for provider in Provider::ALL {
        let round = server().run_tool_calls(provider, &response).into_future();
        if let Ok(round) = runtime().block_on(round) {
            assert_eq!(round.results.len(), round.calls.len(), "{provider:?}");
        }
    }
});
