use aleph_tools::prelude::*;

/// Generic over the query type.
#[tool]
fn search<Q: serde::de::DeserializeOwned>(query: Q) {
    let _ = query;
}

fn main() {}
