//! `AlephToolServer`: the thread-safe, hot-swappable set of tools a program serves, and its
//! cheap [`ToolServerHandle`].
//!
//! Reads never wait on a writer: the tool table is an immutable snapshot behind an
//! [`ArcSwap`]; a write copies it, changes the copy and swaps it in. A call takes the tool out
//! of the snapshot and holds no lock while the tool runs.

mod confirm;
mod execute;
mod filter;
mod hooks;
mod progress;
mod repair;

use std::collections::HashMap;
use std::fmt;
use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use arc_swap::ArcSwap;
use serde_json::Value;

pub use self::confirm::{Confirmation, ConfirmationHandler, ConfirmationRequest};
use self::filter::CompiledFilter;
pub use self::filter::{FilterError, ToolFilter};
pub use self::progress::{ToolProgressCallback, set_tool_progress_handler};
pub use self::repair::{RepairInfo, RepairStep};
use crate::context::{StateMapHandle, ToolContext};
use crate::error::RegistryError;
use crate::middleware::{Chain, DynMiddleware, HookSet, Middleware};
use crate::registry;
use crate::result::ToolResult;
use crate::schema::{self, ArgumentValidator};
use crate::tool::{AlephTool, AlephToolDyn, ToolDefinition, is_valid_tool_name};

/// One served tool with its definition and compiled input schema, built once when the tool
/// was added.
struct Entry {
    name: Arc<str>,
    tool: Arc<dyn AlephToolDyn>,
    definition: Arc<ToolDefinition>,
    validator: ArgumentValidator,
}

/// Name → tool. Lookups hash a short name per call, so a fast hasher pays off.
type Table = HashMap<Arc<str>, Arc<Entry>, foldhash::fast::RandomState>;

/// The filter in force: as given, and compiled.
#[derive(Default)]
struct ActiveFilter {
    source: ToolFilter,
    compiled: CompiledFilter,
}

/// What the builder methods set; fixed once the server is shared.
#[derive(Clone, Default)]
struct Settings {
    confirmation: Option<Arc<dyn ConfirmationHandler>>,
    progress: Option<Arc<dyn ToolProgressCallback>>,
    state: StateMapHandle,
    working_dir: Option<Arc<Path>>,
    allowed_paths: Option<Arc<[PathBuf]>>,
    default_timeout: Option<Duration>,
    default_output_limit: Option<usize>,
    repair_arguments: bool,
    middleware: Chain,
}

impl Settings {
    /// `Err` when `entry` takes state this server lacks.
    fn check_state(&self, entry: &Entry) -> Result<(), RegistryError> {
        match entry
            .tool
            .required_state()
            .into_iter()
            .find(|ty| !self.state.contains(*ty))
        {
            Some(missing) => Err(RegistryError::MissingState {
                name: entry.name.to_string(),
                type_name: missing.name(),
            }),
            None => Ok(()),
        }
    }

    /// Fills in what `ctx` lacks: state types, working directory, allowed directories.
    fn apply_defaults(&self, ctx: &mut ToolContext) {
        ctx.merge_state_from(&self.state);
        ctx.default_working_dir(self.working_dir.as_ref());
        ctx.default_allowed_paths(self.allowed_paths.as_ref());
    }
}

struct Shared {
    tools: ArcSwap<Table>,
    filter: ArcSwap<ActiveFilter>,
    hooks: ArcSwap<HookSet>,
    /// Serializes writers so none loses another's change; readers never take it.
    write: Mutex<()>,
    settings: Settings,
    next_call_id: AtomicU64,
    next_hook_id: AtomicU64,
    /// Set by `build`: from then on, tools added must find their state.
    built: AtomicBool,
    /// Counts changes to the tool table, for [`ToolServerHandle::watch_tools`].
    changes: tokio::sync::watch::Sender<u64>,
}

impl Shared {
    fn new(settings: Settings) -> Self {
        Self {
            tools: ArcSwap::default(),
            filter: ArcSwap::default(),
            hooks: ArcSwap::default(),
            write: Mutex::new(()),
            settings,
            next_call_id: AtomicU64::new(1),
            next_hook_id: AtomicU64::new(1),
            built: AtomicBool::new(false),
            changes: tokio::sync::watch::Sender::new(0),
        }
    }

    /// A copy that serves what this one serves, with the same settings, for the builder to
    /// change without touching handles already given out.
    fn copy(&self) -> Self {
        Self {
            tools: ArcSwap::new(self.tools.load_full()),
            filter: ArcSwap::new(self.filter.load_full()),
            hooks: ArcSwap::new(self.hooks.load_full()),
            write: Mutex::new(()),
            settings: self.settings.clone(),
            next_call_id: AtomicU64::new(self.next_call_id.load(Ordering::Relaxed)),
            next_hook_id: AtomicU64::new(self.next_hook_id.load(Ordering::Relaxed)),
            built: AtomicBool::new(self.built.load(Ordering::Relaxed)),
            changes: tokio::sync::watch::Sender::new(*self.changes.borrow()),
        }
    }
}

/// What [`ToolServerHandle::replace_tool`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReplaceInfo {
    /// The name of the tool now served.
    pub tool_name: String,
    /// Whether a tool of that name was served before and is now replaced.
    pub was_replaced: bool,
}

/// The set of tools a program serves.
///
/// Build it from every `#[tool]` in the program with [`from_registry`](Self::from_registry),
/// or tool by tool with [`with_tool`](Self::with_tool). Every operation lives on
/// [`ToolServerHandle`], which the server derefs to; [`handle`](Self::handle) gives a cheap
/// clone to move into tasks.
///
/// ```
/// use aleph_tools::prelude::*;
/// use serde_json::json;
///
/// /// Add two integers.
/// #[tool(register = false)]
/// fn add(a: i64, b: i64) -> i64 {
///     a + b
/// }
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let server = AlephToolServer::new().with_tool(AddTool);
/// let result = server.call("add", json!({ "a": 2, "b": 3 })).await;
/// assert!(result.success);
/// assert_eq!(result.output, json!(5));
/// # });
/// ```
pub struct AlephToolServer {
    handle: ToolServerHandle,
}

/// A cheap, cloneable reference to a server (`Send + Sync`), for tasks and threads.
#[derive(Clone)]
pub struct ToolServerHandle {
    shared: Arc<Shared>,
}

impl Default for AlephToolServer {
    fn default() -> Self {
        Self::new()
    }
}

impl AlephToolServer {
    /// A server with no tools.
    pub fn new() -> Self {
        Self {
            handle: ToolServerHandle {
                shared: Arc::new(Shared::new(Settings::default())),
            },
        }
    }

    /// A server with every `#[tool]` linked into the program (all but `register = false`).
    ///
    /// # Errors
    ///
    /// [`RegistryError::Duplicate`] when two tools share a name, naming both source
    /// locations; [`RegistryError::InvalidDefinition`] when a tool's schema is unusable.
    pub fn from_registry() -> Result<Self, RegistryError> {
        let server = Self::new();
        for registration in registry::unique_registered_tools()? {
            server.add_dyn_tool(registration.instantiate())?;
        }
        Ok(server)
    }

    /// Adds a tool, replacing any tool of the same name (use
    /// [`add_tool`](ToolServerHandle::add_tool) to be told about conflicts instead).
    ///
    /// An invalid `T::NAME` is a compile-time error.
    #[must_use]
    pub fn with_tool<T: AlephTool>(self, tool: T) -> Self {
        const {
            assert!(
                is_valid_tool_name(T::NAME),
                "tool names must be 1 to 64 characters of a-z, A-Z, 0-9, `_` and `-`"
            );
        };
        let entry = entry(Arc::new(tool));
        self.handle.write(|table| {
            table.insert(Arc::clone(&entry.name), Arc::new(entry));
        });
        self
    }

    /// Adds typed state that tools receive through `State<T>` parameters.
    #[must_use]
    pub fn with_state<T: Send + Sync + 'static>(mut self, value: T) -> Self {
        self.settings_mut().state.insert(value);
        self
    }

    /// Sets the working directory given to every call's context.
    #[must_use]
    pub fn with_working_dir(mut self, dir: impl AsRef<Path>) -> Self {
        self.settings_mut().working_dir = Some(Arc::from(dir.as_ref()));
        self
    }

    /// Restricts the paths tools resolve with
    /// [`ToolContext::resolve_path`] to these directories, for calls whose context sets none.
    #[must_use]
    pub fn with_allowed_paths(
        mut self,
        dirs: impl IntoIterator<Item = impl Into<PathBuf>>,
    ) -> Self {
        self.settings_mut().allowed_paths = Some(dirs.into_iter().map(Into::into).collect());
        self
    }

    /// Sets the time limit for tools that do not set their own.
    #[must_use]
    pub fn with_default_timeout(mut self, timeout: Duration) -> Self {
        self.settings_mut().default_timeout = Some(timeout);
        self
    }

    /// Sets the most characters of output the model reads from one call, for tools that do
    /// not set their own. Longer output is shortened with
    /// [`compress_snapshot`](crate::compress_snapshot) into [`ToolResult::text`]; the
    /// structured `output` stays whole for programs.
    #[must_use]
    pub fn with_output_limit(mut self, max_chars: usize) -> Self {
        self.settings_mut().default_output_limit = Some(max_chars);
        self
    }

    /// Sets which tools are offered and which need approval; see [`ToolFilter`].
    ///
    /// # Errors
    ///
    /// [`FilterError::Pattern`] when a pattern is not a valid glob.
    pub fn with_filter(self, filter: ToolFilter) -> Result<Self, FilterError> {
        self.handle.set_filter(filter)?;
        Ok(self)
    }

    /// Sets who approves calls to tools that need confirmation. Without a handler such calls
    /// are refused.
    #[must_use]
    pub fn with_confirmation_handler(mut self, handler: impl ConfirmationHandler) -> Self {
        self.settings_mut().confirmation = Some(Arc::new(handler));
        self
    }

    /// Sets the handler that hears about this server's calls as they run (start, streamed
    /// chunks, progress, result). The process-wide handler, if set, hears them too.
    #[must_use]
    pub fn with_progress_handler(mut self, handler: impl ToolProgressCallback) -> Self {
        self.settings_mut().progress = Some(Arc::new(handler));
        self
    }

    /// Repairs arguments a model got nearly right before they are checked: numbers and
    /// booleans sent as strings, objects and arrays sent as JSON text, keys in another case
    /// (`maxResults` for `max_results`). Off by default. Each change is listed in
    /// [`ToolResult::coercions`].
    #[must_use]
    pub fn with_argument_repair(mut self, enabled: bool) -> Self {
        self.settings_mut().repair_arguments = enabled;
        self
    }

    /// Wraps every call in `layer`. Layers run in the order they are added: the first added
    /// sees each call first and its outcome last. See [`middleware`](crate::middleware) for
    /// where the chain sits in a call.
    #[must_use]
    pub fn with_middleware(mut self, layer: impl Middleware) -> Self {
        let settings = self.settings_mut();
        let layer: Arc<dyn DynMiddleware> = Arc::new(layer);
        settings.middleware = settings
            .middleware
            .iter()
            .cloned()
            .chain(std::iter::once(layer))
            .collect();
        self
    }

    /// Finishes building: checks that every tool taking `State<T>` finds a `T` given with
    /// [`with_state`](Self::with_state), so a missing one is reported now rather than at the
    /// tool's first call. From then on, [`add_tool`](ToolServerHandle::add_tool) and
    /// [`replace_tool`](ToolServerHandle::replace_tool) check new tools the same way.
    ///
    /// A server works without it; calls to a tool whose state is missing then fail with
    /// [`ToolError::MissingState`](crate::ToolError::MissingState).
    ///
    /// # Errors
    ///
    /// [`RegistryError::MissingState`] naming the first tool and type found missing;
    /// [`RegistryError::InvalidDefinition`] for a tool marked `strict` whose schema OpenAI's
    /// strict mode cannot take (a map inside one of its argument types, say).
    pub fn build(self) -> Result<Self, RegistryError> {
        let table = self.shared.tools.load();
        let mut entries: Vec<&Arc<Entry>> = table.values().collect();
        entries.sort_unstable_by(|a, b| a.name.cmp(&b.name));
        for entry in entries {
            check_strict(&entry.definition)?;
            self.shared.settings.check_state(entry)?;
        }
        self.shared.built.store(true, Ordering::Relaxed);
        Ok(self)
    }

    /// A cheap clone to move into tasks and threads.
    pub fn handle(&self) -> ToolServerHandle {
        self.handle.clone()
    }

    fn settings_mut(&mut self) -> &mut Settings {
        // Builder methods run before any handle is given out; if one was, rebuild around a
        // copy so existing handles keep their view and nothing panics.
        if Arc::get_mut(&mut self.handle.shared).is_none() {
            let old = &self.handle.shared;
            self.handle.shared = Arc::new(old.copy());
        }
        &mut Arc::get_mut(&mut self.handle.shared)
            .expect("a freshly built Arc has one owner")
            .settings
    }
}

impl Deref for AlephToolServer {
    type Target = ToolServerHandle;

    fn deref(&self) -> &ToolServerHandle {
        &self.handle
    }
}

impl fmt::Debug for AlephToolServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.handle, f)
    }
}

impl fmt::Debug for ToolServerHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let table = self.shared.tools.load();
        let mut names: Vec<&str> = table.keys().map(|k| &**k).collect();
        names.sort_unstable();
        f.debug_struct("ToolServer")
            .field("tools", &names)
            .finish_non_exhaustive()
    }
}

/// What a change to the tool table returns: whether it changed anything.
trait TableChange {
    fn changed(&self) -> bool;
}

impl TableChange for () {
    fn changed(&self) -> bool {
        true
    }
}

/// `remove`: whether a tool was there.
impl TableChange for bool {
    fn changed(&self) -> bool {
        *self
    }
}

/// A change that may be refused, leaving the table as it was.
impl<T> TableChange for Result<T, RegistryError> {
    fn changed(&self) -> bool {
        self.is_ok()
    }
}

/// The entry of a typed tool, whose schemars schema always compiles.
fn entry(tool: Arc<dyn AlephToolDyn>) -> Entry {
    let definition = Arc::new(tool.definition());
    let validator = ArgumentValidator::new(&definition.parameters)
        .unwrap_or_else(|_| ArgumentValidator::open());
    Entry {
        name: Arc::from(definition.name.as_str()),
        tool,
        definition,
        validator,
    }
}

/// A tool marked `strict` must have a schema OpenAI's strict mode takes.
fn check_strict(definition: &ToolDefinition) -> Result<(), RegistryError> {
    if !definition.strict {
        return Ok(());
    }
    let strict = schema::Dialect::OpenAi { strict: true };
    strict
        .apply(&definition.parameters)
        .map(drop)
        .map_err(|err| RegistryError::InvalidDefinition {
            name: definition.name.clone(),
            reason: format!("the tool is marked `strict`, but its schema cannot be: {err}"),
        })
}

fn checked_entry(tool: Arc<dyn AlephToolDyn>) -> Result<Entry, RegistryError> {
    let definition = Arc::new(tool.definition());
    let name = &definition.name;
    let invalid = |reason: String| RegistryError::InvalidDefinition {
        name: name.clone(),
        reason,
    };
    if !is_valid_tool_name(name) {
        return Err(invalid(
            "names must be 1 to 64 characters of a-z, A-Z, 0-9, `_` and `-`".to_owned(),
        ));
    }
    if tool.name() != name {
        return Err(invalid(format!(
            "`name()` says `{}` but `definition().name` says `{name}`; they must agree",
            tool.name()
        )));
    }
    if !schema::is_object_schema(&definition.parameters) {
        return Err(invalid(
            "the input schema's root must be `\"type\": \"object\"` (arguments are named); take a struct as arguments"
                .to_owned(),
        ));
    }
    check_strict(&definition)?;
    let validator = ArgumentValidator::new(&definition.parameters).map_err(invalid)?;
    Ok(Entry {
        name: Arc::from(name.as_str()),
        tool,
        definition,
        validator,
    })
}

impl ToolServerHandle {
    /// `tool`'s entry when it can be served here; its state is checked once the server is
    /// built.
    fn checked_entry(&self, tool: Arc<dyn AlephToolDyn>) -> Result<Entry, RegistryError> {
        let entry = checked_entry(tool)?;
        if self.shared.built.load(Ordering::Relaxed) {
            self.shared.settings.check_state(&entry)?;
        }
        Ok(entry)
    }

    /// Runs `change` on a copy of the table and swaps the copy in when `change` reports that
    /// it changed something.
    fn write<R: TableChange>(&self, change: impl FnOnce(&mut Table) -> R) -> R {
        let _writer = self
            .shared
            .write
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let mut table = Table::clone(&self.shared.tools.load());
        let out = change(&mut table);
        if out.changed() {
            self.shared.tools.store(Arc::new(table));
            self.shared.changes.send_modify(|count| *count += 1);
        }
        out
    }

    /// A receiver that wakes each time the set of tools changes (a tool added, replaced or
    /// removed; plugins loaded, reloaded or unloaded). Its value counts the changes. This is
    /// what an MCP server needs to send `notifications/tools/list_changed`.
    ///
    /// ```
    /// # use aleph_tools::AlephToolServer;
    /// let server = AlephToolServer::new();
    /// let mut changes = server.watch_tools();
    /// server.remove_tool("nothing");
    /// assert!(!changes.has_changed().unwrap());
    /// ```
    pub fn watch_tools(&self) -> tokio::sync::watch::Receiver<u64> {
        self.shared.changes.subscribe()
    }

    /// Removes the tools named in `remove` and adds `add`, as one change: calls see either
    /// the old set or the new one. Nothing changes when one of `add` cannot be served or its
    /// name is taken by a tool not in `remove`.
    #[cfg(any(feature = "plugins", feature = "mcp"))]
    pub(crate) fn swap_tools(
        &self,
        remove: &[String],
        add: Vec<Arc<dyn AlephToolDyn>>,
    ) -> Result<(), RegistryError> {
        let entries = add
            .into_iter()
            .map(|tool| self.checked_entry(tool))
            .collect::<Result<Vec<_>, _>>()?;
        self.write(|table| {
            if let Some(taken) = entries.iter().find(|entry| {
                table.contains_key(&entry.name) && !remove.iter().any(|r| **r == *entry.name)
            }) {
                return Err(RegistryError::AlreadyServed {
                    name: taken.name.to_string(),
                });
            }
            for name in remove {
                table.remove(name.as_str());
            }
            for entry in entries {
                table.insert(Arc::clone(&entry.name), Arc::new(entry));
            }
            Ok(())
        })
    }

    /// Adds a tool.
    ///
    /// # Errors
    ///
    /// [`RegistryError::AlreadyServed`] when the name is taken;
    /// [`RegistryError::InvalidDefinition`] when the name or schema is unusable.
    pub fn add_tool(&self, tool: impl AlephToolDyn) -> Result<(), RegistryError> {
        self.add_dyn_tool(Arc::new(tool))
    }

    /// Adds a tool that is already shared, such as one built at run time.
    ///
    /// # Errors
    ///
    /// As [`add_tool`](Self::add_tool).
    pub fn add_dyn_tool(&self, tool: Arc<dyn AlephToolDyn>) -> Result<(), RegistryError> {
        let entry = self.checked_entry(tool)?;
        self.write(|table| {
            if table.contains_key(&entry.name) {
                return Err(RegistryError::AlreadyServed {
                    name: entry.name.to_string(),
                });
            }
            table.insert(Arc::clone(&entry.name), Arc::new(entry));
            Ok(())
        })
    }

    /// Serves `tool`, replacing the tool of the same name if there is one. Calls already
    /// running finish on the tool they started on.
    ///
    /// # Errors
    ///
    /// [`RegistryError::InvalidDefinition`] when the name or schema is unusable; nothing is
    /// replaced then.
    pub fn replace_tool(&self, tool: impl AlephToolDyn) -> Result<ReplaceInfo, RegistryError> {
        self.replace_dyn_tool(Arc::new(tool))
    }

    /// [`replace_tool`](Self::replace_tool) for a tool that is already shared.
    ///
    /// # Errors
    ///
    /// As [`replace_tool`](Self::replace_tool).
    pub fn replace_dyn_tool(
        &self,
        tool: Arc<dyn AlephToolDyn>,
    ) -> Result<ReplaceInfo, RegistryError> {
        let entry = self.checked_entry(tool)?;
        let tool_name = entry.name.to_string();
        let was_replaced = self.write(|table| {
            Ok::<_, RegistryError>(
                table
                    .insert(Arc::clone(&entry.name), Arc::new(entry))
                    .is_some(),
            )
        })?;
        Ok(ReplaceInfo {
            tool_name,
            was_replaced,
        })
    }

    /// Stops serving the tool called `name`; returns whether there was one. Calls already
    /// running finish.
    pub fn remove_tool(&self, name: &str) -> bool {
        if !self.shared.tools.load().contains_key(name) {
            return false;
        }
        self.write(|table| table.remove(name).is_some())
    }

    /// Replaces the filter; calls that start afterwards see the new one.
    ///
    /// # Errors
    ///
    /// [`FilterError::Pattern`] when a pattern is not a valid glob; the old filter stays.
    pub fn set_filter(&self, filter: ToolFilter) -> Result<(), FilterError> {
        let compiled = filter.compile()?;
        self.shared.filter.store(Arc::new(ActiveFilter {
            source: filter,
            compiled,
        }));
        Ok(())
    }

    /// The filter in force.
    pub fn filter(&self) -> ToolFilter {
        self.shared.filter.load().source.clone()
    }

    /// The definitions of the tools the filter offers, sorted by name. A tool the filter
    /// requires confirmation for is listed with `requires_confirmation` set.
    pub fn list_tools(&self) -> Vec<Arc<ToolDefinition>> {
        let table = self.shared.tools.load();
        let filter = self.shared.filter.load();
        let mut all: Vec<_> = table
            .values()
            .filter_map(|e| offered_definition(e, &filter.compiled))
            .collect();
        all.sort_unstable_by(|a, b| a.name.cmp(&b.name));
        all
    }

    /// The names of the tools the filter offers, sorted.
    pub fn tool_names(&self) -> Vec<String> {
        let table = self.shared.tools.load();
        let filter = self.shared.filter.load();
        let mut names: Vec<String> = table
            .keys()
            .filter(|name| filter.compiled.offers(name))
            .map(ToString::to_string)
            .collect();
        names.sort_unstable();
        names
    }

    /// The definition of the tool called `name`, if the filter offers it.
    pub fn get_definition(&self, name: &str) -> Option<Arc<ToolDefinition>> {
        let table = self.shared.tools.load();
        offered_definition(table.get(name)?, &self.shared.filter.load().compiled)
    }

    /// Whether a tool called `name` is served (whether or not the filter offers it).
    pub fn contains(&self, name: &str) -> bool {
        self.shared.tools.load().contains_key(name)
    }

    /// The number of served tools (whether or not the filter offers them).
    pub fn len(&self) -> usize {
        self.shared.tools.load().len()
    }

    /// Whether no tool is served.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A context carrying this server's state and working directory, to adjust and pass to
    /// [`call_with_context`](Self::call_with_context).
    pub fn context(&self) -> ToolContext {
        let mut ctx = ToolContext::new();
        self.shared.settings.apply_defaults(&mut ctx);
        ctx
    }

    /// Calls the tool `name` with JSON arguments.
    ///
    /// Never fails and never panics: an unknown name, bad arguments, a tool error, a panic in
    /// the tool or a timeout all come back as a [`ToolResult`] with `success: false` and a
    /// message for the model.
    pub async fn call(&self, name: &str, args: Value) -> ToolResult {
        self.run(name, args, None).await.0
    }

    /// [`call`](Self::call), also saying whether the name was repaired: a model that wrote
    /// `WebSearch` or `web-search` for `web_search` gets `web_search`, and the record says so.
    /// See [`RepairStep`] for what is repaired.
    pub async fn call_with_repair(
        &self,
        name: &str,
        args: Value,
    ) -> (ToolResult, Option<RepairInfo>) {
        self.run(name, args, None).await
    }

    /// [`call`](Self::call) with a context of the caller's making (caller, cancellation,
    /// progress, extra state). The server's state fills in types the context lacks.
    pub async fn call_with_context(&self, name: &str, args: Value, ctx: ToolContext) -> ToolResult {
        self.run(name, args, Some(ctx)).await.0
    }

    /// [`call_with_context`](Self::call_with_context), also saying whether the name was
    /// repaired.
    pub async fn call_with_context_and_repair(
        &self,
        name: &str,
        args: Value,
        ctx: ToolContext,
    ) -> (ToolResult, Option<RepairInfo>) {
        self.run(name, args, Some(ctx)).await
    }
}

/// The definition as the filter presents it, or `None` when the filter hides the tool.
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
