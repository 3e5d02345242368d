//! The function under `#[tool]`: which parameters are arguments for the model and which are
//! injected from the call's context, and what it returns.

use syn::parse::Parser;
use syn::punctuated::Punctuated;
use syn::{
    Attribute, Expr, FnArg, GenericArgument, Ident, Meta, Pat, PathArguments, ReturnType,
    Signature, Token, Type,
};

use crate::attr::ToolAttrs;
use crate::docs;
use crate::errors::Errors;
use crate::suggest;

/// Types injected from the call's context, never part of the schema, when written bare
/// (`Progress`, as the prelude imports them) or by a path through a crate that exports them.
const INJECTED: &[&str] = &[
    "State",
    "Progress",
    "CancellationToken",
    "ToolContext",
    "Caller",
    "Identity",
];
/// The crates whose paths name the injected types.
const INJECTING_CRATES: &[&str] = &["aleph_tools", "tokio_util"];
/// The keys of `#[arg(...)]`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum ArgKey {
    Default,
    Inject,
    Model,
}

impl ArgKey {
    const ALL: [Self; 3] = [Self::Default, Self::Inject, Self::Model];

    fn as_str(self) -> &'static str {
        match self {
            Self::Default => "default",
            Self::Inject => "inject",
            Self::Model => "model",
        }
    }

    fn from_str(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|key| key.as_str() == text)
    }
}
/// Types whose schema admits any key, so a strict tool cannot take them.
const OPEN_TYPES: &[&str] = &["HashMap", "BTreeMap", "IndexMap", "Map", "Value"];

pub(crate) struct Param {
    pub ident: Ident,
    pub ty: Type,
    pub kind: ParamKind,
}

pub(crate) enum ParamKind {
    /// From the model's arguments: becomes a field of the `Args` struct.
    Arg {
        /// Doc comments, `#[serde]` and `#[schemars]` attributes, carried to the field.
        field_attrs: Vec<Attribute>,
        documented: bool,
        default: Option<ArgDefault>,
    },
    /// `&ToolContext`: the call's context itself.
    ContextRef,
    /// Built by `FromToolContext`.
    Injected,
}

pub(crate) enum ArgDefault {
    /// `#[arg(default)]`: `Default::default()`.
    Trait,
    /// `#[arg(default = expr)]`.
    Expr(Box<Expr>),
}

pub(crate) enum Output {
    Unit,
    Plain(Type),
    /// A `Result`: a type whose last path segment is `Result` (`anyhow::Result<T>`,
    /// `io::Result<T>`), or any the `result` key says is one. Its `Ok` and `Err` types are
    /// found by the compiler, through any alias.
    Result(Type),
}

pub(crate) struct Analyzed {
    pub params: Vec<Param>,
    pub output: Output,
}

pub(crate) fn analyze(sig: &Signature, attrs: &ToolAttrs, errors: &mut Errors) -> Analyzed {
    let strict = attrs.strict;
    if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
        errors.spanned(
            &sig.generics,
            "a tool cannot be generic: its schema is fixed at compile time; use concrete types",
        );
    }
    let mut params = Vec::new();
    for input in &sig.inputs {
        match input {
            FnArg::Receiver(receiver) => errors.spanned(
                receiver,
                "a tool cannot take `self`: write a free function, and reach shared data through a `State<T>` parameter",
            ),
            FnArg::Typed(typed) => {
                if let Some(param) = param(&typed.pat, &typed.ty, &typed.attrs, strict, errors) {
                    params.push(param);
                }
            }
        }
    }
    Analyzed {
        params,
        output: output(&sig.output, attrs.result, errors),
    }
}

fn param(
    pat: &Pat,
    ty: &Type,
    attrs: &[Attribute],
    strict: bool,
    errors: &mut Errors,
) -> Option<Param> {
    let ident = match pat {
        Pat::Ident(p) if p.by_ref.is_none() && p.subpat.is_none() => p.ident.clone(),
        other => {
            errors.spanned(
                other,
                "a tool parameter must be a plain name (it becomes the argument's name); write `name: Type` and destructure inside the body",
            );
            return None;
        }
    };
    let ArgOptions {
        default,
        inject,
        model,
    } = arg_options(attrs, errors);
    let ty = (*ty).clone();
    let kind = if model {
        check_arg_type(&ty, strict, errors);
        arg_kind(attrs, default)
    } else if is_context_ref(&ty) {
        ParamKind::ContextRef
    } else if inject || is_injected(&ty) {
        ParamKind::Injected
    } else {
        check_arg_type(&ty, strict, errors);
        arg_kind(attrs, default)
    };
    let injected = !matches!(kind, ParamKind::Arg { .. });
    if let Some(attr) = attrs
        .iter()
        .find(|a| a.path().is_ident("arg") && has_default(a))
        .filter(|_| injected)
    {
        errors.spanned(
            attr,
            format!("`{ident}` is injected from the call's context, so it takes no default"),
        );
    }
    Some(Param { ident, ty, kind })
}

/// A parameter the model fills in: a field of the `Args` struct.
fn arg_kind(attrs: &[Attribute], default: Option<ArgDefault>) -> ParamKind {
    let field_attrs: Vec<Attribute> = attrs
        .iter()
        .filter(|a| docs::is_doc(a) || a.path().is_ident("serde") || a.path().is_ident("schemars"))
        .cloned()
        .collect();
    let documented = !docs::lines(attrs).iter().all(|l| l.trim().is_empty());
    ParamKind::Arg {
        field_attrs,
        documented,
        default,
    }
}

/// What `#[arg(...)]` said about one parameter.
struct ArgOptions {
    default: Option<ArgDefault>,
    /// `#[arg(inject)]`: built from the context, whatever its type.
    inject: bool,
    /// `#[arg(model)]`: an argument the model fills in, whatever its type is called.
    model: bool,
}

/// Reads `#[arg(default)]`, `#[arg(default = expr)]`, `#[arg(inject)]` and `#[arg(model)]`.
fn arg_options(attrs: &[Attribute], errors: &mut Errors) -> ArgOptions {
    let mut default = None;
    let mut inject = false;
    let mut model = false;
    for attr in attrs.iter().filter(|a| a.path().is_ident("arg")) {
        let list = match &attr.meta {
            Meta::List(list) => list,
            other => {
                errors.spanned(
                    other,
                    "write `#[arg(default = ...)]`, `#[arg(inject)]` or `#[arg(model)]`",
                );
                continue;
            }
        };
        let metas =
            match Punctuated::<Meta, Token![,]>::parse_terminated.parse2(list.tokens.clone()) {
                Ok(metas) => metas,
                Err(err) => {
                    errors.push(err);
                    continue;
                }
            };
        for meta in metas {
            let key = meta
                .path()
                .get_ident()
                .map(ToString::to_string)
                .unwrap_or_default();
            match (ArgKey::from_str(&key), meta) {
                (Some(ArgKey::Default), Meta::Path(_)) => default = Some(ArgDefault::Trait),
                (Some(ArgKey::Default), Meta::NameValue(nv)) => {
                    default = Some(ArgDefault::Expr(Box::new(nv.value)));
                }
                (Some(ArgKey::Inject), Meta::Path(path)) => {
                    if model {
                        errors.spanned(path, "a parameter is either `model` or `inject`, not both");
                    }
                    inject = true;
                }
                (Some(ArgKey::Model), Meta::Path(path)) => {
                    if inject {
                        errors.spanned(path, "a parameter is either `model` or `inject`, not both");
                    }
                    model = true;
                }
                (Some(_), other) => {
                    errors.spanned(
                        other,
                        "write `#[arg(default)]`, `#[arg(default = ...)]`, `#[arg(inject)]` or `#[arg(model)]`",
                    );
                }
                (None, other) => {
                    let path = other.path();
                    let keys: Vec<&str> = ArgKey::ALL.into_iter().map(ArgKey::as_str).collect();
                    errors.spanned(
                        path,
                        format!("unknown `arg` key `{key}`{}", suggest::hint(&key, &keys)),
                    );
                }
            }
        }
    }
    ArgOptions {
        default,
        inject,
        model,
    }
}

fn has_default(attr: &Attribute) -> bool {
    let Meta::List(list) = &attr.meta else {
        return false;
    };
    list.tokens
        .clone()
        .into_iter()
        .any(|t| t.to_string() == "default")
}

fn last_ident(ty: &Type) -> Option<&Ident> {
    match ty {
        Type::Path(p) if p.qself.is_none() => p.path.segments.last().map(|s| &s.ident),
        Type::Group(g) => last_ident(&g.elem),
        Type::Paren(p) => last_ident(&p.elem),
        _ => None,
    }
}

fn is_context_ref(ty: &Type) -> bool {
    match ty {
        Type::Reference(r) if r.mutability.is_none() => {
            injected_name(&r.elem).is_some_and(|i| i == "ToolContext")
        }
        _ => false,
    }
}

/// Whether `ty` names one of the injected types. The type is resolved as far as the tokens
/// allow: `Progress` written bare, or through `aleph_tools::` (or `tokio_util::` for the
/// token), is the injected one; `crate::Progress`, `models::Progress` or any other path is a
/// type of the user's, and so is a `State` without its one type parameter. A bare name the
/// user defined themselves fails to compile with a note pointing to `#[arg(model)]`.
fn is_injected(ty: &Type) -> bool {
    injected_name(ty).is_some()
}

/// The injected type `ty` names, if it names one.
fn injected_name(ty: &Type) -> Option<&Ident> {
    let path = match ty {
        Type::Path(p) if p.qself.is_none() => &p.path,
        Type::Group(g) => return injected_name(&g.elem),
        Type::Paren(p) => return injected_name(&p.elem),
        _ => return None,
    };
    let last = path.segments.last()?;
    let from_known_crate = path.segments.len() == 1 && path.leading_colon.is_none()
        || path
            .segments
            .first()
            .is_some_and(|first| INJECTING_CRATES.iter().any(|krate| first.ident == krate));
    if !from_known_crate || !INJECTED.iter().any(|name| last.ident == name) {
        return None;
    }
    let type_params = match &last.arguments {
        PathArguments::None => 0,
        PathArguments::AngleBracketed(args) => args
            .args
            .iter()
            .filter(|a| matches!(a, GenericArgument::Type(_)))
            .count(),
        PathArguments::Parenthesized(_) => return None,
    };
    let expected = usize::from(last.ident == "State");
    (type_params == expected).then_some(&last.ident)
}

fn check_arg_type(ty: &Type, strict: bool, errors: &mut Errors) {
    match ty {
        Type::Reference(r) => {
            let suggestion = match last_ident(&r.elem) {
                Some(i) if i == "str" => "`String`".to_owned(),
                Some(i) if i == "Path" => "`PathBuf`".to_owned(),
                _ => match &*r.elem {
                    Type::Slice(slice) => {
                        let elem = &slice.elem;
                        format!("`Vec<{}>`", quote::quote!(#elem))
                    }
                    other => format!("`{}`", quote::quote!(#other)),
                },
            };
            errors.spanned(
                ty,
                format!("a tool argument is deserialized into an owned value and cannot be a reference; take {suggestion}"),
            );
        }
        Type::ImplTrait(_) => errors.spanned(
            ty,
            "a tool argument needs a concrete type: its schema comes from the type",
        ),
        _ if strict => check_closed(ty, errors),
        _ => {}
    }
}

/// In a strict tool, maps and `serde_json::Value` are refused: their schema admits any key.
fn check_closed(ty: &Type, errors: &mut Errors) {
    let Type::Path(path) = ty else { return };
    let Some(last) = path.path.segments.last() else {
        return;
    };
    if OPEN_TYPES.iter().any(|open| last.ident == open) {
        errors.spanned(
            ty,
            format!(
                "a `strict` tool needs a closed schema, and `{}` accepts any keys; use a struct with named fields, or drop `strict`",
                last.ident
            ),
        );
        return;
    }
    if let PathArguments::AngleBracketed(args) = &last.arguments {
        for arg in &args.args {
            if let GenericArgument::Type(inner) = arg {
                check_closed(inner, errors);
            }
        }
    }
}

/// What the function returns; `result` is what the `result` key said, if given.
fn output(ret: &ReturnType, result: Option<bool>, errors: &mut Errors) -> Output {
    let ReturnType::Type(_, ty) = ret else {
        return Output::Unit;
    };
    match &**ty {
        Type::Tuple(t) if t.elems.is_empty() => Output::Unit,
        Type::ImplTrait(_) => {
            errors.spanned(ty, "a tool must name its output type (its schema comes from the type), not `impl Trait`");
            Output::Unit
        }
        other if result.unwrap_or_else(|| last_ident(other).is_some_and(|i| i == "Result")) => {
            Output::Result(other.clone())
        }
        other => Output::Plain(other.clone()),
    }
}
