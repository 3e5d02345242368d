//! [`ToolServerBuilder`]: settings, state, middleware, handlers and tools, checked together by
//! [`build`](ToolServerBuilder::build) into an [`AlephToolServer`].

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use super::table::{Table, checked_entry};
use super::{
    ActiveFilter, AlephToolServer, ConfirmationHandler, Deferral, DerivedTool, IncompatibleTools,
    Settings, Snapshot, ToolFilter,
};
use crate::context::{ElicitationHandler, SamplingHandler};
use crate::middleware::{DynMiddleware, LayerId, Middleware, Stack};
use crate::provider::Provider;
use crate::registry::{self, ToolRegistration};
use crate::server::RegistryError;
use crate::tool::{AlephTool, AlephToolDyn};
use crate::util::names::is_valid_tool_name;
use crate::util::patterns::Patterns;

/// Builds an [`AlephToolServer`]; every setting a server keeps for its life is made here.
///
/// Nothing is checked until [`build`](Self::build), which checks everything at once: tool
/// names and schemas, names given twice, the state each tool takes, the filter's patterns.
///
/// ```
/// use aleph_tools::prelude::*;
/// use std::time::Duration;
///
/// /// Count the words in a text.
/// #[tool(register = false)]
/// fn word_count(text: String) -> usize {
///     text.split_whitespace().count()
/// }
///
/// let server = AlephToolServer::builder()
///     .with_tool(WordCountTool)
///     .with_default_timeout(Duration::from_secs(30))
///     .with_filter(ToolFilter::new().block("file_*"))
///     .build()?;
/// assert!(server.contains("word_count"));
/// # Ok::<(), aleph_tools::RegistryError>(())
/// ```
#[must_use = "a builder does nothing until `build` is called"]
pub struct ToolServerBuilder {
    settings: Settings,
    tools: Vec<Arc<dyn AlephToolDyn>>,
    /// The layers given, outermost first.
    layers: Vec<Arc<dyn DynMiddleware>>,
    registry: bool,
    filter: ToolFilter,
    /// Settings found unusable before `build`, reported by it.
    problems: Vec<RegistryError>,
    /// Run on the built server, in order; the first error is `build`'s.
    after_build: Vec<AfterBuild>,
    /// Patterns of the tools opened to code, compiled by `build`.
    open_to_code: Vec<String>,
    /// With a tool search: the patterns of the tools it defers, and its own tools.
    deferred: Option<(Vec<String>, Vec<String>)>,
}

/// Work for the built server (starting a watcher that adds tools to it).
type AfterBuild = Box<dyn FnOnce(&AlephToolServer) -> Result<(), RegistryError> + Send>;

impl Default for ToolServerBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for ToolServerBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self
            .tools
            .iter()
            .map(|t| AlephToolDyn::name(&**t))
            .collect();
        f.debug_struct("ToolServerBuilder")
            .field("tools", &names)
            .field("registry", &self.registry)
            .field("filter", &self.filter)
            .finish_non_exhaustive()
    }
}

impl ToolServerBuilder {
    /// A builder with no tools and default settings: no time limit, no output limit, no
    /// argument repair, no filter, no middleware.
    pub fn new() -> Self {
        Self {
            settings: Settings::default(),
            tools: Vec::new(),
            layers: Vec::new(),
            registry: false,
            filter: ToolFilter::default(),
            problems: Vec::new(),
            after_build: Vec::new(),
            open_to_code: Vec::new(),
            deferred: None,
        }
    }

    /// Serves every `#[tool]` linked into the program (all but `register = false`),
    /// including those of dependencies.
    ///
    /// The linker keeps a crate's registrations only when the program uses something of that
    /// crate: a dependency that only defines tools and is named nowhere may be left out. Name
    /// one of its items, or write `extern crate dep;`, to keep it.
    pub fn with_registry(mut self) -> Self {
        self.registry = true;
        self
    }

    /// Serves a `#[tool]` (its `…Tool` type) or any typed tool. A name not every provider
    /// accepts is a compile-time error; a name given twice is reported by `build`.
    pub fn with_tool<T: AlephTool>(mut self, tool: T) -> Self {
        const {
            assert!(
                is_valid_tool_name(T::NAME),
                "tool names must be 1 to 64 characters of a-z, A-Z, 0-9, `_` and `-`"
            );
        };
        self.tools.push(Arc::new(tool));
        self
    }

    /// Serves a tool known only at run time: a hand-written [`AlephToolDyn`], or an
    /// `Arc<dyn AlephToolDyn>`.
    pub fn with_dyn_tool(mut self, tool: impl AlephToolDyn) -> Self {
        self.tools.push(Arc::new(tool));
        self
    }

    /// Adds typed state that tools receive through `State<T>` parameters.
    pub fn with_state<T: Send + Sync + 'static>(mut self, value: T) -> Self {
        self.settings.state.insert(value);
        self
    }

    /// Sets the working directory given to every call's context.
    pub fn with_working_dir(mut self, dir: impl AsRef<Path>) -> Self {
        self.settings.working_dir = Some(Arc::from(dir.as_ref()));
        self
    }

    /// Restricts the paths tools resolve with
    /// [`ToolContext::resolve_path`](crate::ToolContext::resolve_path) to these directories,
    /// for calls whose context sets none.
    pub fn with_allowed_paths(
        mut self,
        dirs: impl IntoIterator<Item = impl Into<PathBuf>>,
    ) -> Self {
        self.settings.allowed_paths = Some(dirs.into_iter().map(Into::into).collect());
        self
    }

    /// Sets the time limit for tools that do not set their own.
    pub fn with_default_timeout(mut self, timeout: Duration) -> Self {
        self.settings.default_timeout = Some(timeout);
        self
    }

    /// Sets the most characters of output the model reads from one call, for tools that do
    /// not set their own. Longer output is shortened with
    /// [`compress_snapshot`](crate::compress_snapshot) into one text block of
    /// [`ToolResult::content`](crate::ToolResult::content); the structured `output` and any
    /// image or other block stay whole.
    pub fn with_output_limit(mut self, max_chars: usize) -> Self {
        self.settings.default_output_limit = Some(max_chars);
        self
    }

    /// Sets which tools are offered and which need approval; see [`ToolFilter`]. The
    /// server's [`set_filter`](AlephToolServer::set_filter) changes it later.
    pub fn with_filter(mut self, filter: ToolFilter) -> Self {
        self.filter = filter;
        self
    }

    /// Sets who approves calls to tools that need confirmation. Without a handler such calls
    /// are refused.
    pub fn with_confirmation_handler(mut self, handler: impl ConfirmationHandler) -> Self {
        self.settings.confirmation = Some(Arc::new(handler));
        self
    }

    /// Sets who answers the questions tools ask the user
    /// ([`ToolContext::elicit`](crate::ToolContext::elicit)) in calls made in process. Calls
    /// served over MCP ask the client instead; without either, asking fails and the tool
    /// sees the error.
    pub fn with_elicitation_handler(mut self, handler: impl ElicitationHandler) -> Self {
        self.settings.elicitation = Some(Arc::new(handler));
        self
    }

    /// Sets who answers the completions tools ask for
    /// ([`ToolContext::sample`](crate::ToolContext::sample)) in calls made in process. Calls
    /// served over MCP ask the client's model instead.
    pub fn with_sampling_handler(mut self, handler: impl SamplingHandler) -> Self {
        self.settings.sampling = Some(Arc::new(handler));
        self
    }

    /// Repairs arguments a model got nearly right before they are checked: numbers and
    /// booleans sent as strings, objects and arrays sent as JSON text, keys in another case
    /// (`maxResults` for `max_results`). Off by default. Each change is listed in
    /// [`ToolResult::coercions`](crate::ToolResult::coercions).
    pub fn with_argument_repair(mut self, enabled: bool) -> Self {
        self.settings.repair_arguments = enabled;
        self
    }

    /// The model providers this server's tools are offered to. Each tool is checked against
    /// each of them when it joins the server (here, and when added later); what a provider
    /// cannot take is handled as [`on_incompatible`](Self::on_incompatible) says. Without
    /// providers nothing is checked ahead, and
    /// [`ToolList::for_provider`](crate::ToolList::for_provider) still leaves out what a
    /// provider cannot take.
    pub fn with_providers(mut self, providers: impl IntoIterator<Item = Provider>) -> Self {
        self.settings.quarantine.providers = providers.into_iter().collect();
        self
    }

    /// What to do with a tool one of the [providers](Self::with_providers) cannot take:
    /// serve it and report it ([`IncompatibleTools::Skip`], the default), or refuse it
    /// ([`IncompatibleTools::Error`]).
    pub fn on_incompatible(mut self, policy: IncompatibleTools) -> Self {
        self.settings.quarantine.policy = policy;
        self
    }

    /// Wraps every call in `layer`. The builder's layers run in the order they are added,
    /// before any added to the running server: the first added sees each call first and its
    /// outcome last. See [`middleware`](crate::middleware) for where the stack sits in a
    /// call.
    pub fn with_middleware(mut self, layer: impl Middleware) -> Self {
        self.layers.push(Arc::new(layer));
        self
    }

    /// Records a setting that cannot be used; [`build`](Self::build) reports it.
    #[cfg_attr(not(feature = "builtin"), allow(dead_code))]
    pub(crate) fn with_problem(mut self, problem: RegistryError) -> Self {
        self.problems.push(problem);
        self
    }

    /// Lets code call the tools matching `patterns` (names or globs) though their
    /// definitions do not say so: their definitions gain [`Caller::CodeExecution`].
    ///
    /// [`Caller::CodeExecution`]: crate::Caller::CodeExecution
    #[cfg_attr(not(feature = "builtin"), allow(dead_code))]
    pub(crate) fn open_to_code(mut self, patterns: impl IntoIterator<Item = String>) -> Self {
        self.open_to_code.extend(patterns);
        self
    }

    /// Turns on deferred loading for a tool search whose own tools are `always_loaded`:
    /// tools marked [`defer_loading`](crate::tool::ToolDefinition::defer_loading), and those
    /// matching `patterns` (names or globs), stay out of the tools array until found.
    #[cfg_attr(not(feature = "builtin"), allow(dead_code))]
    pub(crate) fn defer_loading(
        mut self,
        patterns: impl IntoIterator<Item = String>,
        always_loaded: impl IntoIterator<Item = String>,
    ) -> Self {
        let (deferred, loaded) = self.deferred.get_or_insert_default();
        deferred.extend(patterns);
        loaded.extend(always_loaded);
        self
    }

    /// Serves `tool` as a tool remade from the others whenever they or the filter change.
    #[cfg_attr(not(feature = "builtin"), allow(dead_code))]
    pub(crate) fn with_derived_tool(mut self, tool: DerivedTool) -> Self {
        self.settings.derived.push(tool);
        self
    }

    /// Runs `work` on the server once it is built; an error fails [`build`](Self::build).
    #[cfg_attr(not(feature = "builtin"), allow(dead_code))]
    pub(crate) fn after_build(
        mut self,
        work: impl FnOnce(&AlephToolServer) -> Result<(), RegistryError> + Send + 'static,
    ) -> Self {
        self.after_build.push(Box::new(work));
        self
    }

    /// Checks everything and returns the server.
    ///
    /// # Errors
    ///
    /// The first problem found:
    /// [`RegistryError::InvalidSetting`] for a setting of a built-in tool that cannot be used;
    /// [`RegistryError::Duplicate`] when two registered `#[tool]`s share a name (naming both
    /// source locations); [`RegistryError::DuplicateTool`] when a name is given twice;
    /// [`RegistryError::InvalidDefinition`] for a name or schema no provider accepts, or a
    /// `strict` tool whose schema cannot be strict; [`RegistryError::MissingState`] when a
    /// tool takes `State<T>` and no `T` was given with [`with_state`](Self::with_state);
    /// [`RegistryError::Incompatible`] for a tool a [provider](Self::with_providers) cannot
    /// take, when the policy is [`IncompatibleTools::Error`]; [`RegistryError::Filter`] for a
    /// filter pattern that is not a valid glob.
    pub fn build(self) -> Result<AlephToolServer, RegistryError> {
        let Self {
            mut settings,
            mut tools,
            layers,
            registry,
            filter,
            problems,
            after_build,
            open_to_code,
            deferred,
        } = self;
        if let Some(problem) = problems.into_iter().next() {
            return Err(problem);
        }
        settings.open_to_code = Patterns::new("open to code", &open_to_code)?;
        if registry {
            let registered = unique_registered_tools()?;
            tools.splice(
                0..0,
                registered.into_iter().map(ToolRegistration::instantiate),
            );
        }
        let mut entries = tools
            .into_iter()
            .map(checked_entry)
            .collect::<Result<Vec<_>, _>>()?;
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        if let Some(pair) = entries.windows(2).find(|pair| pair[0].name == pair[1].name) {
            return Err(RegistryError::DuplicateTool {
                name: pair[0].name.to_string(),
            });
        }
        if let Some((patterns, always_loaded)) = deferred {
            settings.deferral = Some(Deferral {
                patterns: Patterns::new("deferred", &patterns)?,
                always_loaded,
            });
        }
        for entry in &mut entries {
            settings.adopt(entry)?;
        }
        let compiled = filter.compile()?;
        let mut table: Table = entries
            .into_iter()
            .map(|entry| (Arc::clone(&entry.name), Arc::new(entry)))
            .collect();
        settings.refresh_derived(&mut table, &compiled)?;
        let filter = ActiveFilter {
            source: filter,
            compiled,
        };
        let mut stack = Stack::default();
        let mut next_layer_id = 1;
        for layer in layers {
            stack.push_built(LayerId(next_layer_id), layer);
            next_layer_id += 1;
        }
        let snapshot = Snapshot {
            tools: table,
            stack,
        };
        let server = AlephToolServer::from_parts(settings, snapshot, filter, next_layer_id);
        for work in after_build {
            work(&server)?;
        }
        server.shared.settle();
        Ok(server)
    }
}

/// The registered tools, or the first pair that shares a name.
fn unique_registered_tools() -> Result<Vec<&'static ToolRegistration>, RegistryError> {
    let all = registry::registered_tools();
    if let Some(pair) = all.windows(2).find(|pair| pair[0].name() == pair[1].name()) {
        return Err(RegistryError::Duplicate {
            name: pair[0].name().to_owned(),
            first: pair[0].location().to_string(),
            second: pair[1].location().to_string(),
        });
    }
    Ok(all)
}
