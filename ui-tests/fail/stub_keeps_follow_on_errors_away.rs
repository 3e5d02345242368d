use aleph_tools::prelude::*;

/// One mistake in the attribute ...
#[tool(readonly)]
fn lookup(key: String) -> String {
    key
}

fn main() {
    // ... and no further errors where the function and the tool type are used.
    let _ = lookup("k".to_owned());
    let _server = AlephToolServer::builder().with_tool(LookupTool).build();
}
