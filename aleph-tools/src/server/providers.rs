//! The server in each model provider's terms: the tools array a request sends (built for
//! [`ToolList::for_provider`](super::ToolList::for_provider)), a response's tool calls run
//! and answered ([`run_tool_calls`](AlephToolServer::run_tool_calls)), and the quarantine
//! of tools a configured provider cannot take. The formats themselves are in
//! [`provider`](crate::provider).

use std::fmt;
use std::future::IntoFuture;
use std::sync::Arc;
use std::time::Duration;

use futures_util::stream::{self, StreamExt as _};
use serde_json::Value;

use super::table::Entry;
use super::{AlephToolServer, CallArgs};
use crate::context::ToolContext;
use crate::error::{ArgumentProblem, ToolError};
use crate::provider::{
    Provider, ProviderCall, ProviderError, RoundLimits, ToolRound, output_is_wrapped,
};
use crate::result::ToolResult;
use crate::server::RegistryError;
use crate::tool::{BoxFuture, ToolDefinition};

/// The tools arrays built for one version of the tools and filter, per provider.
#[derive(Default)]
pub(super) struct ToolLists {
    version: u64,
    lists: Vec<(Provider, Arc<Value>)>,
}

impl ToolLists {
    pub(super) fn get(&self, version: u64, provider: Provider) -> Option<Arc<Value>> {
        if self.version != version {
            return None;
        }
        self.lists
            .iter()
            .find(|(p, _)| *p == provider)
            .map(|(_, list)| Arc::clone(list))
    }

    pub(super) fn put(&mut self, version: u64, provider: Provider, list: Arc<Value>) {
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
    /// [`ToolList::incompatible`](super::ToolList::incompatible) and in a `tracing`
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

    /// Runs every tool call in a provider's response through the server, concurrently,
    /// and builds the messages that answer them, in call order, when awaited. At most 32
    /// calls of one response run, 8 at once; each call past the 32nd is answered with an
    /// error saying the limit ([`Agent`](crate::agent::Agent) sets both). Each call runs
    /// with the server's defaults, or with a copy of the context given to
    /// [`context`](ToolRoundRequest::context).
    ///
    /// Each call goes the whole way a [`call`](Self::call) goes: name repair, filter,
    /// validation (and argument repair if on), confirmation, middleware, time limits. A
    /// call that fails (unknown tool, arguments that are not JSON, a tool error) is a
    /// failed result the model reads and can fix; it never fails the others.
    ///
    /// The request's output is an error ([`ProviderError`]) only when the response itself
    /// cannot be read as `provider`'s.
    pub fn run_tool_calls<'s>(
        &'s self,
        provider: Provider,
        response: &'s Value,
    ) -> ToolRoundRequest<'s> {
        ToolRoundRequest {
            server: self,
            provider,
            response,
            context: None,
        }
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
        // The futures are made before they are streamed: a stream holding the closure that
        // makes them would not be `Send` for every lifetime of the calls it borrows.
        let started: Vec<_> = calls[..running]
            .iter()
            .map(|call| self.run_one(call, ctx.cloned()))
            .collect();
        let mut answered: Vec<(ToolResult, Option<String>)> = stream::iter(started)
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
                        .and_then(|name| self.offered(name))
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

/// The tool calls of one model response, made by [`AlephToolServer::run_tool_calls`];
/// `.await` it to run them.
#[must_use = "the calls do not run until the request is awaited"]
pub struct ToolRoundRequest<'s> {
    server: &'s AlephToolServer,
    provider: Provider,
    response: &'s Value,
    context: Option<ToolContext>,
}

impl ToolRoundRequest<'_> {
    /// Runs each call with a copy of `ctx` (caller, identity, cancellation, progress,
    /// state); what it leaves unset comes from the server's settings.
    pub fn context(mut self, ctx: ToolContext) -> Self {
        self.context = Some(ctx);
        self
    }
}

impl fmt::Debug for ToolRoundRequest<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolRoundRequest")
            .field("provider", &self.provider)
            .field("context", &self.context)
            .finish_non_exhaustive()
    }
}

impl<'s> IntoFuture for ToolRoundRequest<'s> {
    type Output = Result<ToolRound, ProviderError>;
    type IntoFuture = BoxFuture<'s, Self::Output>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move {
            let calls = self.provider.parse_calls(self.response)?;
            Ok(self
                .server
                .answer_calls(
                    self.provider,
                    calls,
                    self.context.as_ref(),
                    RoundLimits::default(),
                )
                .await)
        })
    }
}
