//! How big a tool list is: bytes on the wire and an estimate of the tokens it costs.

use serde_json::Value;

use super::Provider;

/// The size of one provider's tool list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct SizeReport {
    /// The provider the list is for.
    pub provider: Provider,
    /// How many tools it holds.
    pub tools: usize,
    /// Its length as compact JSON, in bytes.
    pub bytes: usize,
    /// An estimate of the tokens it costs the model (see [`estimate_tokens`]).
    pub tokens: usize,
}

impl SizeReport {
    /// Measures a tool list as [`Provider::tool_list`] builds it.
    pub fn measure(provider: Provider, tool_list: &Value) -> Self {
        let text = tool_list.to_string();
        let tools = match (provider, tool_list) {
            (Provider::Gemini, Value::Array(entries)) => entries
                .iter()
                .filter_map(|e| e.get("functionDeclarations").and_then(Value::as_array))
                .map(Vec::len)
                .sum(),
            (_, Value::Array(entries)) => entries.len(),
            _ => 0,
        };
        Self {
            provider,
            tools,
            bytes: text.len(),
            tokens: estimate_tokens(&text),
        }
    }
}

/// An estimate of how many tokens `text` costs, from its shape: a word is one token per
/// seven letters or part of it, digits go in threes, each pair of punctuation marks and
/// each character outside ASCII is one, a space before a word is free.
///
/// Not a tokenizer: use it to compare dialects and to watch a tool list grow, not to bill.
///
/// ```
/// use aleph_tools::provider::estimate_tokens;
///
/// assert_eq!(estimate_tokens(""), 0);
/// assert!(estimate_tokens(r#"{"type":"string"}"#) < 10);
/// ```
pub fn estimate_tokens(text: &str) -> usize {
    let mut tokens = 0;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        let mut run: usize = 1;
        if c.is_ascii_alphabetic() {
            while chars.next_if(char::is_ascii_alphabetic).is_some() {
                run += 1;
            }
            tokens += run.div_ceil(7);
        } else if c.is_ascii_digit() {
            while chars.next_if(char::is_ascii_digit).is_some() {
                run += 1;
            }
            tokens += run.div_ceil(3);
        } else if c.is_ascii_whitespace() {
            while chars.next_if(char::is_ascii_whitespace).is_some() {
                run += 1;
            }
            // One space joins the next word; longer runs (indentation) cost one.
            tokens += usize::from(run > 1);
        } else if c.is_ascii() {
            while chars.next_if(char::is_ascii_punctuation).is_some() {
                run += 1;
            }
            tokens += run.div_ceil(2);
        } else {
            tokens += 1;
        }
    }
    tokens
}
