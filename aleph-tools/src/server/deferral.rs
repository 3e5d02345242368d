//! Deferred loading: the tools that stay out of the tools array until a search finds
//! them, on a server that serves a tool search.

use std::collections::BTreeSet;
use std::sync::Arc;

use serde_json::Value;

use super::table::Entry;
use super::{AlephToolServer, Settings};
use crate::context::ToolContext;
use crate::provider::Provider;
use crate::tool::ToolDefinition;
use crate::util::patterns::Patterns;

/// Which tools a server with a tool search defers.
pub(crate) struct Deferral {
    /// The tools deferred though their definitions do not say so.
    pub(super) patterns: Patterns,
    /// The search's own tools, never deferred: they are how the others are found.
    pub(super) always_loaded: Vec<String>,
}

impl Settings {
    /// Sets whether `entry` is deferred: with a tool search, when its definition or the
    /// application's patterns say so (never the search's own tools); without one, never.
    pub(super) fn defer(&self, entry: &mut Entry) {
        let deferred = self.deferral.as_ref().is_some_and(|deferral| {
            !deferral.always_loaded.iter().any(|n| **n == *entry.name)
                && (entry.definition.defer_loading || deferral.patterns.is_match(&entry.name))
        });
        if deferred != entry.definition.defer_loading {
            let definition = ToolDefinition::clone(&entry.definition).with_defer_loading(deferred);
            entry.definition = Arc::new(definition);
        }
    }
}

impl AlephToolServer {
    /// The tools array for `provider` (for a caller with `context`, when given) with the
    /// deferred tools named in `found` added: the agent loop's array once a search found
    /// them. Anthropic's array holds every deferred tool already.
    pub(crate) fn tools_with_found(
        &self,
        provider: Provider,
        context: Option<&ToolContext>,
        found: &BTreeSet<String>,
    ) -> Arc<Value> {
        if found.is_empty() || provider == Provider::Anthropic {
            let tools = self.tools();
            return match context {
                Some(context) => tools.context(context).for_provider(provider),
                None => tools.for_provider(provider),
            };
        }
        let mut tools = match context {
            Some(context) => self.tools().context(context),
            None => self.tools(),
        }
        .definitions();
        tools.retain(|definition| !definition.defer_loading || found.contains(&definition.name));
        Arc::new(self.build_tools_for(provider, &tools))
    }

    /// The tools of `tools` a request to `provider` carries before any search: all but the
    /// deferred ones. Anthropic's array holds those too, marked `defer_loading`: its API
    /// keeps them from the model until a search result refers to them.
    pub(super) fn loaded_for(
        provider: Provider,
        mut tools: Vec<Arc<ToolDefinition>>,
    ) -> Vec<Arc<ToolDefinition>> {
        if provider != Provider::Anthropic {
            tools.retain(|definition| !definition.defer_loading);
        }
        tools
    }
}
