//! The keys of `#[tool(...)]`, parsed into [`ToolAttrs`] with every mistake reported.

use std::collections::HashSet;

use proc_macro2::{Span, TokenStream};
use syn::parse::Parser;
use syn::punctuated::Punctuated;
use syn::{Expr, ExprArray, ExprLit, Ident, Lit, LitStr, Meta, MetaNameValue, Path, Token};

use crate::errors::Errors;
use crate::suggest;

const FLAGS: &[&str] = &[
    "confirm",
    "read_only",
    "destructive",
    "idempotent",
    "open_world",
    "strict",
];
const VALUED: &[&str] = &[
    "name",
    "description",
    "tags",
    "category",
    "timeout",
    "example",
    "callers",
    "register",
    "crate",
];
const ALL: &[&str] = &[
    "name",
    "description",
    "tags",
    "category",
    "confirm",
    "read_only",
    "destructive",
    "idempotent",
    "open_world",
    "timeout",
    "example",
    "callers",
    "strict",
    "register",
    "crate",
];
const CATEGORIES: &[&str] = &["Builtin", "Mcp", "Plugin", "Skill"];
const CALLERS: &[&str] = &["human", "code_execution"];

/// Everything `#[tool(...)]` said, checked.
#[derive(Default)]
pub(crate) struct ToolAttrs {
    pub name: Option<LitStr>,
    pub description: Option<LitStr>,
    pub tags: Vec<LitStr>,
    pub category: Option<Ident>,
    pub confirm: bool,
    pub read_only: Option<bool>,
    pub destructive: Option<bool>,
    pub idempotent: Option<bool>,
    pub open_world: Option<bool>,
    pub timeout_ms: Option<u64>,
    pub examples: Vec<LitStr>,
    pub callers: Vec<Ident>,
    pub strict: bool,
    pub register: bool,
    pub krate: Option<Path>,
}

pub(crate) fn parse(tokens: TokenStream, errors: &mut Errors) -> ToolAttrs {
    let mut attrs = ToolAttrs {
        register: true,
        ..ToolAttrs::default()
    };
    let metas = match Punctuated::<Meta, Token![,]>::parse_terminated.parse2(tokens) {
        Ok(metas) => metas,
        Err(err) => {
            errors.push(err);
            return attrs;
        }
    };
    let mut seen: HashSet<String> = HashSet::new();
    for meta in metas {
        let path = meta.path();
        let Some(key) = path.get_ident().map(ToString::to_string) else {
            errors.spanned(
                path,
                format!(
                    "unknown key `{}`; keys are single words",
                    quote::quote!(#path)
                ),
            );
            continue;
        };
        if !ALL.contains(&key.as_str()) {
            errors.spanned(
                path,
                format!("unknown key `{key}`{}", suggest::hint(&key, ALL)),
            );
            continue;
        }
        if key != "example" && !seen.insert(key.clone()) {
            errors.spanned(path, format!("duplicate key `{key}`; give it once"));
            continue;
        }
        match meta {
            Meta::Path(path) => {
                if FLAGS.contains(&key.as_str()) {
                    attrs.set_flag(&key, true);
                } else {
                    errors.spanned(&path, format!("`{key}` needs a value: {}", example(&key)));
                }
            }
            Meta::List(list) => {
                errors.spanned(
                    &list,
                    format!(
                        "`{key}(...)` is not a form #[tool] takes; write {}",
                        example(&key)
                    ),
                );
            }
            Meta::NameValue(nv) => attrs.set_value(&key, &nv, errors),
        }
    }
    attrs
}

fn example(key: &str) -> &'static str {
    match key {
        "name" => "`name = \"web_search\"`",
        "description" => "`description = \"What the tool does\"`",
        "tags" => "`tags = [\"web\", \"search\"]`",
        "category" => "`category = Builtin` (or Mcp, Plugin, Skill)",
        "timeout" => "`timeout = \"10s\"` (units: ms, s, m, h)",
        "example" => "`example = r#\"{\"query\": \"rust\"}\"#`",
        "callers" => "`callers = [human, code_execution]`",
        "register" => "`register = false`",
        "crate" => "`crate = ::my_reexport::aleph_tools`",
        "confirm" => "`confirm`",
        "read_only" => "`read_only`",
        "destructive" => "`destructive`",
        "idempotent" => "`idempotent`",
        "open_world" => "`open_world`",
        _ => "`strict`",
    }
}

impl ToolAttrs {
    fn set_flag(&mut self, key: &str, value: bool) {
        match key {
            "confirm" => self.confirm = value,
            "read_only" => self.read_only = Some(value),
            "destructive" => self.destructive = Some(value),
            "idempotent" => self.idempotent = Some(value),
            "open_world" => self.open_world = Some(value),
            _ => self.strict = value,
        }
    }

    fn set_value(&mut self, key: &str, nv: &MetaNameValue, errors: &mut Errors) {
        let value = &nv.value;
        if FLAGS.contains(&key) {
            match lit_bool(value) {
                Some(b) => self.set_flag(key, b),
                None => errors.spanned(
                    value,
                    format!("`{key}` is a flag: write `{key}` or `{key} = false`"),
                ),
            }
            return;
        }
        debug_assert!(VALUED.contains(&key));
        let wrong =
            |errors: &mut Errors| errors.spanned(value, format!("expected {}", example(key)));
        match key {
            "name" => match lit_str(value) {
                Some(s) => self.name = Some(s),
                None => wrong(errors),
            },
            "description" => match lit_str(value) {
                Some(s) if s.value().trim().is_empty() => {
                    errors.spanned(value, "the description is empty; say what the tool does, for the model");
                }
                Some(s) => self.description = Some(s),
                None => wrong(errors),
            },
            "tags" => match strings(value) {
                Some(tags) => self.tags = tags,
                None => wrong(errors),
            },
            "example" => match lit_str(value) {
                Some(s) => self.examples.push(s),
                None => wrong(errors),
            },
            "category" => match word(value) {
                Some((text, span)) => match CATEGORIES.iter().find(|c| c.eq_ignore_ascii_case(&text)) {
                    Some(c) => self.category = Some(Ident::new(c, span)),
                    None => errors.spanned(value, format!("unknown category `{text}`{}", suggest::hint(&text, CATEGORIES))),
                },
                None => wrong(errors),
            },
            "callers" => self.callers = callers(value, errors),
            "timeout" => match lit_str(value) {
                Some(s) => match parse_duration_ms(&s.value()) {
                    Ok(0) => errors.spanned(value, "a timeout of zero would fail every call; give a positive duration"),
                    Ok(ms) => self.timeout_ms = Some(ms),
                    Err(why) => errors.spanned(value, format!("{why}; write a duration such as \"10s\", \"500ms\", \"2m\" or \"1m30s\"")),
                },
                None => wrong(errors),
            },
            "register" => match lit_bool(value) {
                Some(b) => self.register = b,
                None => wrong(errors),
            },
            _ => match value {
                Expr::Path(p) => self.krate = Some(p.path.clone()),
                Expr::Lit(ExprLit { lit: Lit::Str(s), .. }) => match s.parse::<Path>() {
                    Ok(p) => self.krate = Some(p),
                    Err(_) => wrong(errors),
                },
                _ => wrong(errors),
            },
        }
    }
}

fn lit_str(expr: &Expr) -> Option<LitStr> {
    match expr {
        Expr::Lit(ExprLit {
            lit: Lit::Str(s), ..
        }) => Some(s.clone()),
        _ => None,
    }
}

fn lit_bool(expr: &Expr) -> Option<bool> {
    match expr {
        Expr::Lit(ExprLit {
            lit: Lit::Bool(b), ..
        }) => Some(b.value),
        _ => None,
    }
}

/// A bare word (`Builtin`) or a string (`"builtin"`).
fn word(expr: &Expr) -> Option<(String, Span)> {
    match expr {
        Expr::Path(p) => p.path.get_ident().map(|i| (i.to_string(), i.span())),
        Expr::Lit(ExprLit {
            lit: Lit::Str(s), ..
        }) => Some((s.value(), s.span())),
        _ => None,
    }
}

/// `["a", "b"]`, or one string.
fn strings(expr: &Expr) -> Option<Vec<LitStr>> {
    match expr {
        Expr::Array(ExprArray { elems, .. }) => elems.iter().map(lit_str).collect(),
        other => lit_str(other).map(|s| vec![s]),
    }
}

fn callers(expr: &Expr, errors: &mut Errors) -> Vec<Ident> {
    let items: Vec<&Expr> = match expr {
        Expr::Array(array) => array.elems.iter().collect(),
        other => vec![other],
    };
    let mut out = Vec::new();
    for item in items {
        let Some((text, span)) = word(item) else {
            errors.spanned(item, format!("expected {}", example("callers")));
            continue;
        };
        match text.as_str() {
            "human" | "Human" => out.push(Ident::new("Human", span)),
            "code_execution" | "CodeExecution" => out.push(Ident::new("CodeExecution", span)),
            _ => errors.spanned(
                item,
                format!("unknown caller `{text}`{}", suggest::hint(&text, CALLERS)),
            ),
        }
    }
    out
}

/// Parses `"1h"`, `"2m"`, `"10s"`, `"500ms"` and sums like `"1m30s"` into milliseconds.
pub(crate) fn parse_duration_ms(text: &str) -> Result<u64, String> {
    let text = text.trim();
    if text.is_empty() {
        return Err("the timeout is empty".to_owned());
    }
    let mut total: u64 = 0;
    let mut rest = text;
    while !rest.is_empty() {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return Err(format!("`{text}` is not a duration"));
        }
        let number: u64 = rest[..digits]
            .parse()
            .map_err(|_| format!("`{text}` is too large"))?;
        rest = &rest[digits..];
        let unit_len = rest.bytes().take_while(u8::is_ascii_alphabetic).count();
        let unit = &rest[..unit_len];
        rest = rest[unit_len..].trim_start();
        let scale = match unit {
            "ms" => 1,
            "s" => 1_000,
            "m" => 60_000,
            "h" => 3_600_000,
            "" => return Err(format!("`{text}` has no unit")),
            other => return Err(format!("unknown unit `{other}`")),
        };
        total = number
            .checked_mul(scale)
            .and_then(|ms| total.checked_add(ms))
            .ok_or_else(|| format!("`{text}` is too large"))?;
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::parse_duration_ms;

    #[test]
    fn durations() {
        assert_eq!(parse_duration_ms("500ms"), Ok(500));
        assert_eq!(parse_duration_ms("10s"), Ok(10_000));
        assert_eq!(parse_duration_ms("2m"), Ok(120_000));
        assert_eq!(parse_duration_ms("1h"), Ok(3_600_000));
        assert_eq!(parse_duration_ms("1m30s"), Ok(90_000));
        assert_eq!(parse_duration_ms(" 1m 30s "), Ok(90_000));
    }

    #[test]
    fn bad_durations_say_why() {
        assert_eq!(
            parse_duration_ms(""),
            Err("the timeout is empty".to_owned())
        );
        assert_eq!(parse_duration_ms("10"), Err("`10` has no unit".to_owned()));
        assert_eq!(
            parse_duration_ms("3days"),
            Err("unknown unit `days`".to_owned())
        );
        assert_eq!(
            parse_duration_ms("s"),
            Err("`s` is not a duration".to_owned())
        );
        assert_eq!(
            parse_duration_ms("99999999999999999999h"),
            Err("`99999999999999999999h` is too large".to_owned())
        );
        assert_eq!(
            parse_duration_ms("9999999999999999h"),
            Err("`9999999999999999h` is too large".to_owned())
        );
    }
}
