//! What `#[tool]` emits when it found mistakes: the function as written, a stub tool so
//! code that names `{Pascal}Tool` raises no follow-on errors, and every error.

use proc_macro2::TokenStream;
use quote::quote;

use crate::errors::Errors;
use crate::expand::{cfg_attrs, private_path};
use crate::model::Tool;

/// The function of `tool` as written, a stub of its tool type, and `errors`.
pub(crate) fn emit(tool: &Tool, errors: &Errors) -> TokenStream {
    let Tool {
        func,
        attrs,
        name: (name, _),
        names,
        ..
    } = tool;
    let private = private_path(attrs);
    let vis = &func.vis;
    let cfgs = cfg_attrs(func);
    let tool = &names.tool;
    let compile_errors = errors.to_compile_errors();
    if func.sig.receiver().is_some() {
        // A method sits in an `impl` block, where no struct may be declared.
        return quote!(#func #compile_errors);
    }
    quote! {
        #func

        #(#cfgs)*
        #[allow(missing_docs)]
        #[derive(::core::clone::Clone, ::core::default::Default)]
        #vis struct #tool;

        #(#cfgs)*
        const _: () = {
            impl #private::AlephTool for #tool {
                const NAME: &'static str = #name;
                const DESCRIPTION: &'static str = "";
                type Args = #private::NoArgs;
                type Output = ();

                fn call(
                    &self,
                    _: Self::Args,
                    _: &#private::ToolContext,
                ) -> impl #private::Future<Output = #private::Result<(), #private::ToolError>> + ::core::marker::Send {
                    async { #private::Err(#private::ToolError::execution("this tool failed to compile")) }
                }
            }
        };

        #compile_errors
    }
}
