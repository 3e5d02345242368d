use std::collections::HashMap;

use aleph_tools::prelude::*;

/// Strict, but takes a map.
#[tool(strict)]
fn tag(
    labels: HashMap<String, String>,
    extra: Option<Vec<serde_json::Value>>,
) {
    let _ = (labels, extra);
}

fn main() {}
