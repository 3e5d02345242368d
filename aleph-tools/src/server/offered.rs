//! What one caller is offered: the tools the filter offers, less those a middleware layer
//! leaves out for the caller's context ([`Middleware::offers`]), for listings that know
//! who asks.
//!
//! [`Middleware::offers`]: crate::middleware::Middleware::offers

use std::collections::HashSet;
use std::sync::Arc;

use serde_json::Value;

use super::AlephToolServer;
use crate::context::ToolContext;
use crate::provider::Provider;
use crate::tool::ToolDefinition;

impl AlephToolServer {
    /// Whether a caller with `context` is offered the tool `name`: the filter offers it and
    /// no middleware layer leaves it out ([`Middleware::offers`]; [`Permission`] leaves out
    /// tools the caller lacks a capability for).
    ///
    /// ```
    /// use aleph_tools::Identity;
    /// use aleph_tools::middleware::Permission;
    /// use aleph_tools::prelude::*;
    ///
    /// /// Delete a file.
    /// #[tool(register = false)]
    /// fn file_delete(path: String) -> String {
    ///     path
    /// }
    ///
    /// let server = AlephToolServer::builder()
    ///     .with_tool(FileDeleteTool)
    ///     .with_middleware(Permission::new().require("fs:write", ["file_*"])?)
    ///     .build()?;
    /// let guest = ToolContext::new();
    /// let admin = ToolContext::new().with_identity(Identity::new("root").with_scopes(["fs:write"]));
    /// assert!(!server.offers("file_delete", &guest));
    /// assert!(server.offers("file_delete", &admin));
    /// assert!(server.list_tools_for_context(&guest).is_empty());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// [`Middleware::offers`]: crate::middleware::Middleware::offers
    /// [`Permission`]: crate::middleware::Permission
    pub fn offers(&self, name: &str, context: &ToolContext) -> bool {
        self.definition(name)
            .is_some_and(|definition| self.layers_offer(&definition, context))
    }

    /// As [`list_tools`](Self::list_tools), for a caller with `context`: the tools
    /// [`offers`](Self::offers) says it is offered.
    pub fn list_tools_for_context(&self, context: &ToolContext) -> Vec<Arc<ToolDefinition>> {
        let mut tools = self.list_tools();
        if !self.shared.settings.middleware.is_empty() {
            tools.retain(|definition| self.layers_offer(definition, context));
        }
        tools
    }

    /// As [`tools_for`](Self::tools_for), for a caller with `context`: the `tools` array of
    /// the tools it is offered. The agent loop sends this one when it was given a context.
    ///
    /// When no layer leaves a tool out for this caller it is the shared array
    /// `tools_for` keeps; otherwise it is built for this call.
    pub fn tools_for_context(&self, provider: Provider, context: &ToolContext) -> Arc<Value> {
        if self.hidden_from(context).is_none() {
            return self.tools_for(provider);
        }
        let tools = Self::loaded_for(provider, self.list_tools_for_context(context));
        Arc::new(self.build_tools_for(provider, &tools))
    }

    /// The names of the tools the filter offers that a layer leaves out for a caller with
    /// `context`; `None` when it is none of them (always, for a server without middleware).
    pub(crate) fn hidden_from(&self, context: &ToolContext) -> Option<HashSet<String>> {
        if self.shared.settings.middleware.is_empty() {
            return None;
        }
        let hidden: HashSet<String> = self
            .list_tools()
            .iter()
            .filter(|definition| !self.layers_offer(definition, context))
            .map(|definition| definition.name.clone())
            .collect();
        (!hidden.is_empty()).then_some(hidden)
    }

    fn layers_offer(&self, definition: &ToolDefinition, context: &ToolContext) -> bool {
        self.shared
            .settings
            .middleware
            .iter()
            .all(|layer| layer.offers_dyn(definition, context))
    }
}
