//! A `#[tool]` as parsed: its keys, its function and what the function's signature says,
//! the tool's name and description, and the names of the types generated for it. Parsing
//! reports what it cannot read; [`validate`](crate::validate) checks the rest.

use heck::ToUpperCamelCase;
use proc_macro2::{Delimiter, Group, Span, TokenStream};
use quote::{ToTokens, TokenStreamExt, format_ident};
use syn::ext::IdentExt;
use syn::parse::{Parse, ParseStream};
use syn::{Attribute, Ident, Signature, Visibility};

use crate::attr::{self, ToolAttrs};
use crate::docs;
use crate::errors::Errors;
use crate::signature::{self, Analyzed};

/// One `#[tool]`, parsed.
pub(crate) struct Tool {
    /// The function, with what is ours taken off its parameters so it compiles as written.
    pub func: Func,
    pub attrs: ToolAttrs,
    pub analyzed: Analyzed,
    /// The name the model calls it by, and where it was written.
    pub name: (String, Span),
    /// The description for the model: `description = "..."`, or the doc comment.
    pub description: String,
    pub names: Names,
}

/// The generated type names, spanned at the function's name.
pub(crate) struct Names {
    pub tool: Ident,
    pub args: Ident,
}

impl Names {
    fn new(fn_ident: &Ident) -> Self {
        let pascal = fn_ident.unraw().to_string().to_upper_camel_case();
        Self {
            tool: format_ident!("{}Tool", pascal, span = fn_ident.span()),
            args: format_ident!("{}Args", pascal, span = fn_ident.span()),
        }
    }
}

impl Tool {
    /// The tool `#[tool(attr)]` makes of `item`; `Err` with the item as written when it is
    /// not a function.
    pub(crate) fn parse(
        attr: TokenStream,
        item: TokenStream,
        errors: &mut Errors,
    ) -> Result<Self, TokenStream> {
        let Ok(mut func) = syn::parse2::<Func>(item.clone()) else {
            errors.at(
                Span::call_site(),
                "#[tool] goes on a function (`fn` or `async fn`); put it on the function that does the work",
            );
            return Err(item);
        };
        let attrs = attr::parse(attr, errors);
        let analyzed = signature::analyze(&func.sig, &attrs, errors);
        let name = match &attrs.name {
            Some(lit) => (lit.value(), lit.span()),
            None => (func.sig.ident.unraw().to_string(), func.sig.ident.span()),
        };
        let description = match &attrs.description {
            Some(lit) => lit.value(),
            None => docs::description(&docs::lines(&func.attrs)),
        };
        let names = Names::new(&func.sig.ident);
        strip_param_attrs(&mut func);
        Ok(Self {
            func,
            attrs,
            analyzed,
            name,
            description,
            names,
        })
    }
}

/// A function as `#[tool]` reads it: its attributes, visibility and signature parsed, its
/// body kept as the tokens written. Nothing reads the body, and parsing it would cost every
/// build of the tool's crate time in proportion to the body's length.
pub(crate) struct Func {
    pub attrs: Vec<Attribute>,
    pub vis: Visibility,
    pub sig: Signature,
    pub body: Group,
}

impl Parse for Func {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let attrs = input.call(Attribute::parse_outer)?;
        let vis = input.parse()?;
        let sig = input.parse()?;
        let body: Group = input.parse()?;
        if body.delimiter() != Delimiter::Brace {
            return Err(syn::Error::new(body.span(), "expected the function's body"));
        }
        Ok(Self {
            attrs,
            vis,
            sig,
            body,
        })
    }
}

impl ToTokens for Func {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        tokens.append_all(&self.attrs);
        self.vis.to_tokens(tokens);
        self.sig.to_tokens(tokens);
        self.body.to_tokens(tokens);
    }
}

/// Removes what is ours or not allowed on parameters (docs, `#[arg]`, `#[serde]`,
/// `#[schemars]`) so the function compiles as written.
fn strip_param_attrs(func: &mut Func) {
    for input in &mut func.sig.inputs {
        if let syn::FnArg::Typed(typed) = input {
            typed.attrs.retain(|a| {
                !(docs::is_doc(a)
                    || a.path().is_ident("arg")
                    || a.path().is_ident("serde")
                    || a.path().is_ident("schemars"))
            });
        }
    }
}
