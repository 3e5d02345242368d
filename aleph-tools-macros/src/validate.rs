//! The checks of a parsed `#[tool]` that parsing does not make: a name model providers
//! accept, a description, and keys that fit the function.

use crate::errors::Errors;
use crate::model::Tool;

/// Reports every problem of `tool` to `errors`.
pub(crate) fn tool(tool: &Tool, errors: &mut Errors) {
    name(tool, errors);
    description(tool, errors);
    if tool.attrs.inline && tool.func.sig.asyncness.is_some() {
        errors.spanned(
            tool.func.sig.asyncness,
            "`inline` is for sync functions (it runs them in place instead of on the blocking pool); an async tool already runs on the async workers, so drop `inline`",
        );
    }
}

fn name(tool: &Tool, errors: &mut Errors) {
    let (name, span) = &tool.name;
    if is_valid_name(name) {
        return;
    }
    let cleaned: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    let hint = if cleaned.is_empty() || cleaned == *name {
        String::new()
    } else {
        format!("; try `name = \"{cleaned}\"`")
    };
    errors.at(
        *span,
        format!("`{name}` is not a tool name model providers accept: use 1 to 64 characters of a-z, A-Z, 0-9, `_` and `-`{hint}"),
    );
}

fn is_valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

fn description(tool: &Tool, errors: &mut Errors) {
    if tool.attrs.description.is_none() && tool.description.is_empty() {
        let ident = &tool.func.sig.ident;
        errors.spanned(
            ident,
            format!(
                "`{ident}` needs a description for the model: add a `///` doc comment saying what the tool does, or `#[tool(description = \"...\")]`"
            ),
        );
    }
}
