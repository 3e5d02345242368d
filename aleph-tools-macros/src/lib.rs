//! Implementation detail of `aleph-tools`: the `#[tool]` attribute. Depend on `aleph-tools`.

use proc_macro::TokenStream;

/// See `aleph_tools::tool`.
#[proc_macro_attribute]
pub fn tool(attr: TokenStream, item: TokenStream) -> TokenStream {
    let _ = attr;
    item
}
