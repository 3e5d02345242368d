//! Tool search with deferred loading: tools marked deferred stay out of the tools array;
//! the model finds them with `tool_search` (by meaning when an embedder is given, else by
//! keywords ranked with BM25; or by a regular expression) and calls
//! them directly where the found tools are added to its tools (the agent loop, Anthropic's
//! API) or through `call_tool` (MCP clients, whose tool list stays as it was).

mod embed;
mod index;
#[cfg(feature = "embeddings")]
mod minilm;

use std::fmt;
use std::sync::Arc;

use regex::{Regex, RegexBuilder};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Map, Value};

use self::embed::Vectors;
pub use self::embed::{EmbedError, Embedder};
use self::index::{Document, Index};
#[cfg(feature = "embeddings")]
pub use self::minilm::{MiniLm, MiniLmError};
use super::Builtin;
use crate::context::{State, ToolContext};
use crate::error::{ArgumentProblem, ToolError};
use crate::provider::Provider;
use crate::result::{Content, ToolOutput, ToolReference};
use crate::server::{AlephToolServer, ToolServerBuilder};
use crate::tool;

/// The name of the search tool.
pub(crate) const SEARCH_TOOL: &str = "tool_search";
/// The name of the tool that calls a found tool by name.
pub(crate) const CALL_TOOL: &str = "call_tool";
/// The most tools one search returns.
const MAX_RESULTS: usize = 25;
/// The longest regular expression a search takes, in bytes.
const PATTERN_LIMIT: usize = 512;
/// The longest query a search takes, in bytes: a few words say what a tool should do.
const QUERY_LIMIT: usize = 1024;
/// The most memory a compiled regular expression may take.
const REGEX_SIZE_LIMIT: usize = 256 << 10;

/// Tool search with deferred loading: `tool_search` and `call_tool`.
///
/// Deferred tools (those marked [`defer_loading`](crate::tool::ToolDefinition::defer_loading),
/// `#[tool(defer_loading)]`, and those [`defer`](Self::defer) names) stay out of the tools
/// array a model is sent, so a server with a thousand tools costs the model a few. The
/// model finds them with `tool_search`:
///
/// - in the agent loop, found tools join the next round's tools array;
/// - with Anthropic's API the array carries the deferred tools marked `defer_loading`, and
///   the search answers with `tool_reference` blocks, so the API loads them itself;
/// - over MCP, clients list `tool_search` and `call_tool`, and call a found tool through
///   `call_tool`: their tool list never changes, so it needs no `list_changed` round trip
///   and keeps clients' prompt caches.
///
/// Every found tool is called through the server's whole pipeline. Deferral decides what a
/// model is shown first, never what it may call: a caller who knows a deferred tool's name
/// may call it.
///
/// ```
/// use aleph_tools::builtin::ToolSearch;
/// use aleph_tools::prelude::*;
/// use aleph_tools::provider::Provider;
///
/// /// Open a pull request.
/// #[tool(register = false)]
/// fn create_pull_request(title: String) -> String {
///     title
/// }
///
/// let server = AlephToolServer::builder()
///     .with_tool(CreatePullRequestTool)
///     .with_builtin(ToolSearch::new().defer(["create_*"]))
///     .build()?;
/// let tools = server.tools().for_provider(Provider::OpenAiChat);
/// let names: Vec<&str> = tools.as_array().unwrap().iter()
///     .map(|tool| tool["function"]["name"].as_str().unwrap())
///     .collect();
/// assert_eq!(names, ["call_tool", "tool_search"]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct ToolSearch {
    defer: Vec<String>,
    max_results: usize,
    embedder: Option<Arc<dyn Embedder>>,
}

impl fmt::Debug for ToolSearch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolSearch")
            .field("defer", &self.defer)
            .field("max_results", &self.max_results)
            .field("embedder", &self.embedder.is_some())
            .finish()
    }
}

impl Default for ToolSearch {
    fn default() -> Self {
        Self::new()
    }
}

impl ToolSearch {
    /// Defers the tools marked `defer_loading`; five results a search; keywords only.
    pub fn new() -> Self {
        Self {
            defer: Vec::new(),
            max_results: 5,
            embedder: None,
        }
    }

    /// Defers the tools matching `patterns` too (names or globs: `github_*`, `*`). The
    /// search's own tools are never deferred.
    #[must_use]
    pub fn defer(mut self, patterns: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.defer.extend(patterns.into_iter().map(Into::into));
        self
    }

    /// How many tools a search returns when the model does not say (at most 25).
    #[must_use]
    pub fn max_results(mut self, results: usize) -> Self {
        self.max_results = results.clamp(1, MAX_RESULTS);
        self
    }

    /// Ranks queries by meaning: each tool's gist (its name, the start of its description
    /// and its parameters' names) and each query are embedded, and tools come back closest
    /// first. Tools are embedded at the first search after they change, and each vector is
    /// kept while the tool's text stays the same. Patterns still match text.
    #[must_use]
    pub fn embedder(mut self, embedder: impl Embedder) -> Self {
        self.embedder = Some(Arc::new(embedder));
        self
    }
}

impl Builtin for ToolSearch {
    fn add_to(self, builder: ToolServerBuilder) -> ToolServerBuilder {
        let searcher = Searcher {
            max_results: self.max_results,
            vectors: self.embedder.map(|e| Arc::new(Vectors::new(e))),
            index: Arc::new(tokio::sync::Mutex::new(None)),
        };
        let warm = searcher.clone();
        builder
            .defer_loading(self.defer, [SEARCH_TOOL.to_owned(), CALL_TOOL.to_owned()])
            .with_state(searcher)
            .with_tool(ToolSearchTool)
            .with_tool(CallToolTool)
            .after_build(move |server| {
                warm.warm(server);
                Ok(())
            })
    }
}

/// The index of the deferred tools, and the version of the tools it was built from.
type Slot = Option<(u64, Arc<Index>)>;

/// The search's state: its settings and the index of the deferred tools, built at the
/// first search after the tools change (and, with an embedder, as soon as the server is
/// built).
#[derive(Clone)]
pub(crate) struct Searcher {
    max_results: usize,
    vectors: Option<Arc<Vectors>>,
    index: Arc<tokio::sync::Mutex<Slot>>,
}

impl Searcher {
    /// The index of the deferred tools `server` serves now.
    ///
    /// The build holds the lock and stores what it built, so a search given up while it
    /// runs loses nothing: the next search waits for it and takes its index.
    async fn index(&self, server: &AlephToolServer) -> Arc<Index> {
        let mut slot = Arc::clone(&self.index).lock_owned().await;
        let version = server.tools_version();
        if let Some(index) = fresh(&slot, version) {
            return index;
        }
        let (searcher, building) = (self.clone(), server.clone());
        let built = tokio::task::spawn_blocking(move || {
            let index = Arc::new(searcher.build(&building));
            searcher.keep(&mut slot, version, &index);
            index
        })
        .await;
        built.unwrap_or_else(|error| {
            tracing::warn!("tool search ranks by keywords alone: {error}");
            Arc::new(Index::new(deferred_documents(server)))
        })
    }

    /// Stores `index` as the one for `version`, unless it lacks the vectors an embedder
    /// should have made: then the next search tries again.
    fn keep(&self, slot: &mut Slot, version: u64, index: &Arc<Index>) {
        if self.vectors.is_none() || index.vectors.is_some() {
            *slot = Some((version, Arc::clone(index)));
        }
    }

    /// Builds the index on a thread of its own when there are tools to embed, so that the
    /// first search finds them embedded; that search waits for it to finish. The thread is
    /// not the async runtime's: a program may end while it runs.
    fn warm(&self, server: &AlephToolServer) {
        if self.vectors.is_none() {
            return;
        }
        let (searcher, server) = (self.clone(), server.clone());
        let spawned = std::thread::Builder::new()
            .name("tool-search-index".into())
            .spawn(move || {
                let mut slot = searcher.index.blocking_lock();
                let version = server.tools_version();
                if fresh(&slot, version).is_none() {
                    let index = Arc::new(searcher.build(&server));
                    searcher.keep(&mut slot, version, &index);
                }
            });
        if let Err(error) = spawned {
            tracing::warn!("tool search will embed the tools at its first search: {error}");
        }
    }

    /// The index of `server`'s deferred tools, their vectors made (blocking) when there is
    /// an embedder.
    fn build(&self, server: &AlephToolServer) -> Index {
        let mut index = Index::new(deferred_documents(server));
        if let Some(vectors) = &self.vectors {
            let texts: Vec<&str> = index.documents.iter().map(|d| d.gist.as_str()).collect();
            match vectors.catalog(&texts) {
                Ok(made) => index.vectors = Some(made),
                Err(error) => tracing::warn!("tool search ranks by keywords alone: {error}"),
            }
        }
        index
    }

    /// The query's vector, when the index has the tools' vectors to compare it with.
    async fn query_vector(&self, index: &Index, query: &str) -> Option<Arc<[f32]>> {
        let vectors = Arc::clone(self.vectors.as_ref().filter(|_| index.vectors.is_some())?);
        let query = query.to_owned();
        let made = tokio::task::spawn_blocking(move || vectors.query(&query))
            .await
            .map_err(|e| EmbedError(e.to_string()))
            .and_then(|made| made);
        made.inspect_err(|error| {
            tracing::warn!("this tool search ranks by keywords alone: {error}");
        })
        .ok()
    }
}

/// The index in `slot` when it was built from the tools at `version`.
fn fresh(slot: &Slot, version: u64) -> Option<Arc<Index>> {
    slot.as_ref()
        .filter(|(built, _)| *built == version)
        .map(|(_, index)| Arc::clone(index))
}

/// The deferred tools `server` serves, as the search reads them.
fn deferred_documents(server: &AlephToolServer) -> Vec<Document> {
    server
        .offered_definitions()
        .into_iter()
        .filter(|definition| definition.defer_loading)
        .map(Document::new)
        .collect()
}

/// What a search asks for: words, or a pattern.
enum Asked<'a> {
    Query(&'a str),
    Pattern(Regex),
}

impl<'a> Asked<'a> {
    /// `query` or `pattern`, checked: exactly one, within its bounds.
    fn read(query: Option<&'a str>, pattern: Option<&str>) -> Result<Self, ToolError> {
        let query = query.map(str::trim).filter(|query| !query.is_empty());
        match (query, pattern) {
            (Some(query), None) if query.len() > QUERY_LIMIT => Err(wrong(
                SEARCH_TOOL,
                "/query",
                format!("a few words, at most {QUERY_LIMIT} bytes"),
            )),
            (Some(query), None) => Ok(Self::Query(query)),
            (None, Some(pattern)) if pattern.len() > PATTERN_LIMIT => Err(wrong(
                SEARCH_TOOL,
                "/pattern",
                format!("a regular expression of at most {PATTERN_LIMIT} bytes"),
            )),
            (None, Some(pattern)) => RegexBuilder::new(pattern)
                .case_insensitive(true)
                .size_limit(REGEX_SIZE_LIMIT)
                .dfa_size_limit(REGEX_SIZE_LIMIT)
                .build()
                .map(Self::Pattern)
                .map_err(|e| {
                    wrong(
                        SEARCH_TOOL,
                        "/pattern",
                        format!("a regular expression this search reads ({e})"),
                    )
                }),
            (Some(_), Some(_)) => Err(wrong(SEARCH_TOOL, "", "`query` or `pattern`, not both")),
            _ => Err(wrong(
                SEARCH_TOOL,
                "/query",
                "a few words saying what the tool should do (or `pattern`, a regular expression)",
            )),
        }
    }
}

/// One tool a search found.
#[derive(Debug, Serialize, JsonSchema)]
struct FoundTool {
    name: String,
    description: String,
    /// The JSON Schema of its arguments.
    input_schema: Value,
}

/// What a search found, best first.
#[derive(Debug, Serialize, JsonSchema)]
struct Found {
    tools: Vec<FoundTool>,
}

/// Find tools by what they do: many tools are not listed until a search finds them.
///
/// Describe the task in a few words as `query` ("send a message to a channel"), or give
/// `pattern`, a regular expression matched (ignoring case) against tool names, descriptions
/// and parameters. Returns the best matches with the JSON Schema of their arguments. Call a
/// found tool by its name; where it is not in your tools, call it through `call_tool`.
#[tool(crate = crate, register = false, read_only, idempotent)]
pub(crate) async fn tool_search(
    /// What the tool should do, in a few words
    query: Option<String>,
    /// A regular expression to match instead of `query` (`^github_`, `calendar|event`)
    pattern: Option<String>,
    /// How many tools to return (5 unless the server says otherwise; at most 25)
    #[schemars(range(min = 1, max = 25))]
    limit: Option<usize>,
    searcher: State<Searcher>,
    ctx: &ToolContext,
) -> Result<ToolOutput, ToolError> {
    let server = ctx
        .server()
        .ok_or_else(|| ToolError::execution("this call was not made through a tool server"))?;
    let limit = limit.unwrap_or(searcher.max_results).clamp(1, MAX_RESULTS);
    // The arguments are checked before the index is built: a wrong call costs nothing.
    let asked = Asked::read(query.as_deref(), pattern.as_deref())?;
    let index = searcher.index(&server).await;
    let order = match asked {
        Asked::Query(query) => {
            let vector = searcher.query_vector(&index, query).await;
            index.rank(query, vector.as_deref())
        }
        Asked::Pattern(regex) => {
            // Linear, but over every deferred tool's text: off the async workers.
            let matching = Arc::clone(&index);
            tokio::task::spawn_blocking(move || matching.matching(&regex))
                .await
                .map_err(|e| ToolError::execution(format!("the pattern search failed: {e}")))?
        }
    };
    let caller = ctx.caller();
    let tools: Vec<FoundTool> = order
        .into_iter()
        .map(|i| &index.documents[i].definition)
        .filter(|definition| {
            definition.allows_caller(caller)
                && server.tools().context(ctx).get(&definition.name).is_some()
        })
        .take(limit)
        .map(|definition| FoundTool {
            name: definition.name.clone(),
            description: definition.description.clone(),
            input_schema: definition.parameters.clone(),
        })
        .collect();
    let found = Found { tools };
    let text = if found.tools.is_empty() {
        "No tool matched; try other words, or a broader pattern.".to_owned()
    } else {
        serde_json::to_string(&found).map_err(|e| ToolError::execution(e.to_string()))?
    };
    let mut output = ToolOutput::text(text);
    for tool in &found.tools {
        // Anthropic loads a referenced tool from the array it was sent, which leaves out a
        // tool whose schema it cannot take: such a tool is not referenced.
        let definition = server.offered(&tool.name);
        let anthropic = Provider::Anthropic;
        if definition.is_some_and(|d| anthropic.tool_entry(&d, anthropic.dialect()).is_ok()) {
            output = output.with(Content::ToolReference(ToolReference::new(&tool.name)));
        }
    }
    let data = serde_json::to_value(&found).map_err(|e| ToolError::execution(e.to_string()))?;
    Ok(output.with_data(data))
}

/// Call a tool that `tool_search` found, by name, with its arguments.
///
/// Use it for found tools that are not in your tools; call the others directly.
#[tool(crate = crate, register = false, open_world)]
pub(crate) async fn call_tool(
    /// The tool's name, as `tool_search` gave it
    name: String,
    /// The tool's arguments, as its input schema describes them
    arguments: Option<Map<String, Value>>,
    ctx: &ToolContext,
) -> Result<ToolOutput, ToolError> {
    if refers_to_call_tool(&name) {
        return Err(wrong(
            CALL_TOOL,
            "/name",
            "the name of the tool to call, not `call_tool` itself",
        ));
    }
    let server = ctx
        .server()
        .ok_or_else(|| ToolError::execution("this call was not made through a tool server"))?;
    let arguments = Value::Object(arguments.unwrap_or_default());
    let result = server.call(&name, arguments).context(ctx.clone()).await;
    if !result.success {
        let error = result.error.unwrap_or_else(|| "the call failed".to_owned());
        return Err(ToolError::execution(format!("`{name}`: {error}")));
    }
    let data = (result.content.is_empty() || !result.output.is_string()).then_some(result.output);
    let mut output = ToolOutput::blocks(result.content);
    output.data = data;
    Ok(output)
}

/// Whether name repair could take `name` for `call_tool`: any spelling that is `calltool`
/// once cased alike and rid of separators (`CallTool`, `cALL_TOOL`, `call-tool`).
fn refers_to_call_tool(name: &str) -> bool {
    let letters: String = name
        .chars()
        .filter(|c| !matches!(c, '_' | '-' | ' '))
        .flat_map(char::to_lowercase)
        .collect();
    letters == CALL_TOOL.replace('_', "")
}

/// Arguments that do not fit: `pointer` should have been `expected`.
fn wrong(tool: &str, pointer: &str, expected: impl Into<String>) -> ToolError {
    ToolError::invalid_args(tool, [ArgumentProblem::new(pointer, expected)])
}
