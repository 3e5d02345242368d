mod tools {
    use aleph_tools::prelude::*;

    /// Public: its generated types are public too.
    #[tool(register = false)]
    pub fn visible(
        /// A number
        n: u8,
    ) -> u8 {
        n
    }

    /// Compiled out together with everything generated from it.
    #[cfg(any())]
    #[tool]
    pub fn compiled_out(x: TypeThatDoesNotExist) {}

    /// Crate-visible.
    #[tool(register = false)]
    pub(crate) fn crate_visible() {}
}

mod reexport {
    pub use aleph_tools as renamed;
}

mod through_reexport {
    /// Uses the library through another path.
    #[crate::reexport::renamed::tool(crate = crate::reexport::renamed, register = false)]
    pub fn reexported() {}
}

use aleph_tools::AlephTool;

fn main() {
    let args = tools::VisibleArgs { n: 1 };
    assert_eq!(args.n, 1);
    let _ = tools::VisibleTool;
    let _ = tools::CrateVisibleTool;
    assert_eq!(through_reexport::ReexportedTool.definition().name, "reexported");
    assert_eq!(tools::visible(4), 4);
}
