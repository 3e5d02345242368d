//! Implementation detail of `aleph-tools`: the `#[tool]` attribute. Depend on `aleph-tools`
//! and use `aleph_tools::tool`; nothing here is meant to be used directly.
//!
//! The attribute parses its keys (`attr`) and the function's signature (`signature`),
//! collecting every mistake with its span (`errors`), then either expands the tool
//! (`expand`) or emits the function unchanged beside a stub and the errors (`fallback`).

mod attr;
mod docs;
mod errors;
mod expand;
mod fallback;
mod signature;
mod suggest;

use proc_macro::TokenStream;

/// Turns a function into a tool. Documented on `aleph_tools::tool`.
#[proc_macro_attribute]
pub fn tool(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand::tool(attr.into(), item.into()).into()
}
