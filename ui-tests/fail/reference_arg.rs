use aleph_tools::prelude::*;

/// Borrows its arguments.
#[tool]
fn shout(text: &str, words: &[String]) -> String {
    let _ = words;
    text.to_uppercase()
}

fn main() {}
