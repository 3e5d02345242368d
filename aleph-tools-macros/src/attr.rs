//! The keys of `#[tool(...)]`, parsed into [`ToolAttrs`] with every mistake reported.

use std::collections::HashSet;

use proc_macro2::{Span, TokenStream};
use syn::parse::Parser;
use syn::punctuated::Punctuated;
use syn::{Expr, ExprArray, ExprLit, Ident, Lit, LitStr, Meta, MetaNameValue, Path, Token};

use crate::errors::Errors;
use crate::suggest;

/// Every key `#[tool(...)]` takes: a bare flag, or `key = value`. Matches over these are
/// exhaustive, so a new key cannot be forgotten in parsing, in the examples, or in what it
/// sets.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Key {
    Flag(Flag),
    Valued(Valued),
}

#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Flag {
    Inline,
    Confirm,
    ReadOnly,
    Destructive,
    Idempotent,
    OpenWorld,
    Strict,
    Task,
    DeferLoading,
    Result,
}

#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Valued {
    Name,
    Description,
    Title,
    Icon,
    Meta,
    Tags,
    Category,
    Timeout,
    Example,
    Callers,
    Register,
    Crate,
}

impl Key {
    const ALL: [Self; 22] = [
        Self::Valued(Valued::Name),
        Self::Valued(Valued::Description),
        Self::Valued(Valued::Title),
        Self::Valued(Valued::Icon),
        Self::Valued(Valued::Meta),
        Self::Valued(Valued::Tags),
        Self::Valued(Valued::Category),
        Self::Flag(Flag::Confirm),
        Self::Flag(Flag::ReadOnly),
        Self::Flag(Flag::Destructive),
        Self::Flag(Flag::Idempotent),
        Self::Flag(Flag::OpenWorld),
        Self::Valued(Valued::Timeout),
        Self::Valued(Valued::Example),
        Self::Valued(Valued::Callers),
        Self::Flag(Flag::Strict),
        Self::Flag(Flag::Task),
        Self::Flag(Flag::DeferLoading),
        Self::Valued(Valued::Register),
        Self::Valued(Valued::Crate),
        Self::Flag(Flag::Inline),
        Self::Flag(Flag::Result),
    ];

    fn as_str(self) -> &'static str {
        match self {
            Self::Flag(Flag::Inline) => "inline",
            Self::Flag(Flag::Confirm) => "confirm",
            Self::Flag(Flag::ReadOnly) => "read_only",
            Self::Flag(Flag::Destructive) => "destructive",
            Self::Flag(Flag::Idempotent) => "idempotent",
            Self::Flag(Flag::OpenWorld) => "open_world",
            Self::Flag(Flag::Strict) => "strict",
            Self::Flag(Flag::Task) => "task",
            Self::Flag(Flag::DeferLoading) => "defer_loading",
            Self::Flag(Flag::Result) => "result",
            Self::Valued(Valued::Name) => "name",
            Self::Valued(Valued::Description) => "description",
            Self::Valued(Valued::Title) => "title",
            Self::Valued(Valued::Icon) => "icon",
            Self::Valued(Valued::Meta) => "meta",
            Self::Valued(Valued::Tags) => "tags",
            Self::Valued(Valued::Category) => "category",
            Self::Valued(Valued::Timeout) => "timeout",
            Self::Valued(Valued::Example) => "example",
            Self::Valued(Valued::Callers) => "callers",
            Self::Valued(Valued::Register) => "register",
            Self::Valued(Valued::Crate) => "crate",
        }
    }

    fn from_str(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|key| key.as_str() == text)
    }

    fn names() -> Vec<&'static str> {
        Self::ALL.into_iter().map(Self::as_str).collect()
    }

    /// Whether the key may be given more than once.
    fn repeatable(self) -> bool {
        matches!(self, Self::Valued(Valued::Example | Valued::Icon))
    }

    /// How the key is written, for error messages.
    fn example(self) -> &'static str {
        match self {
            Self::Valued(Valued::Name) => "`name = \"web_search\"`",
            Self::Valued(Valued::Description) => "`description = \"What the tool does\"`",
            Self::Valued(Valued::Title) => "`title = \"Web search\"`",
            Self::Valued(Valued::Icon) => {
                "`icon = \"https://example.com/search.svg\"` (an https: or data: URL)"
            }
            Self::Valued(Valued::Meta) => {
                "`meta = r#\"{\"ui\": {\"hidden\": true}}\"#` (a JSON object)"
            }
            Self::Valued(Valued::Tags) => "`tags = [\"web\", \"search\"]`",
            Self::Valued(Valued::Category) => "`category = Builtin` (or Mcp, Plugin, Skill)",
            Self::Valued(Valued::Timeout) => "`timeout = \"10s\"` (units: ms, s, m, h)",
            Self::Valued(Valued::Example) => "`example = r#\"{\"query\": \"rust\"}\"#`",
            Self::Valued(Valued::Callers) => "`callers = [human, code_execution]`",
            Self::Valued(Valued::Register) => "`register = false`",
            Self::Valued(Valued::Crate) => "`crate = ::my_reexport::aleph_tools`",
            Self::Flag(Flag::Inline) => "`inline`",
            Self::Flag(Flag::Confirm) => "`confirm`",
            Self::Flag(Flag::ReadOnly) => "`read_only`",
            Self::Flag(Flag::Destructive) => "`destructive`",
            Self::Flag(Flag::Idempotent) => "`idempotent`",
            Self::Flag(Flag::OpenWorld) => "`open_world`",
            Self::Flag(Flag::Strict) => "`strict`",
            Self::Flag(Flag::Task) => "`task`",
            Self::Flag(Flag::DeferLoading) => "`defer_loading`",
            Self::Flag(Flag::Result) => {
                "`result` (the return type is a `Result` under another name) or `result = false`"
            }
        }
    }
}

const CATEGORIES: &[&str] = &["Builtin", "Mcp", "Plugin", "Skill"];
/// Each caller as `callers = [...]` writes it, and its `Caller` variant (also accepted).
const CALLERS: [(&str, &str); 2] = [("human", "Human"), ("code_execution", "CodeExecution")];

/// Everything `#[tool(...)]` said, checked.
#[derive(Default)]
#[expect(
    clippy::struct_excessive_bools,
    reason = "each bool is one flag of the attribute, as written"
)]
pub(crate) struct ToolAttrs {
    pub name: Option<LitStr>,
    pub description: Option<LitStr>,
    pub title: Option<LitStr>,
    pub icons: Vec<LitStr>,
    /// `meta`, checked to be a JSON object.
    pub meta: Option<LitStr>,
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
    pub task: bool,
    /// Kept out of the tools array until a search finds it.
    pub defer_loading: bool,
    /// Run a sync function in place on the async worker instead of the blocking pool.
    pub inline: bool,
    /// Whether the return type is a `Result`, when the key says so; otherwise a type named
    /// `Result` is one.
    pub result: Option<bool>,
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
        match (meta, key) {
            (Meta::Path(_), Key::Flag(flag)) => attrs.set_flag(flag, true),
            (Meta::Path(path), Key::Valued(_)) => {
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
            (Meta::NameValue(nv), Key::Flag(flag)) => match lit_bool(&nv.value) {
                Some(b) => attrs.set_flag(flag, b),
                None => errors.spanned(
                    &nv.value,
                    format!("`{text}` is a flag: write `{text}` or `{text} = false`"),
                ),
            },
            (Meta::NameValue(nv), Key::Valued(valued)) => attrs.set_value(valued, &nv, errors),
        }
    }
    attrs
}

impl ToolAttrs {
    /// Sets what a flag controls.
    fn set_flag(&mut self, flag: Flag, value: bool) {
        match flag {
            Flag::Inline => self.inline = value,
            Flag::Confirm => self.confirm = value,
            Flag::ReadOnly => self.read_only = Some(value),
            Flag::Destructive => self.destructive = Some(value),
            Flag::Idempotent => self.idempotent = Some(value),
            Flag::OpenWorld => self.open_world = Some(value),
            Flag::Strict => self.strict = value,
            Flag::Task => self.task = value,
            Flag::DeferLoading => self.defer_loading = value,
            Flag::Result => self.result = Some(value),
        }
    }

    /// Sets what a `key = value` key controls.
    fn set_value(&mut self, key: Valued, nv: &MetaNameValue, errors: &mut Errors) {
        let value = &nv.value;
        let wrong = |errors: &mut Errors| {
            errors.spanned(value, format!("expected {}", Key::Valued(key).example()));
        };
        match key {
            Valued::Name => match lit_str(value) {
                Some(s) => self.name = Some(s),
                None => wrong(errors),
            },
            Valued::Description => match lit_str(value) {
                Some(s) if s.value().trim().is_empty() => {
                    errors.spanned(value, "the description is empty; say what the tool does, for the model");
                }
                Some(s) => self.description = Some(s),
                None => wrong(errors),
            },
            Valued::Title => match lit_str(value) {
                Some(s) if s.value().trim().is_empty() => {
                    errors.spanned(value, "the title is empty; give a name for people, or leave `title` out");
                }
                Some(s) => self.title = Some(s),
                None => wrong(errors),
            },
            Valued::Icon => match lit_str(value) {
                Some(s) if !s.value().starts_with("https://") && !s.value().starts_with("data:") => {
                    errors.spanned(value, "an icon is an `https:` or `data:` URL");
                }
                Some(s) => self.icons.push(s),
                None => wrong(errors),
            },
            Valued::Meta => match lit_str(value) {
                Some(s) => match serde_json::from_str::<serde_json::Value>(&s.value()) {
                    Ok(serde_json::Value::Object(_)) => self.meta = Some(s),
                    Ok(_) => errors.spanned(value, "`meta` must be a JSON object: `{ ... }`"),
                    Err(err) => errors.spanned(value, format!("`meta` is not JSON: {err}")),
                },
                None => wrong(errors),
            },
            Valued::Tags => match strings(value) {
                Some(tags) => self.tags = tags,
                None => wrong(errors),
            },
            Valued::Example => match lit_str(value) {
                Some(s) => self.examples.push(s),
                None => wrong(errors),
            },
            Valued::Category => match word(value) {
                Some((text, span)) => match CATEGORIES.iter().find(|c| c.eq_ignore_ascii_case(&text)) {
                    Some(c) => self.category = Some(Ident::new(c, span)),
                    None => errors.spanned(value, format!("unknown category `{text}`{}", suggest::hint(&text, CATEGORIES))),
                },
                None => wrong(errors),
            },
            Valued::Callers => self.callers = callers(value, errors),
            Valued::Timeout => match lit_str(value) {
                Some(s) => match parse_duration_ms(&s.value()) {
                    Ok(0) => errors.spanned(value, "a timeout of zero would fail every call; give a positive duration"),
                    Ok(ms) => self.timeout_ms = Some(ms),
                    Err(why) => errors.spanned(value, format!("{why}; write a duration such as \"10s\", \"500ms\", \"2m\" or \"1m30s\"")),
                },
                None => wrong(errors),
            },
            Valued::Register => match lit_bool(value) {
                Some(b) => self.register = b,
                None => wrong(errors),
            },
            Valued::Crate => match value {
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
            errors.spanned(
                item,
                format!("expected {}", Key::Valued(Valued::Callers).example()),
            );
            continue;
        };
        if let Some((_, variant)) = CALLERS
            .iter()
            .find(|(written, variant)| text == *written || text == *variant)
        {
            out.push(Ident::new(variant, span));
        } else {
            let written: Vec<&str> = CALLERS.iter().map(|(written, _)| *written).collect();
            errors.spanned(
                item,
                format!("unknown caller `{text}`{}", suggest::hint(&text, &written)),
            );
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
