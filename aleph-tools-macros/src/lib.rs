//! Implementation detail of `aleph-tools`: the `#[tool]` attribute. Depend on `aleph-tools`
//! and use `aleph_tools::tool`; nothing here is meant to be used directly.
//!
//! A `#[tool]` goes through three stages, each in its own module: `model` parses the keys
//! (`attr`) and the function's signature (`signature`) into a `model::Tool`, `validate`
//! checks what parsing cannot, and `expand` writes the tool (`args_impls` the arguments
//! struct's `Deserialize` and `JsonSchema`). Every mistake is collected with its span
//! (`errors`); when there is one, `fallback` emits the function unchanged beside a stub and
//! the errors instead.

mod args_impls;
mod attr;
mod docs;
mod errors;
mod expand;
mod fallback;
mod model;
mod signature;
mod suggest;
mod validate;

use proc_macro::TokenStream;

use crate::errors::Errors;
use crate::model::Tool;

/// Turns a function into a tool. Documented on `aleph_tools::tool`.
#[proc_macro_attribute]
pub fn tool(attr: TokenStream, item: TokenStream) -> TokenStream {
    let mut errors = Errors::default();
    let tool = match Tool::parse(attr.into(), item.into(), &mut errors) {
        Ok(tool) => tool,
        Err(item) => {
            let mut out = item;
            out.extend(errors.to_compile_errors());
            return out.into();
        }
    };
    validate::tool(&tool, &mut errors);
    if errors.is_empty() {
        expand::emit(&tool).into()
    } else {
        fallback::emit(&tool, &errors).into()
    }
}
