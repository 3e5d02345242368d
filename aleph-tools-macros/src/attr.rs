//! The keys of `#[tool(...)]`, parsed into [`ToolAttrs`] with every mistake reported.

use std::collections::HashSet;

use proc_macro2::{Span, TokenStream};
use syn::parse::Parser;
use syn::punctuated::Punctuated;
use syn::{Expr, ExprArray, ExprLit, Ident, Lit, LitStr, Meta, MetaNameValue, Path, Token};

use crate::errors::Errors;
use crate::suggest;

/// Every key `#[tool(...)]` takes. Matches over it are exhaustive: a new key cannot be
/// forgotten in parsing, in the examples, or in what a flag sets.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Key {
    Name,
    Description,
    Tags,
    Category,
    Confirm,
    ReadOnly,
    Destructive,
    Idempotent,
    OpenWorld,
    Timeout,
    Example,
    Callers,
    Strict,
    Register,
    Crate,
}

/// What a key is written as: a bare flag or `key = value`.
enum Form {
    Flag,
    Valued,
}

impl Key {
    const ALL: [Self; 15] = [
        Self::Name,
        Self::Description,
        Self::Tags,
        Self::Category,
        Self::Confirm,
        Self::ReadOnly,
        Self::Destructive,
        Self::Idempotent,
        Self::OpenWorld,
        Self::Timeout,
        Self::Example,
        Self::Callers,
        Self::Strict,
        Self::Register,
        Self::Crate,
    ];

    fn as_str(self) -> &'static str {
        match self {
            Self::Name => "name",
            Self::Description => "description",
            Self::Tags => "tags",
            Self::Category => "category",
            Self::Confirm => "confirm",
            Self::ReadOnly => "read_only",
            Self::Destructive => "destructive",
            Self::Idempotent => "idempotent",
            Self::OpenWorld => "open_world",
            Self::Timeout => "timeout",
            Self::Example => "example",
            Self::Callers => "callers",
            Self::Strict => "strict",
            Self::Register => "register",
            Self::Crate => "crate",
        }
    }

    fn from_str(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|key| key.as_str() == text)
    }

    fn names() -> Vec<&'static str> {
        Self::ALL.into_iter().map(Self::as_str).collect()
    }

    fn form(self) -> Form {
        match self {
            Self::Confirm
            | Self::ReadOnly
            | Self::Destructive
            | Self::Idempotent
            | Self::OpenWorld
            | Self::Strict => Form::Flag,
            Self::Name
            | Self::Description
            | Self::Tags
            | Self::Category
            | Self::Timeout
            | Self::Example
            | Self::Callers
            | Self::Register
            | Self::Crate => Form::Valued,
        }
    }

    /// Whether the key may be given more than once.
    fn repeatable(self) -> bool {
        matches!(self, Self::Example)
    }

    /// How the key is written, for error messages.
    fn example(self) -> &'static str {
        match self {
            Self::Name => "`name = \"web_search\"`",
            Self::Description => "`description = \"What the tool does\"`",
            Self::Tags => "`tags = [\"web\", \"search\"]`",
            Self::Category => "`category = Builtin` (or Mcp, Plugin, Skill)",
            Self::Timeout => "`timeout = \"10s\"` (units: ms, s, m, h)",
            Self::Example => "`example = r#\"{\"query\": \"rust\"}\"#`",
            Self::Callers => "`callers = [human, code_execution]`",
            Self::Register => "`register = false`",
            Self::Crate => "`crate = ::my_reexport::aleph_tools`",
            Self::Confirm => "`confirm`",
            Self::ReadOnly => "`read_only`",
            Self::Destructive => "`destructive`",
            Self::Idempotent => "`idempotent`",
            Self::OpenWorld => "`open_world`",
            Self::Strict => "`strict`",
        }
    }
}

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
    let mut seen: HashSet<Key> = HashSet::new();
    for meta in metas {
        let path = meta.path();
        let Some(text) = path.get_ident().map(ToString::to_string) else {
            errors.spanned(
                path,
                format!(
                    "unknown key `{}`; keys are single words",
                    quote::quote!(#path)
                ),
            );
            continue;
        };
        let Some(key) = Key::from_str(&text) else {
            errors.spanned(
                path,
                format!(
                    "unknown key `{text}`{}",
                    suggest::hint(&text, &Key::names())
                ),
            );
            continue;
        };
        if !key.repeatable() && !seen.insert(key) {
            errors.spanned(path, format!("duplicate key `{text}`; give it once"));
            continue;
        }
        match (meta, key.form()) {
            (Meta::Path(_), Form::Flag) => attrs.set_flag(key, true),
            (Meta::Path(path), Form::Valued) => {
                errors.spanned(&path, format!("`{text}` needs a value: {}", key.example()));
            }
            (Meta::List(list), _) => {
                errors.spanned(
                    &list,
                    format!(
                        "`{text}(...)` is not a form #[tool] takes; write {}",
                        key.example()
                    ),
                );
            }
            (Meta::NameValue(nv), Form::Flag) => match lit_bool(&nv.value) {
                Some(b) => attrs.set_flag(key, b),
                None => errors.spanned(
                    &nv.value,
                    format!("`{text}` is a flag: write `{text}` or `{text} = false`"),
                ),
            },
            (Meta::NameValue(nv), Form::Valued) => attrs.set_value(key, &nv, errors),
        }
    }
    attrs
}

impl ToolAttrs {
    /// Sets what a flag key controls; only flags reach here.
    fn set_flag(&mut self, key: Key, value: bool) {
        match key {
            Key::Confirm => self.confirm = value,
            Key::ReadOnly => self.read_only = Some(value),
            Key::Destructive => self.destructive = Some(value),
            Key::Idempotent => self.idempotent = Some(value),
            Key::OpenWorld => self.open_world = Some(value),
            Key::Strict => self.strict = value,
            Key::Name
            | Key::Description
            | Key::Tags
            | Key::Category
            | Key::Timeout
            | Key::Example
            | Key::Callers
            | Key::Register
            | Key::Crate => unreachable!("`{}` is not a flag", key.as_str()),
        }
    }

    /// Sets what a `key = value` key controls; only valued keys reach here.
    fn set_value(&mut self, key: Key, nv: &MetaNameValue, errors: &mut Errors) {
        let value = &nv.value;
        let wrong =
            |errors: &mut Errors| errors.spanned(value, format!("expected {}", key.example()));
        match key {
            Key::Name => match lit_str(value) {
                Some(s) => self.name = Some(s),
                None => wrong(errors),
            },
            Key::Description => match lit_str(value) {
                Some(s) if s.value().trim().is_empty() => {
                    errors.spanned(value, "the description is empty; say what the tool does, for the model");
                }
                Some(s) => self.description = Some(s),
                None => wrong(errors),
            },
            Key::Tags => match strings(value) {
                Some(tags) => self.tags = tags,
                None => wrong(errors),
            },
            Key::Example => match lit_str(value) {
                Some(s) => self.examples.push(s),
                None => wrong(errors),
            },
            Key::Category => match word(value) {
                Some((text, span)) => match CATEGORIES.iter().find(|c| c.eq_ignore_ascii_case(&text)) {
                    Some(c) => self.category = Some(Ident::new(c, span)),
                    None => errors.spanned(value, format!("unknown category `{text}`{}", suggest::hint(&text, CATEGORIES))),
                },
                None => wrong(errors),
            },
            Key::Callers => self.callers = callers(value, errors),
            Key::Timeout => match lit_str(value) {
                Some(s) => match parse_duration_ms(&s.value()) {
                    Ok(0) => errors.spanned(value, "a timeout of zero would fail every call; give a positive duration"),
                    Ok(ms) => self.timeout_ms = Some(ms),
                    Err(why) => errors.spanned(value, format!("{why}; write a duration such as \"10s\", \"500ms\", \"2m\" or \"1m30s\"")),
                },
                None => wrong(errors),
            },
            Key::Register => match lit_bool(value) {
                Some(b) => self.register = b,
                None => wrong(errors),
            },
            Key::Crate => match value {
                Expr::Path(p) => self.krate = Some(p.path.clone()),
                Expr::Lit(ExprLit { lit: Lit::Str(s), .. }) => match s.parse::<Path>() {
                    Ok(p) => self.krate = Some(p),
                    Err(_) => wrong(errors),
                },
                _ => wrong(errors),
            },
            Key::Confirm
            | Key::ReadOnly
            | Key::Destructive
            | Key::Idempotent
            | Key::OpenWorld
            | Key::Strict => unreachable!("`{}` is a flag", key.as_str()),
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
            errors.spanned(item, format!("expected {}", Key::Callers.example()));
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
