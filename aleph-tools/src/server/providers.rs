//! The server in each model provider's terms: the tools array a request sends
//! ([`tools_for`](AlephToolServer::tools_for)), a response's tool calls run and answered
//! ([`run_tool_calls`](AlephToolServer::run_tool_calls)), the size of each provider's list,
//! and the quarantine of tools a configured provider cannot take. The formats themselves
//! are in [`provider`](crate::provider).

use std::sync::Arc;
use std::time::Duration;

use futures_util::stream::{self, StreamExt as _};
use serde_json::Value;

use super::table::Entry;
use super::{AlephToolServer, CallArgs};
use crate::context::ToolContext;
use crate::error::{ArgumentProblem, ToolError};
use crate::provider::{
    Provider, ProviderCall, ProviderError, RoundLimits, SizeReport, ToolListError, ToolRound,
    output_is_wrapped,
};
use crate::result::ToolResult;
use crate::server::RegistryError;
use crate::tool::ToolDefinition;
use crate::util::sync::lock;

/// The tools arrays built for one version of the tools and filter, per provider.
#[derive(Default)]
pub(super) struct ToolLists {
    version: u64,
    lists: Vec<(Provider, Arc<Value>)>,
}

impl ToolLists {
    fn get(&self, version: u64, provider: Provider) -> Option<Arc<Value>> {
        if self.version != version {
            return None;
        }
        self.lists
            .iter()
            .find(|(p, _)| *p == provider)
            .map(|(_, list)| Arc::clone(list))
    }

    fn put(&mut self, version: u64, provider: Provider, list: Arc<Value>) {
        if self.version != version {
            if version < self.version {
                return; // built from an older version than the lists kept
            }
            self.version = version;
            self.lists.clear();
        }
        self.lists.retain(|(p, _)| *p != provider);
        self.lists.push((provider, list));
    }
}

/// What a server does with a tool that one of its providers (see
/// [`ToolServerBuilder::with_providers`](crate::ToolServerBuilder::with_providers)) cannot
/// take, such as a recursive type for Gemini.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum IncompatibleTools {
    /// Serve it, leave it out of that provider's tools array, and report it in
    /// [`incompatible_tools`](AlephToolServer::incompatible_tools) and in a `tracing`
    /// warning: one tool never costs the others. The default.
    #[default]
    Skip,
    /// Refuse it: [`build`](crate::ToolServerBuilder::build) and
    /// [`add`](AlephToolServer::add) fail with [`RegistryError::Incompatible`].
    Error,
}

/// The providers a server checks its tools against, and what it does with a misfit.
#[derive(Debug, Clone, Default)]
pub(super) struct Quarantine {
    pub(super) providers: Vec<Provider>,
    pub(super) policy: IncompatibleTools,
}

impl Quarantine {
    /// Checks `entry` against every provider, recording what does not fit; `Err` when the
    /// policy refuses such a tool.
    pub(super) fn check(&self, entry: &mut Entry) -> Result<(), RegistryError> {
        entry.incompatible = self
            .providers
            .iter()
            .filter_map(|&provider| {
                provider
                    .tool_entry(&entry.definition, provider.dialect())
                    .err()
            })
            .collect();
        match (self.policy, entry.incompatible.first()) {
            (_, None) => Ok(()),
            (IncompatibleTools::Error, Some(misfit)) => {
                Err(RegistryError::Incompatible(misfit.clone()))
            }
            (IncompatibleTools::Skip, Some(_)) => {
                for misfit in &entry.incompatible {
                    tracing::warn!(tool = %misfit.tool, provider = misfit.provider.name(), "quarantined: {misfit}");
                }
                Ok(())
            }
        }
    }
}

impl AlephToolServer {
    /// The providers the builder was told of with
    /// [`with_providers`](crate::ToolServerBuilder::with_providers), in that order.
    pub fn providers(&self) -> &[Provider] {
        &self.shared.settings.quarantine.providers
    }

    /// The `tools` array for a request to `provider`: the tools the filter offers, sorted
    /// by name, with schemas in the provider's default [`dialect`](Provider::dialect).
    /// Deferred tools (see [`ToolSearch`](crate::builtin::ToolSearch)) are left out, but for
    /// Anthropic, whose array marks them `defer_loading`.
    ///
    /// The array is built once and shared until the tools or the filter change (the
    /// changes [`watch_tools`](Self::watch_tools) counts), so asking again each round of a
    /// conversation costs a lock and a reference count.
    ///
    /// A tool whose schema the provider cannot take (a recursive type for Gemini, say) is
    /// left out, so one tool never fails a request; such tools are listed by
    /// [`incompatible_tools`](Self::incompatible_tools) for the providers the builder was
    /// told of, and logged with `tracing` for any other.
    pub fn tools_for(&self, provider: Provider) -> Arc<Value> {
        // The count is read before the tools: a list built from tools newer than the count
        // is rebuilt at the next change, never kept past it.
        let version = self.tools_version();
        if let Some(list) = lock(&self.shared.tool_lists).get(version, provider) {
            return list;
        }
        let tools = Self::loaded_for(provider, self.list_tools());
        let list = Arc::new(self.build_tools_for(provider, &tools));
        lock(&self.shared.tool_lists).put(version, provider, Arc::clone(&list));
        list
    }

    /// The `tools` array of `tools` for `provider`.
    pub(super) fn build_tools_for(
        &self,
        provider: Provider,
        tools: &[Arc<ToolDefinition>],
    ) -> Value {
        let configured = self
            .shared
            .settings
            .quarantine
            .providers
            .contains(&provider);
        let entries: Vec<Value> = tools
            .iter()
            .filter_map(|definition| match provider.tool_entry(definition, provider.dialect()) {
                Ok(entry) => Some(entry),
                Err(misfit) => {
                    if !configured {
                        tracing::warn!(tool = %definition.name, provider = provider.name(), "left out of the tools array: {misfit}");
                    }
                    None
                }
            })
            .collect();
        provider.tools_array(entries)
    }

    /// The tools some provider given to
    /// [`with_providers`](crate::ToolServerBuilder::with_providers) cannot take, one entry
    /// per tool and provider (the tool, the provider, and what does not fit, with its place
    /// in the schema), sorted by tool. These tools are served, and left out of those
    /// providers' tools arrays.
    pub fn incompatible_tools(&self) -> Vec<ToolListError> {
        let table = self.shared.tools.load();
        let mut all: Vec<ToolListError> = table
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

    /// The size of the tool list [`tools_for`](Self::tools_for) gives each provider, one
    /// entry per provider in [`Provider::ALL`]'s order.
    pub fn tool_list_sizes(&self) -> Vec<SizeReport> {
        Provider::ALL
            .iter()
            .map(|&provider| SizeReport::measure(provider, &self.tools_for(provider)))
            .collect()
    }

    /// Runs every tool call in a provider's response through the server, concurrently,
    /// and builds the messages that answer them, in call order. At most 32 calls of one
    /// response run, 8 at once; each call past the 32nd is answered with an error saying the
    /// limit ([`Agent`](crate::agent::Agent) sets both).
    ///
    /// Each call goes the whole way a [`call`](Self::call) goes: name repair, filter,
    /// validation (and argument repair if on), confirmation, middleware, time limits. A
    /// call that fails (unknown tool, arguments that are not JSON, a tool error) is a
    /// failed result the model reads and can fix; it never fails the others.
    ///
    /// # Errors
    ///
    /// [`ProviderError`] only when the response itself cannot be read as `provider`'s.
    pub async fn run_tool_calls(
        &self,
        provider: Provider,
        response: &Value,
    ) -> Result<ToolRound, ProviderError> {
        let calls = provider.parse_calls(response)?;
        Ok(self
            .answer_calls(provider, calls, None, RoundLimits::default())
            .await)
    }

    /// Runs `calls`, at most `limits.concurrent` at once, each with its own copy of `ctx` (or
    /// the server's defaults), and builds the messages that answer them. Calls past
    /// `limits.per_round` do not run: each is answered with an error saying the limit.
    pub(crate) async fn answer_calls(
        &self,
        provider: Provider,
        calls: Vec<ProviderCall>,
        ctx: Option<&ToolContext>,
        limits: RoundLimits,
    ) -> ToolRound {
        let total = calls.len();
        let running = calls.len().min(limits.per_round);
        let mut answered: Vec<(ToolResult, Option<String>)> = stream::iter(&calls[..running])
            .map(|call| self.run_one(call, ctx.cloned()))
            .buffered(limits.concurrent)
            .collect()
            .await;
        answered.extend(calls[running..].iter().map(|call| {
            let error = ToolError::execution(format_args!(
                "`{name}` was not run: the turn made {total} tool calls and at most {max} run in \
                 one turn; make the calls still needed in the next turn",
                name = call.name,
                max = limits.per_round,
            ));
            (ToolResult::err(&error, Duration::ZERO), None)
        }));
        let (results, tools): (Vec<ToolResult>, Vec<Option<String>>) = answered.into_iter().unzip();
        let messages = if provider == Provider::Mcp {
            // MCP's structured content follows the tool's output schema, so it needs the
            // tool that ran (after name repair), not the name as called.
            results
                .iter()
                .zip(&tools)
                .map(|(result, tool)| {
                    let wrap = tool
                        .as_deref()
                        .and_then(|name| self.definition(name))
                        .is_some_and(|definition| output_is_wrapped(&definition));
                    result.to_mcp(wrap)
                })
                .collect()
        } else {
            provider.result_messages(&calls, &results)
        };
        ToolRound {
            calls,
            results,
            messages,
        }
    }

    /// The result of one call, and the name of the tool that ran (after repair).
    async fn run_one(
        &self,
        call: &ProviderCall,
        ctx: Option<ToolContext>,
    ) -> (ToolResult, Option<String>) {
        match &call.arguments {
            Ok(arguments) => {
                let result = self
                    .run(&call.name, CallArgs::Borrowed(arguments), ctx)
                    .await;
                let tool = result.tool_that_ran(&call.name).to_owned();
                (result, Some(tool))
            }
            Err(bad) => {
                let problem =
                    ArgumentProblem::new("", "a JSON object").received(bad.received.clone());
                let error = ToolError::invalid_args(&call.name, vec![problem]);
                (ToolResult::err(&error, Duration::ZERO), None)
            }
        }
    }
}
