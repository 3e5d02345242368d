//! `web_search`: a query answered by a [`SearchBackend`], such as a `SearXNG` instance.

use std::sync::Arc;
use std::time::Duration;

use reqwest::Url;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::Builtin;
use crate::context::State;
use crate::error::ToolError;
use crate::server::RegistryError;
use crate::server::ToolServerBuilder;
use crate::tool;
use crate::tool::BoxFuture;

/// What a search asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SearchQuery {
    /// The words searched for.
    pub query: String,
    /// The most results wanted.
    pub max_results: usize,
    /// The language of the results wanted, as a code such as `en` or `de-CH`.
    pub language: Option<String>,
}

impl SearchQuery {
    /// A query for up to `max_results` results in any language.
    pub fn new(query: impl Into<String>, max_results: usize) -> Self {
        Self {
            query: query.into(),
            max_results,
            language: None,
        }
    }
}

/// One result of a search.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SearchHit {
    /// The page's title.
    pub title: String,
    /// The page's address.
    pub url: String,
    /// A passage of the page about the query.
    pub snippet: String,
}

/// Where `web_search` gets its results: implement it to search with any engine.
///
/// ```
/// use aleph_tools::builtin::{SearchBackend, SearchHit, SearchQuery};
/// use aleph_tools::{BoxFuture, ToolError};
///
/// /// Answers every query from a fixed list: for tests, or a closed corpus.
/// struct Fixed(Vec<SearchHit>);
///
/// impl SearchBackend for Fixed {
///     fn search<'a>(&'a self, query: &'a SearchQuery) -> BoxFuture<'a, Result<Vec<SearchHit>, ToolError>> {
///         Box::pin(async move { Ok(self.0.iter().take(query.max_results).cloned().collect()) })
///     }
/// }
/// ```
pub trait SearchBackend: Send + Sync + 'static {
    /// Runs a search; the results best first.
    ///
    /// # Errors
    ///
    /// A [`ToolError`] that says why the search failed, for the model.
    fn search<'a>(
        &'a self,
        query: &'a SearchQuery,
    ) -> BoxFuture<'a, Result<Vec<SearchHit>, ToolError>>;

    /// What is wrong with the backend's settings, checked when the server is built.
    ///
    /// # Errors
    ///
    /// What to fix.
    fn check(&self) -> Result<(), String> {
        Ok(())
    }
}

/// The backend `web_search` runs with.
pub(crate) struct Searcher(Arc<dyn SearchBackend>);

/// `web_search`, answered by a [`SearchBackend`] (such as [`SearxNg`]): give it to
/// [`with_builtin`](ToolServerBuilder::with_builtin).
///
/// ```no_run
/// use aleph_tools::builtin::{SearxNg, WebSearch};
/// use aleph_tools::prelude::*;
///
/// let server = AlephToolServer::builder()
///     .with_builtin(WebSearch::new(SearxNg::new("http://127.0.0.1:8888")))
///     .build()?;
/// # Ok::<(), aleph_tools::RegistryError>(())
/// ```
pub struct WebSearch<B> {
    backend: B,
}

impl<B: SearchBackend> WebSearch<B> {
    /// `web_search` answered by `backend`.
    pub fn new(backend: B) -> Self {
        Self { backend }
    }
}

impl<B> std::fmt::Debug for WebSearch<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebSearch").finish_non_exhaustive()
    }
}

impl<B: SearchBackend> Builtin for WebSearch<B> {
    fn add_to(self, builder: ToolServerBuilder) -> ToolServerBuilder {
        if let Err(reason) = self.backend.check() {
            return builder.with_problem(RegistryError::InvalidSetting {
                setting: "the search backend".to_owned(),
                reason,
            });
        }
        builder
            .with_state(Searcher(Arc::new(self.backend)))
            .with_tool(WebSearchTool)
    }
}

/// What `web_search` found.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct SearchResults {
    /// The query searched for.
    query: String,
    /// The results, best first.
    results: Vec<SearchHit>,
}

/// Search the web: the best matching pages, each with its title, URL and a snippet.
///
/// Read a page in full with `web_fetch` when there is one.
#[tool(crate = crate, register = false, read_only, open_world)]
pub(crate) async fn web_search(
    /// What to search for, as you would type it into a search engine
    query: String,
    /// The most results to return
    #[arg(default = 10)]
    #[schemars(range(min = 1, max = 50))]
    max_results: usize,
    /// The language of the results, as a code such as `en` or `fr`
    language: Option<String>,
    searcher: State<Searcher>,
) -> Result<SearchResults, ToolError> {
    let request = SearchQuery {
        query,
        max_results: max_results.clamp(1, 50),
        language,
    };
    let mut results = searcher.0.search(&request).await?;
    results.truncate(request.max_results);
    Ok(SearchResults {
        query: request.query,
        results,
    })
}

/// A [SearXNG](https://docs.searxng.org) instance, asked through its JSON API
/// (`GET /search?q=…&format=json`). The instance must allow the `json` format
/// (`search.formats` in its `settings.yml`).
#[derive(Debug, Clone)]
pub struct SearxNg {
    base: String,
    timeout: Duration,
    /// `None` when no HTTP client could be made here (no TLS backend); `check` says so.
    client: Option<reqwest::Client>,
}

impl SearxNg {
    /// The instance at `base_url` (such as `http://127.0.0.1:8888`), with a 15-second time
    /// limit per search.
    pub fn new(base_url: impl Into<String>) -> Self {
        Self {
            base: base_url.into(),
            timeout: Duration::from_secs(15),
            client: reqwest::Client::builder().build().ok(),
        }
    }

    /// The time a search may take.
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The search endpoint, from the base URL.
    fn endpoint(&self) -> Result<Url, String> {
        let mut base = self.base.clone();
        if !base.ends_with('/') {
            base.push('/');
        }
        let base = Url::parse(&base)
            .map_err(|e| format!("the SearXNG address `{}` is not a URL: {e}", self.base))?;
        if !matches!(base.scheme(), "http" | "https") {
            return Err(format!(
                "the SearXNG address `{}` must be http or https",
                self.base
            ));
        }
        base.join("search").map_err(|e| e.to_string())
    }

    async fn ask(&self, query: &SearchQuery) -> Result<Vec<SearchHit>, ToolError> {
        let mut url = self.endpoint().map_err(ToolError::execution)?;
        url.query_pairs_mut()
            .append_pair("q", &query.query)
            .append_pair("format", "json");
        if let Some(language) = &query.language {
            url.query_pairs_mut().append_pair("language", language);
        }
        let client = self.client.as_ref().ok_or_else(|| {
            ToolError::execution("no HTTP client could be made for the search engine")
        })?;
        let response = client
            .get(url)
            .timeout(self.timeout)
            .send()
            .await
            .map_err(|e| {
                ToolError::execution(format!("the search engine could not be reached: {e}"))
            })?;
        let status = response.status();
        if status == reqwest::StatusCode::FORBIDDEN {
            return Err(ToolError::execution(
                "the search engine refused the JSON format (403); its settings.yml must list `json` in `search.formats`",
            ));
        }
        if !status.is_success() {
            return Err(ToolError::execution(format!(
                "the search engine answered {status}"
            )));
        }
        let body = response.bytes().await.map_err(|e| {
            ToolError::execution(format!("the search engine's answer could not be read: {e}"))
        })?;
        let answer: SearxAnswer = serde_json::from_slice(&body).map_err(|e| {
            ToolError::execution(format!(
                "the search engine's answer is not SearXNG's JSON: {e}"
            ))
        })?;
        Ok(answer
            .results
            .into_iter()
            .filter(|r| !r.url.is_empty())
            .take(query.max_results)
            .map(|r| SearchHit {
                title: r.title,
                url: r.url,
                snippet: r.content,
            })
            .collect())
    }
}

impl SearchBackend for SearxNg {
    fn search<'a>(
        &'a self,
        query: &'a SearchQuery,
    ) -> BoxFuture<'a, Result<Vec<SearchHit>, ToolError>> {
        Box::pin(self.ask(query))
    }

    fn check(&self) -> Result<(), String> {
        if self.client.is_none() {
            return Err("no HTTP client can be made here (TLS could not be set up)".to_owned());
        }
        self.endpoint().map(drop)
    }
}

/// The part of `SearXNG`'s answer read here.
#[derive(Deserialize)]
struct SearxAnswer {
    results: Vec<SearxResult>,
}

#[derive(Deserialize)]
struct SearxResult {
    #[serde(default)]
    url: String,
    #[serde(default)]
    title: String,
    #[serde(default)]
    content: String,
}
