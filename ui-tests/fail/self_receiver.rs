use aleph_tools::prelude::*;

struct Searcher;

impl Searcher {
    /// A method cannot be a tool.
    #[tool]
    fn search(&self, query: String) -> String {
        query
    }
}

fn main() {}
