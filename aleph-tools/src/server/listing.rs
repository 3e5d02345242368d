//! [`ToolList`]: what a server offers, asked once and read as definitions, names, one
//! definition, or a provider's `tools` array; for everyone the filter lets in, or for one
//! caller, less the tools a middleware layer leaves out for its context
//! ([`Middleware::offers`]).
//!
//! [`Middleware::offers`]: crate::middleware::Middleware::offers

use std::fmt;
use std::sync::Arc;

use serde_json::Value;

use super::table::Entry;
use super::{AlephToolServer, CompiledFilter, Snapshot};
use crate::context::ToolContext;
use crate::provider::{Provider, SizeReport, ToolListError};
use crate::tool::ToolDefinition;
use crate::util::sync::lock;

impl AlephToolServer {
    /// The tools this server offers: those its filter lets in, or, after
    /// [`context`](ToolList::context), those a caller with that context is offered.
    ///
    /// ```
    /// use aleph_tools::Identity;
    /// use aleph_tools::middleware::Permission;
    /// use aleph_tools::prelude::*;
    /// use aleph_tools::provider::Provider;
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
    /// assert_eq!(server.tools().names(), ["file_delete"]);
    ///
    /// let guest = ToolContext::new();
    /// let root = Identity::new("root").with_scopes(["fs:write"]);
    /// let admin = ToolContext::new().with_identity(root);
    /// assert!(server.tools().context(&guest).get("file_delete").is_none());
    /// assert!(server.tools().context(&admin).get("file_delete").is_some());
    /// let offered = server.tools().context(&guest).for_provider(Provider::OpenAiChat);
    /// assert_eq!(offered.as_array().map(Vec::len), Some(0));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn tools(&self) -> ToolList<'_> {
        ToolList {
            server: self,
            context: None,
        }
    }

    /// The definitions of the tools the filter offers, sorted by name. A tool the filter
    /// requires confirmation for is listed with `requires_confirmation` set.
    pub(crate) fn offered_definitions(&self) -> Vec<Arc<ToolDefinition>> {
        let snapshot = self.shared.snapshot.load();
        let filter = self.shared.filter.load();
        let mut all: Vec<_> = snapshot
            .tools
            .values()
            .filter_map(|e| offered_definition(e, &filter.compiled))
            .collect();
        all.sort_unstable_by(|a, b| a.name.cmp(&b.name));
        all
    }

    /// The definition of the tool called `name`, if the filter offers it.
    pub(crate) fn offered(&self, name: &str) -> Option<Arc<ToolDefinition>> {
        let snapshot = self.shared.snapshot.load();
        offered_definition(
            snapshot.tools.get(name)?,
            &self.shared.filter.load().compiled,
        )
    }

    /// The `tools` array for `provider` of every tool the filter offers, built once and
    /// shared until the tools or the filter change.
    pub(crate) fn shared_tools_array(&self, provider: Provider) -> Arc<Value> {
        // The count is read before the tools: a list built from tools newer than the count
        // is rebuilt at the next change, never kept past it.
        let version = self.tools_version();
        if let Some(list) = lock(&self.shared.tool_lists).get(version, provider) {
            return list;
        }
        let tools = Self::loaded_for(provider, self.offered_definitions());
        let list = Arc::new(self.build_tools_for(provider, &tools));
        lock(&self.shared.tool_lists).put(version, provider, Arc::clone(&list));
        list
    }

    /// The names of the tools the filter offers that a layer leaves out for a caller with
    /// `context`; `None` when it is none of them (always, for a server without layers).
    #[cfg(feature = "mcp")]
    pub(crate) fn hidden_from(
        &self,
        context: &ToolContext,
    ) -> Option<std::collections::HashSet<String>> {
        let layered = self.layered()?;
        let hidden: std::collections::HashSet<String> = self
            .offered_definitions()
            .iter()
            .filter(|definition| !layered.stack.offers(definition, context))
            .map(|definition| definition.name.clone())
            .collect();
        (!hidden.is_empty()).then_some(hidden)
    }

    /// The snapshot in force, when its stack has a layer that could leave a tool out.
    fn layered(&self) -> Option<Arc<Snapshot>> {
        let snapshot = self.shared.snapshot.load_full();
        (!snapshot.stack.is_empty()).then_some(snapshot)
    }
}

/// The definition of `entry` as `filter` offers it, if it does.
fn offered_definition(entry: &Entry, filter: &CompiledFilter) -> Option<Arc<ToolDefinition>> {
    if !filter.offers(&entry.name) {
        return None;
    }
    if filter.needs_confirmation(&entry.name) && !entry.definition.requires_confirmation {
        let definition = ToolDefinition::clone(&entry.definition).with_confirmation(true);
        return Some(Arc::new(definition));
    }
    Some(Arc::clone(&entry.definition))
}

/// The tools a server offers, made by [`AlephToolServer::tools`]: everything its filter
/// lets in, or with [`context`](Self::context), what one caller is offered. Each method
/// reads the tools as they are when it is called.
#[derive(Clone, Copy)]
#[must_use = "a tool list is read through its methods"]
pub struct ToolList<'s> {
    server: &'s AlephToolServer,
    context: Option<&'s ToolContext>,
}

impl fmt::Debug for ToolList<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolList")
            .field("context", &self.context)
            .finish_non_exhaustive()
    }
}

impl<'s> ToolList<'s> {
    /// The tools a caller with `context` is offered: those the filter offers that no
    /// middleware layer leaves out for it ([`Middleware::offers`]; [`Permission`] leaves
    /// out the tools the caller lacks a capability for).
    ///
    /// [`Middleware::offers`]: crate::middleware::Middleware::offers
    /// [`Permission`]: crate::middleware::Permission
    pub fn context(self, context: &'s ToolContext) -> Self {
        Self {
            context: Some(context),
            ..self
        }
    }

    /// The definitions, sorted by name. A tool the filter requires confirmation for is
    /// listed with `requires_confirmation` set.
    pub fn definitions(&self) -> Vec<Arc<ToolDefinition>> {
        let mut tools = self.server.offered_definitions();
        if let Some((context, layered)) = self.layered_context() {
            tools.retain(|definition| layered.stack.offers(definition, context));
        }
        tools
    }

    /// The names, sorted.
    pub fn names(&self) -> Vec<String> {
        if self.layered_context().is_some() {
            return self
                .definitions()
                .iter()
                .map(|definition| definition.name.clone())
                .collect();
        }
        let snapshot = self.server.shared.snapshot.load();
        let filter = self.server.shared.filter.load();
        let mut names: Vec<String> = snapshot
            .tools
            .keys()
            .filter(|name| filter.compiled.offers(name))
            .map(ToString::to_string)
            .collect();
        names.sort_unstable();
        names
    }

    /// The definition of the tool called `name`, if it is offered.
    pub fn get(&self, name: &str) -> Option<Arc<ToolDefinition>> {
        let definition = self.server.offered(name)?;
        match self.layered_context() {
            Some((context, layered)) if !layered.stack.offers(&definition, context) => None,
            _ => Some(definition),
        }
    }

    /// The `tools` array for a request to `provider`, sorted by name, with schemas in the
    /// provider's default [`dialect`](Provider::dialect). Deferred tools (see
    /// `builtin::ToolSearch`) are left out, but for Anthropic, whose array marks them
    /// `defer_loading`.
    ///
    /// Without a context, or when no layer leaves a tool out for it, the array is built
    /// once and shared until the tools or the filter change (the changes
    /// [`watch_tools`](AlephToolServer::watch_tools) counts), so asking again each round
    /// of a conversation costs a lock and a reference count.
    ///
    /// A tool whose schema the provider cannot take (a recursive type for Gemini, say) is
    /// left out, so one tool never fails a request; such tools are listed by
    /// [`incompatible`](Self::incompatible) for the providers the builder was told of,
    /// and logged with `tracing` for any other.
    pub fn for_provider(&self, provider: Provider) -> Arc<Value> {
        let server = self.server;
        let Some((context, layered)) = self.layered_context() else {
            return server.shared_tools_array(provider);
        };
        let offered = server.offered_definitions();
        let everything = offered.len();
        let theirs: Vec<_> = offered
            .into_iter()
            .filter(|definition| layered.stack.offers(definition, context))
            .collect();
        if theirs.len() == everything {
            return server.shared_tools_array(provider);
        }
        let tools = AlephToolServer::loaded_for(provider, theirs);
        Arc::new(server.build_tools_for(provider, &tools))
    }

    /// The size of the `tools` array [`for_provider`](Self::for_provider) gives each
    /// provider, one entry per provider in [`Provider::ALL`]'s order.
    pub fn sizes(&self) -> Vec<SizeReport> {
        Provider::ALL
            .iter()
            .map(|&provider| SizeReport::measure(provider, &self.for_provider(provider)))
            .collect()
    }

    /// The tools some provider given to
    /// [`with_providers`](crate::ToolServerBuilder::with_providers) cannot take, one entry
    /// per tool and provider (the tool, the provider, and what does not fit, with its place
    /// in the schema), sorted by tool; whatever the context. These tools are served, and
    /// left out of those providers' tools arrays.
    pub fn incompatible(&self) -> Vec<ToolListError> {
        let snapshot = self.server.shared.snapshot.load();
        let mut all: Vec<ToolListError> = snapshot
            .tools
            .values()
            .flat_map(|entry| entry.incompatible.iter().cloned())
            .collect();
        all.sort_by(|a, b| {
            a.tool
                .cmp(&b.tool)
                .then(a.provider.name().cmp(b.provider.name()))
        });
        all
    }

    /// The context, with the snapshot whose layers are asked, when a layer could leave a
    /// tool out for it.
    fn layered_context(&self) -> Option<(&'s ToolContext, Arc<Snapshot>)> {
        Some((self.context?, self.server.layered()?))
    }
}
