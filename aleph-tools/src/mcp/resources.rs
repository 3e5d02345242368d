//! Resources served over MCP: data a client reads by URI (`resources/list`,
//! `resources/read`), fixed ones and URI templates, and the notices a client subscribes to.

use std::error::Error;
use std::fmt;
use std::future::Future;
use std::sync::Arc;

use super::McpError;
use crate::result::ResourceContents;
use crate::tool::BoxFuture;

/// What reading a resource gives: its contents, or why they could not be read.
pub type ReadResult = Result<Vec<ResourceContents>, Box<dyn Error + Send + Sync>>;

/// Reads a fixed resource.
type ReadFixed = dyn Fn() -> BoxFuture<'static, ReadResult> + Send + Sync;
/// Reads a resource a template matched, from the URI and its parameters.
type ReadMatched = dyn Fn(String, UriParams) -> BoxFuture<'static, ReadResult> + Send + Sync;

/// What a resource or template says of itself in a listing.
#[derive(Debug, Clone, Default)]
pub(super) struct About {
    pub(super) name: String,
    pub(super) title: Option<String>,
    pub(super) description: Option<String>,
    pub(super) mime_type: Option<String>,
}

/// One resource with a fixed URI, read whenever a client asks.
///
/// ```
/// use aleph_tools::ResourceContents;
/// use aleph_tools::mcp::McpResource;
///
/// let readme = McpResource::text("docs://readme", "readme", "text/markdown", "# Tools\n");
/// let clock = McpResource::new("clock://now", "now", || async {
///     let now = std::time::SystemTime::now()
///         .duration_since(std::time::UNIX_EPOCH)?
///         .as_secs();
///     Ok(vec![ResourceContents::text("clock://now", "text/plain", now.to_string())])
/// })
/// .with_description("Seconds since the Unix epoch.");
/// # let _ = (readme, clock);
/// ```
#[derive(Clone)]
pub struct McpResource {
    pub(super) uri: String,
    pub(super) about: About,
    read: Arc<ReadFixed>,
}

impl fmt::Debug for McpResource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpResource")
            .field("uri", &self.uri)
            .field("name", &self.about.name)
            .finish_non_exhaustive()
    }
}

impl McpResource {
    /// The resource at `uri`, listed as `name`, whose contents `read` gives at each read.
    pub fn new<F, Fut>(uri: impl Into<String>, name: impl Into<String>, read: F) -> Self
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ReadResult> + Send + 'static,
    {
        Self {
            uri: uri.into(),
            about: About {
                name: name.into(),
                ..About::default()
            },
            read: Arc::new(move || Box::pin(read())),
        }
    }

    /// A resource whose contents are always `text`.
    pub fn text(
        uri: impl Into<String>,
        name: impl Into<String>,
        mime_type: impl Into<String>,
        text: impl Into<String>,
    ) -> Self {
        let uri = uri.into();
        let mime_type = mime_type.into();
        let contents = ResourceContents::text(uri.clone(), mime_type.clone(), text);
        Self::new(uri, name, move || {
            let contents = contents.clone();
            async move { Ok(vec![contents]) }
        })
        .with_mime_type(mime_type)
    }

    /// A resource whose contents are always `bytes` (served base64-encoded).
    pub fn blob(
        uri: impl Into<String>,
        name: impl Into<String>,
        mime_type: impl Into<String>,
        bytes: impl AsRef<[u8]>,
    ) -> Self {
        let uri = uri.into();
        let mime_type = mime_type.into();
        let contents = ResourceContents::blob(uri.clone(), mime_type.clone(), bytes);
        Self::new(uri, name, move || {
            let contents = contents.clone();
            async move { Ok(vec![contents]) }
        })
        .with_mime_type(mime_type)
    }

    /// A title for people, shown instead of the name.
    #[must_use]
    pub fn with_title(mut self, title: impl Into<String>) -> Self {
        self.about.title = Some(title.into());
        self
    }

    /// What the resource holds, for the client's model or user.
    #[must_use]
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.about.description = Some(description.into());
        self
    }

    /// The MIME type listed for it.
    #[must_use]
    pub fn with_mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.about.mime_type = Some(mime_type.into());
        self
    }

    /// Its URI.
    pub fn uri(&self) -> &str {
        &self.uri
    }

    /// Reads it now.
    ///
    /// # Errors
    ///
    /// What the read function returned.
    pub async fn read(&self) -> ReadResult {
        (self.read)().await
    }
}

/// Resources whose URIs follow a pattern, such as `users://{id}/profile`: a client reads
/// any URI that matches, and the parameters reach the read function.
///
/// A `{name}` matches one or more characters up to the next `/` (a `{+name}` matches
/// slashes too), and is percent-decoded. Templates are listed in `resources/templates/list`;
/// a URI that a fixed resource has is read from that resource first.
///
/// ```
/// use aleph_tools::ResourceContents;
/// use aleph_tools::mcp::McpResourceTemplate;
///
/// # fn main() -> Result<(), aleph_tools::mcp::McpError> {
/// let profiles = McpResourceTemplate::new("users://{id}/profile", "profile", |uri, params| async move {
///     let id = params.get("id").unwrap_or_default();
///     Ok(vec![ResourceContents::text(uri, "text/plain", format!("user {id}"))])
/// })?
/// .with_description("A user's profile.");
/// # let _ = profiles;
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct McpResourceTemplate {
    pub(super) uri_template: String,
    pub(super) about: About,
    parts: Arc<[Part]>,
    read: Arc<ReadMatched>,
}

impl fmt::Debug for McpResourceTemplate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpResourceTemplate")
            .field("uri_template", &self.uri_template)
            .field("name", &self.about.name)
            .finish_non_exhaustive()
    }
}

/// A piece of a URI template.
#[derive(Debug, Clone, PartialEq)]
enum Part {
    Literal(String),
    /// A parameter, and whether it may span slashes (`{+name}`).
    Param(String, bool),
}

impl McpResourceTemplate {
    /// The resources matching `uri_template`, listed as `name`, read by `read` from the URI
    /// asked for and its parameters.
    ///
    /// # Errors
    ///
    /// [`McpError::Template`] when `uri_template` is not a template: a `{` without its `}`,
    /// an empty parameter name, or two parameters in a row with nothing between them to
    /// tell them apart.
    pub fn new<F, Fut>(
        uri_template: impl Into<String>,
        name: impl Into<String>,
        read: F,
    ) -> Result<Self, McpError>
    where
        F: Fn(String, UriParams) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ReadResult> + Send + 'static,
    {
        let uri_template = uri_template.into();
        let parts = match parse_template(&uri_template) {
            Ok(parts) => parts,
            Err(problem) => {
                return Err(McpError::Template {
                    template: uri_template,
                    problem,
                });
            }
        };
        Ok(Self {
            uri_template,
            about: About {
                name: name.into(),
                ..About::default()
            },
            parts: parts.into(),
            read: Arc::new(move |uri, params| Box::pin(read(uri, params))),
        })
    }

    /// A title for people, shown instead of the name.
    #[must_use]
    pub fn with_title(mut self, title: impl Into<String>) -> Self {
        self.about.title = Some(title.into());
        self
    }

    /// What the resources hold, for the client's model or user.
    #[must_use]
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.about.description = Some(description.into());
        self
    }

    /// The MIME type of every resource it matches.
    #[must_use]
    pub fn with_mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.about.mime_type = Some(mime_type.into());
        self
    }

    /// The template, as written.
    pub fn uri_template(&self) -> &str {
        &self.uri_template
    }

    /// The parameters of `uri` when it matches the template.
    pub fn matches(&self, uri: &str) -> Option<UriParams> {
        let mut params = Vec::new();
        match_parts(&self.parts, uri, &mut params).then_some(UriParams(params))
    }

    /// Reads `uri` when it matches; `None` when it does not.
    pub async fn read(&self, uri: &str) -> Option<ReadResult> {
        let params = self.matches(uri)?;
        Some(self.read_matched(uri.to_owned(), params).await)
    }

    /// Reads `uri`, which matched with `params`.
    pub(super) fn read_matched(
        &self,
        uri: String,
        params: UriParams,
    ) -> BoxFuture<'static, ReadResult> {
        (self.read)(uri, params)
    }
}

/// The parameters a URI template matched, percent-decoded.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UriParams(Vec<(String, String)>);

impl UriParams {
    /// The value of parameter `name`.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    }

    /// Every parameter, in template order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0
            .iter()
            .map(|(key, value)| (key.as_str(), value.as_str()))
    }
}

fn parse_template(template: &str) -> Result<Vec<Part>, String> {
    let mut parts = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        if open > 0 {
            parts.push(Part::Literal(rest[..open].to_owned()));
        } else if matches!(parts.last(), Some(Part::Param(..))) {
            return Err("two parameters in a row".to_owned());
        }
        let after = &rest[open + 1..];
        let close = after
            .find('}')
            .ok_or_else(|| "a `{` without its `}`".to_owned())?;
        let inner = &after[..close];
        let (name, spans_slashes) = match inner.strip_prefix('+') {
            Some(name) => (name, true),
            None => (inner, false),
        };
        if name.is_empty() || name.contains('{') {
            return Err(format!("`{{{inner}}}` is not a parameter name"));
        }
        parts.push(Part::Param(name.to_owned(), spans_slashes));
        rest = &after[close + 1..];
    }
    if rest.contains('}') {
        return Err("a `}` without its `{`".to_owned());
    }
    if !rest.is_empty() {
        parts.push(Part::Literal(rest.to_owned()));
    }
    Ok(parts)
}

/// Whether `uri` matches `parts`, collecting the parameters. A parameter ends at the first
/// place the literal after it matches the rest of the URI, trying the shortest first.
fn match_parts(parts: &[Part], uri: &str, params: &mut Vec<(String, String)>) -> bool {
    match parts.split_first() {
        None => uri.is_empty(),
        Some((Part::Literal(text), rest)) => uri
            .strip_prefix(text.as_str())
            .is_some_and(|uri| match_parts(rest, uri, params)),
        Some((Part::Param(name, spans_slashes), rest)) => {
            let limit = if *spans_slashes {
                uri.len()
            } else {
                uri.find('/').unwrap_or(uri.len())
            };
            // A parameter matches at least one character.
            let ends = uri[..limit].char_indices().skip(1).chain([(limit, ' ')]);
            for (end, _) in ends.filter(|&(end, _)| end > 0) {
                let before = params.len();
                if let Some(value) = percent_decode(&uri[..end])
                    && match_parts(rest, &uri[end..], params)
                {
                    params.insert(before, (name.clone(), value));
                    return true;
                }
                params.truncate(before);
            }
            false
        }
    }
}

/// `text` with its `%XX` escapes decoded; `None` when they do not decode to UTF-8.
fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = text.get(i + 1..i + 3)?;
            decoded.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            decoded.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(decoded).ok()
}

/// Where resources come from: asked at each request, so what it serves may change while
/// clients are connected (say so with [`McpServer::resources_changed`]).
///
/// [`McpServer::resources_changed`]: super::McpServer::resources_changed
pub trait ResourceSource: Send + Sync + 'static {
    /// The fixed resources as they are now.
    fn resources(&self) -> Vec<McpResource>;

    /// The templates as they are now; none unless implemented.
    fn templates(&self) -> Vec<McpResourceTemplate> {
        Vec::new()
    }
}

impl ResourceSource for McpResource {
    fn resources(&self) -> Vec<McpResource> {
        vec![self.clone()]
    }
}

impl ResourceSource for McpResourceTemplate {
    fn resources(&self) -> Vec<McpResource> {
        Vec::new()
    }

    fn templates(&self) -> Vec<McpResourceTemplate> {
        vec![self.clone()]
    }
}

impl ResourceSource for Vec<McpResource> {
    fn resources(&self) -> Vec<McpResource> {
        self.clone()
    }
}

impl ResourceSource for Vec<McpResourceTemplate> {
    fn resources(&self) -> Vec<McpResource> {
        Vec::new()
    }

    fn templates(&self) -> Vec<McpResourceTemplate> {
        self.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(template: &str, uri: &str) -> Option<Vec<(String, String)>> {
        let template =
            McpResourceTemplate::new(template, "t", |_, _| async { Ok(Vec::new()) }).unwrap();
        template.matches(uri).map(|params| params.0)
    }

    fn pairs(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn templates_match_and_decode_their_parameters() {
        assert_eq!(
            params("test://template/{id}/data", "test://template/123/data"),
            Some(pairs(&[("id", "123")]))
        );
        assert_eq!(
            params("users://{org}/{name}", "users://acme/ada%20lovelace"),
            Some(pairs(&[("org", "acme"), ("name", "ada lovelace")]))
        );
        assert_eq!(
            params("file:///{+path}", "file:///src/lib.rs"),
            Some(pairs(&[("path", "src/lib.rs")]))
        );
        assert_eq!(
            params("db://{table}.json", "db://a.b.json"),
            Some(pairs(&[("table", "a.b")]))
        );
    }

    #[test]
    fn templates_refuse_what_does_not_match() {
        assert_eq!(
            params("test://template/{id}/data", "test://template//data"),
            None
        );
        assert_eq!(
            params("test://template/{id}/data", "test://template/1/2/data"),
            None
        );
        assert_eq!(
            params("test://template/{id}/data", "test://other/1/data"),
            None
        );
        assert_eq!(params("test://template/{id}", "test://template/%zz"), None);
        assert_eq!(params("test://template/{id}", "test://template/%ff"), None);
    }

    #[test]
    fn malformed_templates_are_refused_with_the_reason() {
        for (template, problem) in [
            ("a://{id", "without its `}`"),
            ("a://{}", "not a parameter name"),
            ("a://{a}{b}", "two parameters in a row"),
            ("a://id}", "without its `{`"),
        ] {
            let err = parse_template(template).unwrap_err();
            assert!(err.contains(problem), "{template}: {err}");
        }
    }
}
