//! The function under `#[tool]`: which parameters are arguments for the model and which are
//! injected from the call's context, and what it returns.

use syn::parse::Parser;
use syn::punctuated::Punctuated;
use syn::{
    Attribute, Expr, FnArg, GenericArgument, Ident, Meta, Pat, PathArguments, ReturnType,
    Signature, Token, Type,
};

use crate::docs;
use crate::errors::Errors;
use crate::suggest;

/// Injected by type, never part of the schema.
const INJECTED: &[&str] = &[
    "State",
    "Progress",
    "CancellationToken",
    "ToolContext",
    "Caller",
];
const ARG_KEYS: &[&str] = &["default", "inject"];
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
    /// A type whose last path segment is `Result`, alias or not.
    Result(Type),
}

pub(crate) struct Analyzed {
    pub params: Vec<Param>,
    pub output: Output,
}

pub(crate) fn analyze(sig: &Signature, strict: bool, errors: &mut Errors) -> Analyzed {
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
        output: output(&sig.output, errors),
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
    let (default, inject) = arg_options(attrs, errors);
    let ty = (*ty).clone();
    let kind = if is_context_ref(&ty) {
        ParamKind::ContextRef
    } else if inject || is_injected(&ty) {
        ParamKind::Injected
    } else {
        check_arg_type(&ty, strict, errors);
        let field_attrs: Vec<Attribute> = attrs
            .iter()
            .filter(|a| {
                docs::is_doc(a) || a.path().is_ident("serde") || a.path().is_ident("schemars")
            })
            .cloned()
            .collect();
        let documented = !docs::lines(attrs).iter().all(|l| l.trim().is_empty());
        ParamKind::Arg {
            field_attrs,
            documented,
            default,
        }
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

/// Reads `#[arg(default)]`, `#[arg(default = expr)]` and `#[arg(inject)]`.
fn arg_options(attrs: &[Attribute], errors: &mut Errors) -> (Option<ArgDefault>, bool) {
    let mut default = None;
    let mut inject = false;
    for attr in attrs.iter().filter(|a| a.path().is_ident("arg")) {
        let list = match &attr.meta {
            Meta::List(list) => list,
            other => {
                errors.spanned(other, "write `#[arg(default = ...)]` or `#[arg(inject)]`");
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
            match (key.as_str(), meta) {
                ("default", Meta::Path(_)) => default = Some(ArgDefault::Trait),
                ("default", Meta::NameValue(nv)) => {
                    default = Some(ArgDefault::Expr(Box::new(nv.value)));
                }
                ("inject", Meta::Path(_)) => inject = true,
                ("default" | "inject", other) => {
                    errors.spanned(
                        other,
                        "write `#[arg(default)]`, `#[arg(default = ...)]` or `#[arg(inject)]`",
                    );
                }
                (_, other) => {
                    let path = other.path();
                    errors.spanned(
                        path,
                        format!("unknown `arg` key `{key}`{}", suggest::hint(&key, ARG_KEYS)),
                    );
                }
            }
        }
    }
    (default, inject)
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
            last_ident(&r.elem).is_some_and(|i| i == "ToolContext")
        }
        _ => false,
    }
}

fn is_injected(ty: &Type) -> bool {
    last_ident(ty).is_some_and(|i| INJECTED.iter().any(|name| i == name))
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

fn output(ret: &ReturnType, errors: &mut Errors) -> Output {
    let ReturnType::Type(_, ty) = ret else {
        return Output::Unit;
    };
    match &**ty {
        Type::Tuple(t) if t.elems.is_empty() => Output::Unit,
        Type::ImplTrait(_) => {
            errors.spanned(ty, "a tool must name its output type (its schema comes from the type), not `impl Trait`");
            Output::Unit
        }
        other if last_ident(other).is_some_and(|i| i == "Result") => Output::Result(other.clone()),
        other => Output::Plain(other.clone()),
    }
}
