//! [`Identity`]: who is behind a call, as an authenticating transport established it.

use std::collections::BTreeSet;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{FromToolContext, ToolContext};
use crate::error::ToolError;

/// Who is behind a call: the subject a bearer token (or any other credential) stands for,
/// the scopes it was granted, and whatever else the credential said about them.
///
/// An HTTP MCP server with an authorizer puts the identity of each request on the context
/// of the calls it makes ([`McpServer::with_auth`](crate::mcp::McpServer::with_auth),
/// feature `mcp`); an application calling in process sets it with
/// [`ToolContext::with_identity`]. A tool reads it with [`ToolContext::identity`], or takes
/// an `Identity` parameter, which `#[tool]` injects (a call without one is refused; take
/// `#[arg(inject)] who: Option<Identity>` to serve anonymous calls as well).
///
/// The scopes are granted to the call as capabilities, so
/// [`Permission`](crate::middleware::Permission) can require them.
///
/// ```
/// use aleph_tools::{Identity, ToolContext};
///
/// let who = Identity::new("alice")
///     .with_scopes(["files:read", "files:write"])
///     .with_claim("email", "alice@example.com");
/// let ctx = ToolContext::new().with_identity(who);
/// assert_eq!(ctx.identity().map(Identity::subject), Some("alice"));
/// assert!(ctx.has_capability("files:write"));
/// assert_eq!(ctx.capabilities().collect::<Vec<_>>(), ["files:read", "files:write"]);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Identity {
    subject: String,
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    scopes: BTreeSet<String>,
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    claims: Map<String, Value>,
}

impl Identity {
    /// An identity for `subject` (a user id, a service account, a client id), with no
    /// scopes and no claims.
    pub fn new(subject: impl Into<String>) -> Self {
        Self {
            subject: subject.into(),
            scopes: BTreeSet::new(),
            claims: Map::new(),
        }
    }

    /// Adds scopes (`"files:write"`); they become the call's capabilities.
    #[must_use]
    pub fn with_scopes(mut self, scopes: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.scopes.extend(scopes.into_iter().map(Into::into));
        self
    }

    /// Adds a claim (`"email"`, `"tenant"`): anything the credential said about the
    /// subject. A second claim of the same name replaces the first.
    #[must_use]
    pub fn with_claim(mut self, name: impl Into<String>, value: impl Into<Value>) -> Self {
        self.claims.insert(name.into(), value.into());
        self
    }

    /// Who this is.
    pub fn subject(&self) -> &str {
        &self.subject
    }

    /// The scopes granted, sorted.
    pub fn scopes(&self) -> impl Iterator<Item = &str> {
        self.scopes.iter().map(String::as_str)
    }

    /// Whether `scope` was granted.
    pub fn has_scope(&self, scope: &str) -> bool {
        self.scopes.contains(scope)
    }

    /// One claim, if the credential made it.
    pub fn claim(&self, name: &str) -> Option<&Value> {
        self.claims.get(name)
    }

    /// Every claim.
    pub fn claims(&self) -> &Map<String, Value> {
        &self.claims
    }
}

impl ToolContext {
    /// Says who is behind this call; the identity's scopes count as capabilities granted
    /// to it ([`has_capability`](Self::has_capability)).
    #[must_use]
    pub fn with_identity(self, identity: Identity) -> Self {
        self.with_shared_identity(Arc::new(identity))
    }

    /// As [`with_identity`](Self::with_identity), sharing an identity many calls hold.
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    pub(crate) fn with_shared_identity(mut self, identity: Arc<Identity>) -> Self {
        self.identity = Some(identity);
        self
    }

    /// Who is behind this call, when the transport authenticated it or the application said.
    pub fn identity(&self) -> Option<&Identity> {
        self.identity.as_deref()
    }
}

impl FromToolContext for Identity {
    fn from_tool_context(ctx: &ToolContext) -> Result<Self, ToolError> {
        ctx.identity().cloned().ok_or_else(|| {
            ToolError::permission_denied(
                ctx.tool_name().unwrap_or_default(),
                "it needs to know who is calling, and this call is anonymous; \
                 serve it behind an authorizer or set the context's identity",
            )
        })
    }
}

impl FromToolContext for Option<Identity> {
    fn from_tool_context(ctx: &ToolContext) -> Result<Self, ToolError> {
        Ok(ctx.identity().cloned())
    }
}
