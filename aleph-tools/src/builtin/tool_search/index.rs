//! The catalog a tool search ranks: each deferred tool's words (its name, description and
//! parameters), scored with BM25 or matched by a regular expression, and its gist, ranked
//! by meaning with an [`Embedder`](super::Embedder)'s vectors.

use std::collections::HashMap;
use std::sync::Arc;

use regex::Regex;
use rust_stemmers::{Algorithm, Stemmer};
use serde_json::Value;

use crate::tool::ToolDefinition;

/// BM25's term-frequency saturation.
const K1: f32 = 1.2;
/// BM25's length normalization.
const B: f32 = 0.75;
/// How many times a word of the tool's name counts: a name says most about a tool.
const NAME_WEIGHT: usize = 3;
/// How deep parameter schemas are read for names and descriptions.
const SCHEMA_DEPTH: usize = 4;
/// The most bytes of a tool's text that are indexed; the rest is not read.
const TEXT_LIMIT: usize = 8 * 1024;
/// The most bytes of a description in a tool's gist: its first sentences say what it
/// does, and an embedder's cost grows with the length of what it reads.
const GIST_DESCRIPTION: usize = 300;

/// Words that say nothing about what a tool does.
const STOPWORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "by", "can", "do", "for", "from", "has", "have",
    "i", "if", "in", "is", "it", "its", "me", "my", "of", "on", "or", "that", "the", "this", "to",
    "was", "what", "when", "which", "will", "with", "you", "your",
];

/// One tool as the search sees it.
pub(super) struct Document {
    pub(super) definition: Arc<ToolDefinition>,
    /// Name, description and parameters in plain words: what a regular expression is matched
    /// against.
    pub(super) text: String,
    /// The name in words, the start of the description and the parameters' names: what an
    /// embedder reads.
    pub(super) gist: String,
}

impl Document {
    pub(super) fn new(definition: Arc<ToolDefinition>) -> Self {
        let mut text = format!("{}: {}", spaced(&definition.name), definition.description);
        let mut parameters = Vec::new();
        collect_parameters(&definition.parameters, SCHEMA_DEPTH, &mut parameters);
        if !parameters.is_empty() {
            text.push_str("\nParameters: ");
            text.push_str(&parameters.join("; "));
        }
        truncate(&mut text, TEXT_LIMIT);
        let mut description = definition.description.clone();
        truncate(&mut description, GIST_DESCRIPTION);
        let mut gist = format!("{}: {description}", spaced(&definition.name));
        if let Some(properties) = definition
            .parameters
            .get("properties")
            .and_then(Value::as_object)
            .filter(|properties| !properties.is_empty())
        {
            let names: Vec<String> = properties.keys().map(|name| spaced(name)).collect();
            gist.push_str("\nParameters: ");
            gist.push_str(&names.join(", "));
            truncate(&mut gist, TEXT_LIMIT);
        }
        Self {
            definition,
            text,
            gist,
        }
    }
}

/// The ranking structures for a set of documents.
pub(super) struct Index {
    pub(super) documents: Vec<Document>,
    /// For each document, its stemmed words and how often each occurs.
    frequencies: Vec<HashMap<String, u32>>,
    lengths: Vec<f32>,
    average_length: f32,
    /// How many documents hold each word.
    document_frequency: HashMap<String, u32>,
    /// Each document's unit vector, when an embedder is used.
    pub(super) vectors: Option<Vec<Arc<[f32]>>>,
}

impl Index {
    pub(super) fn new(documents: Vec<Document>) -> Self {
        let stemmer = Stemmer::create(Algorithm::English);
        let mut frequencies = Vec::with_capacity(documents.len());
        let mut lengths = Vec::with_capacity(documents.len());
        let mut document_frequency: HashMap<String, u32> = HashMap::new();
        for document in &documents {
            let mut counts: HashMap<String, u32> = HashMap::new();
            let name = terms(&stemmer, &spaced(&document.definition.name));
            for term in name
                .iter()
                .flat_map(|t| std::iter::repeat_n(t, NAME_WEIGHT))
            {
                *counts.entry(term.clone()).or_default() += 1;
            }
            // The text starts with the name; its words are counted above.
            let rest = document.text.split_once(": ").map_or("", |(_, rest)| rest);
            for term in terms(&stemmer, rest) {
                *counts.entry(term).or_default() += 1;
            }
            for term in counts.keys() {
                *document_frequency.entry(term.clone()).or_default() += 1;
            }
            #[expect(clippy::cast_precision_loss, reason = "a count of words")]
            lengths.push(counts.values().sum::<u32>() as f32);
            frequencies.push(counts);
        }
        #[expect(clippy::cast_precision_loss, reason = "a count of documents")]
        let average_length = lengths.iter().sum::<f32>() / lengths.len().max(1) as f32;
        Self {
            documents,
            frequencies,
            lengths,
            average_length: average_length.max(1.0),
            document_frequency,
            vectors: None,
        }
    }

    /// Each document's BM25 score for `query`.
    pub(super) fn bm25(&self, query: &str) -> Vec<f32> {
        let stemmer = Stemmer::create(Algorithm::English);
        let mut words = terms(&stemmer, query);
        words.sort();
        words.dedup();
        #[expect(clippy::cast_precision_loss, reason = "a count of documents")]
        let total = self.documents.len() as f32;
        let weights: Vec<(&str, f32)> = words
            .iter()
            .filter_map(|word| {
                #[expect(clippy::cast_precision_loss, reason = "a count of documents")]
                let holding = *self.document_frequency.get(word)? as f32;
                let idf = ((total - holding + 0.5) / (holding + 0.5) + 1.0).ln();
                Some((word.as_str(), idf))
            })
            .collect();
        self.frequencies
            .iter()
            .zip(&self.lengths)
            .map(|(counts, &length)| {
                weights
                    .iter()
                    .map(|&(word, idf)| {
                        #[expect(clippy::cast_precision_loss, reason = "a count of words")]
                        let tf = counts.get(word).copied().unwrap_or(0) as f32;
                        let norm = K1 * (1.0 - B + B * length / self.average_length);
                        idf * tf * (K1 + 1.0) / (tf + norm)
                    })
                    .sum()
            })
            .collect()
    }

    /// The documents in best-first order for `query`: by the closeness of their vectors to
    /// `query_vector` when there are both, else by BM25 (leaving out documents that share
    /// no word with the query).
    ///
    /// Meaning alone, not fused with keywords: on the quality corpus (784 real tools, 111
    /// queries) fusing the two, by rank or by weighted score, found fewer tools than
    /// meaning alone, which finds as many of the keyword queries' tools as BM25 does.
    pub(super) fn rank(&self, query: &str, query_vector: Option<&[f32]>) -> Vec<usize> {
        match (&self.vectors, query_vector) {
            (Some(vectors), Some(query_vector)) => {
                let closeness: Vec<f32> = vectors.iter().map(|v| dot(v, query_vector)).collect();
                ranked(&closeness, |_| true)
            }
            _ => ranked(&self.bm25(query), |score| score > 0.0),
        }
    }

    /// The documents `pattern` matches, those whose name it matches first, each group in
    /// name order.
    pub(super) fn matching(&self, pattern: &Regex) -> Vec<usize> {
        let mut found: Vec<(bool, usize)> = self
            .documents
            .iter()
            .enumerate()
            .filter_map(|(i, document)| {
                let by_name = pattern.is_match(&document.definition.name);
                (by_name || pattern.is_match(&document.text)).then_some((!by_name, i))
            })
            .collect();
        found.sort_by(|a, b| {
            a.0.cmp(&b.0).then_with(|| {
                self.documents[a.1]
                    .definition
                    .name
                    .cmp(&self.documents[b.1].definition.name)
            })
        });
        found.into_iter().map(|(_, i)| i).collect()
    }
}

/// The indices of `scores` that `keep` accepts, highest score first (ties in index order).
fn ranked(scores: &[f32], keep: impl Fn(f32) -> bool) -> Vec<usize> {
    let mut order: Vec<usize> = (0..scores.len()).filter(|&i| keep(scores[i])).collect();
    order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]).then(a.cmp(&b)));
    order
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// A tool name in words: `getCurrentTime`, `get_current_time` and `get-current-time` all
/// read `get current time`.
pub(super) fn spaced(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 8);
    let mut previous: Option<char> = None;
    for c in name.chars() {
        if matches!(c, '_' | '-' | '.' | '/' | ':') {
            out.push(' ');
        } else {
            if c.is_uppercase() && previous.is_some_and(|p| p.is_lowercase() || p.is_ascii_digit())
            {
                out.push(' ');
            }
            out.push(c);
        }
        previous = Some(c);
    }
    out
}

/// The stemmed, lowercase words of `text` that say something (stopwords left out).
fn terms(stemmer: &Stemmer, text: &str) -> Vec<String> {
    spaced(text)
        .split(|c: char| !c.is_alphanumeric())
        .filter(|word| !word.is_empty())
        .map(str::to_lowercase)
        .filter(|word| !STOPWORDS.contains(&word.as_str()))
        .map(|word| stemmer.stem(&word).into_owned())
        .collect()
}

/// The names and descriptions of the properties in `schema`, down to `depth` levels.
fn collect_parameters(schema: &Value, depth: usize, out: &mut Vec<String>) {
    if depth == 0 {
        return;
    }
    if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
        for (name, property) in properties {
            let words = spaced(name);
            match property.get("description").and_then(Value::as_str) {
                Some(description) => out.push(format!("{words} ({description})")),
                None => out.push(words),
            }
            collect_parameters(property, depth - 1, out);
        }
    }
    if let Some(items) = schema.get("items") {
        collect_parameters(items, depth - 1, out);
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        for branch in schema
            .get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            collect_parameters(branch, depth - 1, out);
        }
    }
}

/// Cuts `text` to at most `limit` bytes, at a character boundary.
fn truncate(text: &mut String, limit: usize) {
    if text.len() > limit {
        let mut end = limit;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn tool(name: &str, description: &str, parameters: Value) -> Document {
        Document::new(Arc::new(ToolDefinition::new(name, description, parameters)))
    }

    fn index() -> Index {
        Index::new(vec![
            tool(
                "get_current_time",
                "Get the current time in a timezone.",
                json!({"type": "object", "properties": {"timezone": {"type": "string", "description": "IANA zone name"}}}),
            ),
            tool(
                "createPullRequest",
                "Open a pull request on a repository.",
                json!({"type": "object", "properties": {"repo": {"type": "string"}, "head": {"type": "string", "description": "The branch with the changes"}}}),
            ),
            tool(
                "send_message",
                "Send a message to a chat channel.",
                json!({"type": "object", "properties": {"channel": {"type": "string"}}}),
            ),
        ])
    }

    #[test]
    fn names_read_as_words_in_every_case_style() {
        assert_eq!(spaced("getCurrentTime"), "get Current Time");
        assert_eq!(spaced("get_current_time"), "get current time");
        assert_eq!(spaced("repo-list.v2"), "repo list v2");
    }

    #[test]
    fn keywords_rank_the_tool_that_holds_them_first() {
        let index = index();
        assert_eq!(index.rank("pull requests", None), vec![1]);
        assert_eq!(index.rank("what time is it in this timezone", None)[0], 0);
        assert_eq!(index.rank("changes on a branch", None), vec![1]);
        assert!(index.rank("zebra", None).is_empty());
        assert!(index.rank("", None).is_empty());
    }

    #[test]
    fn a_pattern_matches_names_first_then_text() {
        let index = index();
        let pattern = Regex::new("(?i)message|channel").unwrap();
        assert_eq!(index.matching(&pattern), vec![2]);
        let pattern = Regex::new("(?i)repo").unwrap();
        assert_eq!(index.matching(&pattern), vec![1]);
        let pattern = Regex::new("(?i)e").unwrap();
        assert_eq!(index.matching(&pattern), vec![1, 0, 2]);
    }

    #[test]
    fn vectors_rank_by_meaning_when_there_are_both() {
        let mut index = index();
        // Without the tools' vectors, a query's vector is not used.
        assert!(index.rank("zebra", Some(&[0.1, 0.2, 0.9])).is_empty());
        index.vectors = Some(vec![
            Arc::from([1.0, 0.0, 0.0]),
            Arc::from([0.0, 1.0, 0.0]),
            Arc::from([0.0, 0.0, 1.0]),
        ]);
        assert_eq!(index.rank("zebra", Some(&[0.1, 0.2, 0.9])), [2, 1, 0]);
        assert_eq!(
            index.rank("pull request", Some(&[0.9, 0.1, 0.0])),
            [0, 1, 2]
        );
        assert_eq!(index.rank("pull request", None), [1]);
    }

    #[test]
    fn the_gist_is_the_name_the_start_of_the_description_and_the_parameters() {
        let document = tool(
            "getCurrentTime",
            &"Get the time. ".repeat(100),
            json!({"type": "object", "properties": {"timezone": {"type": "string", "description": "long words here"}}}),
        );
        assert!(document.gist.starts_with("get Current Time: Get the time."));
        assert!(document.gist.ends_with("\nParameters: timezone"));
        assert!(document.gist.len() < GIST_DESCRIPTION + 64);
    }

    #[test]
    fn huge_descriptions_and_deep_schemas_are_bounded() {
        let mut deep = json!({"type": "string"});
        for i in 0..100 {
            deep = json!({"type": "object", "properties": {format!("p{i}"): deep}});
        }
        let document = tool("big", &"word ".repeat(100_000), deep);
        assert!(document.text.len() <= TEXT_LIMIT);
        let index = Index::new(vec![document]);
        assert_eq!(index.rank("word", None), vec![0]);
    }
}
