//! Writes the code for one valid `#[tool]`: the function as written, `{Pascal}Args`,
//! `{Pascal}Tool`, its `AlephTool` impl and its link-time registration.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::ext::IdentExt;
use syn::spanned::Spanned;
use syn::{Attribute, Ident, LitStr, Type};

use crate::args_impls::{PlainFields, args_impls, plain_fields_fit};
use crate::attr::ToolAttrs;
use crate::model::{Func, Names, Tool};
use crate::signature::{Analyzed, ArgDefault, Output, ParamKind};

/// The `cfg` attributes of the function, repeated on every item generated beside it.
pub(crate) fn cfg_attrs(func: &Func) -> Vec<&Attribute> {
    func.attrs
        .iter()
        .filter(|a| a.path().is_ident("cfg"))
        .collect()
}

/// `::aleph_tools::__private_{version}` (or through `crate = path`): the runtime's module for
/// this macro's version, so a version mismatch is a compile error, not a misbehaviour.
pub(crate) fn private_path(attrs: &ToolAttrs) -> TokenStream {
    let module = format_ident!(
        "__private_{}",
        env!("CARGO_PKG_VERSION").replace(['.', '-', '+'], "_")
    );
    if let Some(path) = &attrs.krate {
        quote!(#path::#module)
    } else {
        quote!(::aleph_tools::#module)
    }
}

/// What the parameters turn into: `Args` fields, their default functions, and the
/// statements and expressions that call the function.
#[derive(Default)]
struct ParamParts {
    fields: Vec<TokenStream>,
    default_fns: Vec<TokenStream>,
    arg_idents: Vec<Ident>,
    injections: Vec<TokenStream>,
    /// The injected types, asked which state they need.
    injected_types: Vec<Type>,
    call_args: Vec<TokenStream>,
    /// The arguments' types, their defaults and their docs, for impls written without
    /// the derives; `None` when a field needs a derive.
    plain: Option<PlainFields>,
}

fn param_parts(
    analyzed: &Analyzed,
    vis: &syn::Visibility,
    args: &Ident,
    private: &TokenStream,
) -> ParamParts {
    let mut parts = ParamParts {
        plain: plain_fields_fit(analyzed).then(PlainFields::default),
        ..ParamParts::default()
    };
    for (index, param) in analyzed.params.iter().enumerate() {
        let ident = &param.ident;
        let ty = &param.ty;
        match &param.kind {
            ParamKind::Arg {
                field_attrs,
                documented,
                default,
            } => {
                let allow_undocumented = (!documented).then(|| quote!(#[allow(missing_docs)]));
                let (default_attr, default_fn) = match default {
                    None => (None, None),
                    Some(ArgDefault::Trait) => (Some(quote!(#[serde(default)])), None),
                    Some(ArgDefault::Expr(expr)) => {
                        let default_fn = format_ident!("__aleph_default_{}", ident.unraw());
                        let path = LitStr::new(&format!("{args}::{default_fn}"), Span::call_site());
                        parts.default_fns.push(quote_spanned! {expr.span()=>
                            #[doc(hidden)]
                            fn #default_fn() -> #ty {
                                #expr
                            }
                        });
                        (Some(quote!(#[serde(default = #path)])), Some(default_fn))
                    }
                };
                // Without the derives, the defaults are the reader's, not serde attributes.
                let default_attr = match &mut parts.plain {
                    Some(plain) => {
                        let make = match (default, default_fn) {
                            (None, _) => None,
                            (Some(_), Some(default_fn)) => Some(quote!(#args::#default_fn)),
                            (Some(_), None) => {
                                Some(quote!(<#ty as ::core::default::Default>::default))
                            }
                        };
                        plain.push(ident, ty, field_attrs, make, private);
                        None
                    }
                    None => default_attr,
                };
                parts.fields.push(quote! {
                    #(#field_attrs)*
                    #allow_undocumented
                    #default_attr
                    #vis #ident: #ty
                });
                parts.arg_idents.push(ident.clone());
                parts.call_args.push(quote!(#ident));
            }
            ParamKind::ContextRef => parts.call_args.push(quote!(__aleph_ctx)),
            ParamKind::Injected => {
                let var = format_ident!("__aleph_injected_{}", index);
                parts.injections.push(quote_spanned! {ty.span()=>
                    let #var = match <#ty as #private::FromToolContext>::from_tool_context(__aleph_ctx) {
                        #private::Ok(value) => value,
                        #private::Err(error) => return #private::Err(error),
                    };
                });
                parts.call_args.push(quote!(#var));
                parts.injected_types.push(ty.clone());
            }
        }
    }
    parts
}

/// The `Output` type, the expression that finishes a call, and compile-time checks spanned
/// at the return type.
fn output_parts(
    output: &Output,
    invoke: &TokenStream,
    private: &TokenStream,
) -> (TokenStream, TokenStream, TokenStream) {
    match output {
        Output::Unit => (quote!(()), quote! { #invoke; #private::Ok(()) }, quote!()),
        Output::Plain(ty) => (quote!(#ty), quote!(#private::Ok(#invoke)), quote!()),
        Output::Result(ty) => (
            quote_spanned!(ty.span()=> <#ty as #private::ResultShape>::Ok),
            quote! {
                match #invoke {
                    #private::Ok(value) => #private::Ok(value),
                    #private::Err(error) => {
                        #[allow(unused_imports)]
                        use #private::{ViaDisplay as _, ViaNothing as _, ViaToolError as _};
                        #private::Err(#private::ErrorWrap(error).into_tool_error())
                    }
                }
            },
            quote_spanned! {ty.span()=>
                const _: fn() = || {
                    #private::assert_error::<<#ty as #private::ResultShape>::Err>();
                };
            },
        ),
    }
}

/// The code of `tool`, which parsed and validated without a mistake.
pub(crate) fn emit(tool: &Tool) -> TokenStream {
    let Tool {
        func,
        attrs,
        analyzed,
        name: (name, _),
        description,
        names,
    } = tool;
    let private = private_path(attrs);
    let vis = &func.vis;
    let cfgs = cfg_attrs(func);
    let fn_ident = &func.sig.ident;
    let Names { tool, args } = names;
    let ParamParts {
        fields,
        default_fns,
        arg_idents,
        injections,
        injected_types,
        call_args,
        plain,
    } = param_parts(analyzed, vis, args, &private);
    let required_state = required_state(&injected_types, &private);
    let reads_context = reads_context(analyzed);
    let is_async = func.sig.asyncness.is_some();
    let invoke = if is_async {
        quote!(#fn_ident(#(#call_args),*).await)
    } else {
        quote!(#fn_ident(#(#call_args),*))
    };
    let (output_ty, finish, checks) = output_parts(&analyzed.output, &invoke, &private);
    let defaults = defaults_impl(&cfgs, args, &default_fns);
    let finish = if is_async || attrs.inline {
        finish
    } else {
        on_blocking_pool(analyzed, &finish, &private)
    };
    let body = call_body(
        is_async && matches!(analyzed.output, Output::Plain(_) | Output::Unit),
        fn_ident,
        &call_args,
        &injections,
        &finish,
        &private,
    );
    let overrides = overrides(attrs, &private);
    let submit = submissions(attrs, &cfgs, tool, &private);
    // Items of their own, not wrapped in a `const _` block: each block is one more item for
    // the compiler to check and evaluate, for every tool.
    let checks = (!checks.is_empty()).then(|| quote!(#(#cfgs)* #checks));
    let args_doc =
        format!("Arguments of the `{name}` tool (generated by `#[tool]` from `{fn_ident}`).");
    let (derives, impls) = args_impls(plain.as_ref(), &cfgs, attrs, args, &args_doc, &private);
    let tool_doc = format!("The `{name}` tool (generated by `#[tool]` from `{fn_ident}`).");

    quote! {
        // Tool arguments are owned by design (they are deserialized), and tools may take
        // many of them.
        #[allow(clippy::needless_pass_by_value, clippy::too_many_arguments)]
        #func

        #(#cfgs)*
        #[doc = #args_doc]
        #derives
        #vis struct #args {
            #(#fields,)*
        }

        #impls

        #defaults

        #(#cfgs)*
        #[doc = #tool_doc]
        #[derive(::core::clone::Clone, ::core::default::Default)]
        #vis struct #tool;

        #checks

        #(#cfgs)*
        #[automatically_derived]
        impl #private::AlephTool for #tool {
            const NAME: &'static str = #name;
            const DESCRIPTION: &'static str = #description;
            type Args = #args;
            type Output = #output_ty;
            #reads_context

            #overrides
            #required_state

            fn output_schema() -> #private::Option<#private::StdArc<#private::serde_json::Value>> {
                #[allow(unused_imports)]
                use #private::{OutputSchemaFallback as _, OutputSchemaViaJsonSchema as _};
                (&#private::OutputSchemaProbe::<Self::Output>::new()).output_schema()
            }

            fn call(
                &self,
                __aleph_args: Self::Args,
                __aleph_ctx: &#private::ToolContext,
            ) -> impl #private::Future<Output = #private::Result<Self::Output, #private::ToolError>> + ::core::marker::Send {
                let #args { #(#arg_idents,)* } = __aleph_args;
                #body
            }
        }

        #submit
    }
}

/// The inherent impl holding the functions of `#[arg(default = ...)]`, when there are any.
fn defaults_impl(
    cfgs: &[&Attribute],
    args: &Ident,
    default_fns: &[TokenStream],
) -> Option<TokenStream> {
    (!default_fns.is_empty()).then(|| {
        quote! {
            #(#cfgs)*
            #[automatically_derived]
            impl #args {
                #(#default_fns)*
            }
        }
    })
}

/// The body of `AlephTool::call`: the function's own future wrapped (`Returns`) when it is
/// an async function whose output is the tool's as it is (`returns_as_is`) and nothing is
/// injected; else an `async` block.
fn call_body(
    returns_as_is: bool,
    fn_ident: &Ident,
    call_args: &[TokenStream],
    injections: &[TokenStream],
    finish: &TokenStream,
    private: &TokenStream,
) -> TokenStream {
    if returns_as_is && injections.is_empty() {
        return quote!(#private::Returns::new(#fn_ident(#(#call_args),*)));
    }
    quote! {
        async move {
            #(#injections)*
            #finish
        }
    }
}

/// What the expansion hands the linker: the tool's registration, unless `register = false`.
fn submissions(
    attrs: &ToolAttrs,
    cfgs: &[&Attribute],
    tool: &Ident,
    private: &TokenStream,
) -> Option<TokenStream> {
    attrs.register.then(|| {
        quote! {
            #(#cfgs)*
            #private::inventory::submit! {
                #private::ToolRegistration::new(&#tool, ::core::file!(), ::core::line!(), ::core::module_path!())
            }
        }
    })
}

/// `READS_CONTEXT = false` for a function with no injected parameter, which never sees its
/// context; nothing (the trait's `true`) for the rest.
fn reads_context(analyzed: &Analyzed) -> Option<TokenStream> {
    let context_free = analyzed
        .params
        .iter()
        .all(|param| matches!(param.kind, ParamKind::Arg { .. }));
    context_free.then(|| {
        quote!(
            const READS_CONTEXT: bool = false;
        )
    })
}

/// A sync body, moved to the blocking pool so it never stalls the async workers and the
/// server's timeout and cancellation hold while it runs. A `&ToolContext` parameter gets a
/// clone of the context, lent to the body on its thread.
fn on_blocking_pool(
    analyzed: &Analyzed,
    finish: &TokenStream,
    private: &TokenStream,
) -> TokenStream {
    let takes_ctx = analyzed
        .params
        .iter()
        .any(|p| matches!(p.kind, ParamKind::ContextRef));
    let (own_ctx, lend_ctx) = if takes_ctx {
        (
            quote!(let __aleph_ctx_owned = ::core::clone::Clone::clone(__aleph_ctx);),
            quote!(let __aleph_ctx = &__aleph_ctx_owned;),
        )
    } else {
        (quote!(), quote!())
    };
    quote! {
        #own_ctx
        #private::run_blocking(<Self as #private::AlephTool>::NAME, move || {
            #lend_ctx
            #finish
        })
        .await
    }
}

/// `AlephTool::required_state`, asking each injected type which state it needs; nothing
/// when the function injects nothing.
fn required_state(injected_types: &[Type], private: &TokenStream) -> Option<TokenStream> {
    (!injected_types.is_empty()).then(|| {
        quote! {
            fn required_state() -> #private::Vec<#private::StateType> {
                let mut types = #private::Vec::new();
                #(
                    if let #private::Some(ty) = <#injected_types as #private::FromToolContext>::required_state() {
                        types.push(ty);
                    }
                )*
                types
            }
        }
    })
}

/// The `AlephTool` items whose defaults a key changed: `INLINE`, and `definition` when a key
/// says more than the name, description and schemas.
fn overrides(attrs: &ToolAttrs, private: &TokenStream) -> TokenStream {
    let inline = attrs.inline.then(|| {
        quote!(
            const INLINE: bool = true;
        )
    });
    let setters = definition_setters(attrs, private);
    if setters.is_empty() {
        return quote!(#inline);
    }
    quote! {
        #inline
        fn definition(&self) -> #private::ToolDefinition {
            #private::ToolDefinition::of::<Self>() #(#setters)*
        }
    }
}

/// The `ToolDefinition` builder calls the keys ask for, in the order of its fields.
fn definition_setters(attrs: &ToolAttrs, private: &TokenStream) -> Vec<TokenStream> {
    let mut setters = Vec::new();
    if let Some(title) = &attrs.title {
        setters.push(quote!(.with_title(#title)));
    }
    if !attrs.icons.is_empty() {
        let icons = &attrs.icons;
        setters.push(quote!(.with_icons([#(#private::Icon::new(#icons)),*])));
    }
    if let Some(meta) = &attrs.meta {
        // Checked to be a JSON object when the macro ran.
        setters.push(quote!(.with_meta(#private::serde_json::from_str(#meta).unwrap_or_default())));
    }
    if let Some(category) = &attrs.category {
        setters.push(quote!(.with_category(#private::ToolCategory::#category)));
    }
    let hints = [
        ("read_only", attrs.read_only),
        ("destructive", attrs.destructive),
        ("idempotent", attrs.idempotent),
        ("open_world", attrs.open_world),
    ];
    if hints.iter().any(|(_, v)| v.is_some()) {
        let hints = hints.iter().filter_map(|(key, value)| {
            let key = Ident::new(key, Span::call_site());
            value.map(|v| quote!(.#key(#v)))
        });
        setters.push(quote!(.with_annotations(#private::ToolAnnotations::NONE #(#hints)*)));
    }
    if attrs.confirm {
        setters.push(quote!(.with_confirmation(true)));
    }
    if !attrs.examples.is_empty() {
        let examples = &attrs.examples;
        setters.push(quote!(.with_examples([#(#examples),*])));
    }
    if !attrs.tags.is_empty() {
        let tags = &attrs.tags;
        setters.push(quote!(.with_tags([#(#tags),*])));
    }
    if !attrs.callers.is_empty() {
        let callers = &attrs.callers;
        setters.push(quote!(.with_allowed_callers([#(#private::Caller::#callers),*])));
    }
    if let Some(ms) = attrs.timeout_ms {
        setters.push(quote!(.with_timeout(#private::Duration::from_millis(#ms))));
    }
    if attrs.strict {
        setters.push(quote!(.with_strict(true)));
    }
    if attrs.task {
        setters.push(quote!(.with_task(true)));
    }
    if attrs.defer_loading {
        setters.push(quote!(.with_defer_loading(true)));
    }
    setters
}
