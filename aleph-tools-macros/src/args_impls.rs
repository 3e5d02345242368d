//! How the arguments struct `#[tool]` writes gets its `Deserialize` and `JsonSchema`: from
//! serde's and schemars' derives, or, for plain fields, as one call each into the library's
//! generic reader and schema builder.

use proc_macro2::{Group, Span, TokenStream, TokenTree};
use quote::{quote, quote_spanned};
use syn::ext::IdentExt;
use syn::spanned::Spanned;
use syn::{Attribute, Ident, LitStr, Type};

use crate::attr::ToolAttrs;
use crate::docs;
use crate::signature::{Analyzed, ParamKind};

/// The fields of an arguments struct whose `Deserialize` and `JsonSchema` `#[tool]` writes
/// itself: no `#[serde]` or `#[schemars]` attribute, docs that are string literals, and no
/// more than [`PLAIN_FIELDS_MAX`].
#[derive(Default)]
pub(crate) struct PlainFields {
    idents: Vec<Ident>,
    names: Vec<String>,
    types: Vec<Type>,
    /// `Option<fn() -> T>` for each field, for the reader.
    defaults: Vec<TokenStream>,
    /// `FieldDefault` for each field, for the schema.
    default_json: Vec<TokenStream>,
    /// `(title, description)` for each field.
    docs: Vec<TokenStream>,
}

/// The most fields the library's generic reader takes (its tuples go up to 16).
const PLAIN_FIELDS_MAX: usize = 16;

/// Whether the arguments struct's impls can be written without the derives.
pub(crate) fn plain_fields_fit(analyzed: &Analyzed) -> bool {
    let mut count = 0;
    for param in &analyzed.params {
        if let ParamKind::Arg { field_attrs, .. } = &param.kind {
            count += 1;
            let docs_only = field_attrs.iter().all(docs::is_doc);
            if !docs_only || docs::schemars_doc(field_attrs).is_none() {
                return false;
            }
        }
    }
    count <= PLAIN_FIELDS_MAX
}

impl PlainFields {
    /// Adds a field; `make` is the function that makes its default, when it has one.
    pub(crate) fn push(
        &mut self,
        ident: &Ident,
        ty: &Type,
        field_attrs: &[Attribute],
        make: Option<TokenStream>,
        private: &TokenStream,
    ) {
        self.idents.push(ident.clone());
        self.names.push(ident.unraw().to_string());
        self.types.push(ty.clone());
        let (title, description) = docs::schemars_doc(field_attrs).unwrap_or_default();
        self.docs.push(quote!((#title, #description)));
        match make {
            None => {
                self.defaults.push(quote!(#private::None));
                self.default_json.push(quote!(#private::FieldDefault::None));
            }
            Some(make) => {
                self.defaults.push(quote!(#private::Some(#make)));
                self.default_json.push(
                    quote!(#private::FieldDefault::Given((&#private::DefaultProbe(#make())).default_json())),
                );
            }
        }
    }
}

/// What gives the arguments struct its `Deserialize` and `JsonSchema`: the derives, as
/// attributes of the struct, or impls written here for plain fields.
pub(crate) fn args_impls(
    plain: Option<&PlainFields>,
    cfgs: &[&Attribute],
    attrs: &ToolAttrs,
    args: &Ident,
    args_doc: &str,
    private: &TokenStream,
) -> (Option<TokenStream>, Option<TokenStream>) {
    if let Some(plain) = plain {
        let impls = plain_impls(plain, cfgs, args, args_doc, attrs.strict, private);
        return (None, Some(impls));
    }
    let private_str = private.to_string().replace(' ', "");
    let serde_crate = LitStr::new(&format!("{private_str}::serde"), Span::call_site());
    let schemars_crate = LitStr::new(&format!("{private_str}::schemars"), Span::call_site());
    let deny_unknown = attrs.strict.then(|| quote!(#[serde(deny_unknown_fields)]));
    let derives = quote! {
        #[derive(#private::serde::Deserialize, #private::schemars::JsonSchema)]
        #[serde(crate = #serde_crate)]
        #[schemars(crate = #schemars_crate)]
        #deny_unknown
    };
    (Some(derives), None)
}

/// `Deserialize` and `JsonSchema` for an arguments struct of plain fields: each a call into
/// the library's generic reader and schema builder over the tuple of the field types.
fn plain_impls(
    plain: &PlainFields,
    cfgs: &[&Attribute],
    args: &Ident,
    args_doc: &str,
    strict: bool,
    private: &TokenStream,
) -> TokenStream {
    let PlainFields {
        idents,
        names,
        types,
        defaults,
        default_json,
        docs,
    } = plain;
    let name = args.to_string();
    let shape = quote! {
        &#private::ArgsStruct {
            name: #name,
            fields: &[#(#names),*],
            strict: #strict,
        }
    };
    let (title, description) = docs::title_and_description(args_doc);
    let positions = (0..names.len()).map(proc_macro2::Literal::usize_unsuffixed);
    // Spanned at the parameter's type, path and all, so that is where an unmet bound is
    // reported.
    let checks = types.iter().map(|ty| {
        let private = respanned(private.clone(), ty.span());
        quote_spanned!(ty.span()=> let _: #private::Argument<#ty>;)
    });
    quote! {
        #(#cfgs)*
        #[automatically_derived]
        impl<'de> #private::serde::Deserialize<'de> for #args {
            fn deserialize<__D: #private::serde::Deserializer<'de>>(
                deserializer: __D,
            ) -> #private::Result<Self, __D::Error> {
                #(#checks)*
                let index = |key: &str| match key {
                    #(#names => #private::Some(#positions),)*
                    _ => #private::None,
                };
                match #private::read_args::<__D, (#(#types,)*), _>(deserializer, #shape, index, (#(#defaults,)*)) {
                    #private::Ok((#(#idents,)*)) => #private::Ok(Self { #(#idents),* }),
                    #private::Err(error) => #private::Err(error),
                }
            }
        }

        #(#cfgs)*
        #[automatically_derived]
        impl #private::schemars::JsonSchema for #args {
            fn schema_name() -> #private::Cow<'static, str> {
                #private::Cow::Borrowed(#name)
            }

            fn schema_id() -> #private::Cow<'static, str> {
                #private::Cow::Borrowed(::core::concat!(::core::module_path!(), "::", #name))
            }

            fn json_schema(generator: &mut #private::schemars::SchemaGenerator) -> #private::schemars::Schema {
                #[allow(unused_imports)]
                use #private::{DefaultNotShown as _, DefaultShown as _};
                #private::args_schema::<(#(#types,)*)>(
                    generator,
                    #shape,
                    &[#(#docs),*],
                    (#title, #description),
                    &[#(#default_json),*],
                )
            }
        }
    }
}

/// `tokens` with every span set to `span`.
fn respanned(tokens: TokenStream, span: Span) -> TokenStream {
    tokens
        .into_iter()
        .map(|mut token| {
            if let TokenTree::Group(group) = &token {
                let mut inner = Group::new(group.delimiter(), respanned(group.stream(), span));
                inner.set_span(span);
                return TokenTree::Group(inner);
            }
            token.set_span(span);
            token
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use quote::quote;

    use crate::errors::Errors;
    use crate::model::Tool;

    /// How the derives of the arguments struct read in the expansion's text.
    const DERIVES: &str = "serde :: Deserialize , ";

    /// The expansion of `#[tool]` on `item`, as text.
    fn expand(item: proc_macro2::TokenStream) -> String {
        let mut errors = Errors::default();
        let Ok(tool) = Tool::parse(quote!(), item, &mut errors) else {
            panic!("the tool parses");
        };
        assert!(errors.is_empty());
        crate::expand::emit(&tool).to_string()
    }

    #[test]
    fn plain_fields_are_read_by_the_library_and_attributed_ones_by_the_derives() {
        let plain = expand(quote! {
            /// Adds.
            fn add(
                /// The first
                a: i64,
                #[arg(default = 2)] b: i64,
                label: Option<String>,
            ) -> i64 { a + b }
        });
        assert!(plain.contains("read_args"), "{plain}");
        assert!(plain.contains("args_schema"), "{plain}");
        assert!(!plain.contains(DERIVES), "{plain}");
        assert!(!plain.contains("serde (default"), "{plain}");

        let attributed = expand(quote! {
            /// Adds.
            fn add(#[serde(rename = "x")] a: i64, b: i64) -> i64 { a + b }
        });
        assert!(attributed.contains(DERIVES), "{attributed}");
        assert!(!attributed.contains("read_args"), "{attributed}");

        let many: Vec<_> = (0..17_u32)
            .map(|i| quote::format_ident!("a{}", i))
            .collect();
        let wide = expand(quote! {
            /// Takes many.
            fn wide(#(#many: u8),*) {}
        });
        assert!(wide.contains(DERIVES), "{wide}");

        let computed_doc = expand(quote! {
            /// Adds.
            fn add(#[doc = include_str!("x.md")] a: i64) -> i64 { a }
        });
        assert!(computed_doc.contains(DERIVES), "{computed_doc}");
    }
}
