//! Collects every error found while reading one `#[tool]`, so all are reported in one go.

use std::fmt::Display;

use proc_macro2::TokenStream;
use quote::ToTokens;

#[derive(Default)]
pub(crate) struct Errors(Vec<syn::Error>);

impl Errors {
    pub(crate) fn spanned(&mut self, tokens: impl ToTokens, message: impl Display) {
        self.0.push(syn::Error::new_spanned(tokens, message));
    }

    pub(crate) fn at(&mut self, span: proc_macro2::Span, message: impl Display) {
        self.0.push(syn::Error::new(span, message));
    }

    pub(crate) fn push(&mut self, error: syn::Error) {
        self.0.push(error);
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub(crate) fn to_compile_errors(&self) -> TokenStream {
        self.0.iter().map(syn::Error::to_compile_error).collect()
    }
}
