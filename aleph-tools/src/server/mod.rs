//! [`AlephToolServer`]: the thread-safe, hot-swappable set of tools a program serves, built by
//! [`ToolServerBuilder`] and called through [`ToolCallRequest`].
//!
//! Reads never wait on a writer: the tool table is an immutable snapshot behind an
//! [`ArcSwap`]; a write copies it, changes the copy and swaps it in. A call takes the tool out
//! of the snapshot and holds no lock while the tool runs. Until the first write after the
//! build, an `inline` tool that holds nothing is found without loading it (`as_built`).
//!
//! What a server offers is read through one value, [`ToolList`] (`listing`); running a
//! model's tool calls and the quarantine of tools a provider cannot take are in
//! `providers`; the formats themselves in [`provider`](crate::provider).

mod as_built;
mod builder;
mod call;
mod confirm;
mod deferral;
mod derived;
mod error;
mod execute;
mod filter;
mod gated;
mod in_place;
mod layers;
mod listing;
mod prepared;
mod providers;
mod repair;
mod table;

use std::any::Any;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use arc_swap::ArcSwap;
use serde_json::Value;

use self::as_built::AsBuilt;
pub use self::builder::ToolServerBuilder;
pub(crate) use self::call::CallArgs;
pub use self::call::{ToolCallFuture, ToolCallRequest};
pub use self::confirm::{Confirmation, ConfirmationHandler, ConfirmationRequest};
pub(crate) use self::deferral::Deferral;
#[cfg_attr(not(feature = "builtin"), allow(unused_imports))]
pub(crate) use self::derived::{Derive, DerivedTool};
pub use self::error::RegistryError;
use self::filter::CompiledFilter;
pub use self::filter::{FilterError, ToolFilter};
use self::gated::Gated;
pub use self::listing::ToolList;
use self::prepared::Prepared;
pub use self::providers::{IncompatibleTools, ToolRoundRequest};
use self::providers::{Quarantine, ToolLists};
pub use self::table::ReplaceInfo;
use self::table::{Entry, Table};
use crate::context::{CallHost, ElicitationHandler, SamplingHandler, StateMapHandle, ToolContext};
use crate::middleware::Stack;
use crate::tool::RunInline;
use crate::util::patterns::{PatternError, Patterns};
use crate::util::sync::lock;

/// What the builder set; fixed for the server's life.
#[derive(Default)]
struct Settings {
    confirmation: Option<Arc<dyn ConfirmationHandler>>,
    elicitation: Option<Arc<dyn ElicitationHandler>>,
    sampling: Option<Arc<dyn SamplingHandler>>,
    state: StateMapHandle,
    working_dir: Option<Arc<Path>>,
    allowed_paths: Option<Arc<[PathBuf]>>,
    default_timeout: Option<Duration>,
    default_output_limit: Option<usize>,
    repair_arguments: bool,
    quarantine: Quarantine,
    /// Tools remade from the others whenever they or the filter change.
    derived: Vec<DerivedTool>,
    /// Tools code may call though their definitions do not say so.
    open_to_code: Patterns,
    /// Which tools wait for a search; `None` without a tool search.
    deferral: Option<Deferral>,
}

impl Settings {
    /// How long a call of `entry` may run, if it has a limit: its own, else the server's.
    fn time_limit(&self, entry: &Entry) -> Option<Duration> {
        entry.definition.timeout.or(self.default_timeout)
    }

    /// How a call of `entry` runs in place with the caller's context as it came: for an
    /// inline tool that never reads its context and has no time limit.
    fn in_place(&self, entry: &Entry) -> Option<RunInline> {
        entry
            .fast?
            .without_context()
            .filter(|_| self.time_limit(entry).is_none())
    }

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

/// The filter in force: as given, and compiled.
#[derive(Default)]
struct ActiveFilter {
    source: ToolFilter,
    compiled: CompiledFilter,
}

/// What a call reads, swapped whole on every change: the tools, and the layers their calls
/// run through. A call loads it once and runs to its end with what it loaded.
#[derive(Clone, Default)]
struct Snapshot {
    tools: Table,
    stack: Stack,
}

struct Shared {
    snapshot: ArcSwap<Snapshot>,
    /// The tools a call finds without loading the snapshot while it is as built.
    as_built: AsBuilt,
    filter: Gated<ActiveFilter>,
    /// Serializes writers so none loses another's change; readers never take it.
    write: Mutex<()>,
    settings: Settings,
    next_call_id: AtomicU64,
    /// Numbers the layers: their order among equals, and the ids that remove them.
    next_layer_id: AtomicU64,
    /// Times calls: a read of the CPU's time-stamp counter where the OS's clock agrees with
    /// it (a fraction of the cost of asking the OS), scaled only when a call ends.
    clock: quanta::Clock,
    /// Counts changes to the tool set, for [`AlephToolServer::watch_tools`].
    changes: tokio::sync::watch::Sender<u64>,
    /// The tools arrays built since the tools or the filter last changed.
    tool_lists: Mutex<ToolLists>,
    /// What lives as long as the server and goes with it (the skills' file watcher).
    #[cfg_attr(not(feature = "builtin"), allow(dead_code))]
    attached: Mutex<Vec<Box<dyn Send>>>,
}

impl Shared {
    /// Swaps `snapshot` in: calls that start afterwards see it. Every writer changes the
    /// snapshot through here, holding the write lock.
    fn publish(&self, snapshot: Snapshot) {
        self.as_built.outdated();
        self.snapshot.store(Arc::new(snapshot));
    }

    /// Keeps the tools a call may find without the snapshot, as the build leaves them.
    fn settle(&self) {
        let _writer = lock(&self.write);
        self.as_built.settle(&self.snapshot.load(), &self.settings);
    }
}

/// The set of tools a program serves.
///
/// Make one from every `#[tool]` in the program with
/// [`from_registry`](Self::from_registry), or with settings, state and chosen tools through
/// [`builder`](Self::builder). The server is a cheap handle (`Clone`, `Send + Sync`): clone
/// it into tasks and threads; every clone serves the same tools.
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
/// let server = AlephToolServer::builder().with_tool(AddTool).build()?;
/// let result = server.call("add", json!({ "a": 2, "b": 3 })).await;
/// assert!(result.success);
/// assert_eq!(result.output, json!(5));
/// # Ok::<(), aleph_tools::RegistryError>(())
/// # }).unwrap();
/// ```
#[derive(Clone)]
pub struct AlephToolServer {
    shared: Arc<Shared>,
}

impl ToolContext {
    /// The server running this call, through which a tool can look up or call the server's
    /// other tools; `None` for a context no server has taken a call with.
    pub fn server(&self) -> Option<AlephToolServer> {
        let shared = Arc::clone(self.server.as_ref()?)
            .into_any()
            .downcast::<Shared>()
            .ok()?;
        Some(AlephToolServer { shared })
    }
}

impl CallHost for Shared {
    fn elicitation_handler(&self) -> Option<Arc<dyn ElicitationHandler>> {
        self.settings.elicitation.clone()
    }

    fn sampling_handler(&self) -> Option<Arc<dyn SamplingHandler>> {
        self.settings.sampling.clone()
    }

    fn into_any(self: Arc<Self>) -> Arc<dyn Any + Send + Sync> {
        self
    }
}

impl Default for AlephToolServer {
    fn default() -> Self {
        Self::new()
    }
}

impl AlephToolServer {
    /// A server with no tools and default settings; add tools with [`add`](Self::add).
    pub fn new() -> Self {
        Self::from_parts(
            Settings::default(),
            Snapshot::default(),
            ActiveFilter::default(),
            1,
        )
    }

    /// A builder for a server with settings, state, middleware and tools of your choosing.
    pub fn builder() -> ToolServerBuilder {
        ToolServerBuilder::new()
    }

    /// A server with every `#[tool]` linked into the program (all but `register = false`),
    /// including those of dependencies. Shorthand for
    /// `AlephToolServer::builder().with_registry().build()`.
    ///
    /// # Errors
    ///
    /// As [`ToolServerBuilder::build`]: two tools sharing a name, an unusable schema, a
    /// `State<T>` parameter (no state can be given this way; use the builder).
    pub fn from_registry() -> Result<Self, RegistryError> {
        Self::builder().with_registry().build()
    }

    fn from_parts(
        settings: Settings,
        snapshot: Snapshot,
        filter: ActiveFilter,
        next_layer_id: u64,
    ) -> Self {
        Self {
            shared: Arc::new(Shared {
                as_built: AsBuilt::default(),
                snapshot: ArcSwap::from_pointee(snapshot),
                filter: {
                    let active = !filter.compiled.is_open();
                    Gated::new(filter, active)
                },
                write: Mutex::new(()),
                settings,
                next_call_id: AtomicU64::new(1),
                next_layer_id: AtomicU64::new(next_layer_id),
                // Calibrates once per process, here rather than in the first call.
                clock: quanta::Clock::new(),
                changes: tokio::sync::watch::Sender::new(0),
                tool_lists: Mutex::default(),
                attached: Mutex::new(Vec::new()),
            }),
        }
    }

    /// Calls the tool `name` with JSON arguments; `.await` the request for the
    /// [`ToolResult`](crate::ToolResult), or set a context on it first.
    ///
    /// The call never fails and never panics: an unknown name, bad arguments, a tool error, a
    /// panic in the tool or a timeout all come back as a result with `success: false` and a
    /// message for the model. A repaired name (`WebSearch` for `web_search`) and repaired
    /// arguments are recorded in the result.
    #[inline]
    pub fn call<'s>(&'s self, name: &'s str, args: Value) -> ToolCallRequest<'s> {
        ToolCallRequest::new(self, name, CallArgs::Value(args))
    }

    /// [`call`](Self::call) with the arguments as JSON text, the way a model's response
    /// carries them: the text is parsed into a [`Value`] once, and the call goes on as a
    /// call with that value. Blank text means no arguments; text that is not JSON gives a
    /// result with `success: false` that says so.
    ///
    /// ```
    /// use aleph_tools::prelude::*;
    ///
    /// /// Add two integers.
    /// #[tool(register = false)]
    /// fn add(a: i64, b: i64) -> i64 {
    ///     a + b
    /// }
    ///
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let server = AlephToolServer::builder().with_tool(AddTool).build()?;
    /// let result = server.call_str("add", r#"{"a": 2, "b": 3}"#).await;
    /// assert_eq!(result.output, 5);
    /// let result = server.call_str("add", r#"{"a": 2, "#).await;
    /// assert!(result.error.unwrap().contains("not valid JSON"));
    /// # Ok::<(), aleph_tools::RegistryError>(())
    /// # }).unwrap();
    /// ```
    pub fn call_str<'s>(&'s self, name: &'s str, args: &'s str) -> ToolCallRequest<'s> {
        ToolCallRequest::new(self, name, CallArgs::Text(args))
    }

    /// A receiver that wakes each time the set of tools offered changes (a tool added,
    /// replaced or removed; plugins loaded, reloaded or unloaded; the filter replaced). Its
    /// value counts the changes. This is what an MCP server needs to send
    /// `notifications/tools/list_changed`.
    ///
    /// ```
    /// # use aleph_tools::AlephToolServer;
    /// let server = AlephToolServer::new();
    /// let mut changes = server.watch_tools();
    /// server.remove("nothing");
    /// assert!(!changes.has_changed().unwrap());
    /// ```
    pub fn watch_tools(&self) -> tokio::sync::watch::Receiver<u64> {
        self.shared.changes.subscribe()
    }

    /// How many times the tools offered have changed: a list built from the tools is
    /// current while this stays the same. Read it before reading the tools.
    pub(crate) fn tools_version(&self) -> u64 {
        *self.shared.changes.borrow()
    }

    /// Replaces the filter; calls that start afterwards see the new one. The tools offered
    /// change with it, so [`watch_tools`](Self::watch_tools) hears of it (and MCP clients get
    /// `list_changed`).
    ///
    /// # Errors
    ///
    /// [`PatternError`] when a pattern is not a valid glob; the old filter stays.
    pub fn set_filter(&self, filter: ToolFilter) -> Result<(), PatternError> {
        let compiled = filter.compile()?;
        let _writer = lock(&self.shared.write);
        let mut snapshot = Snapshot::clone(&self.shared.snapshot.load());
        if self.refresh_derived(&mut snapshot.tools, &compiled) {
            self.shared.publish(snapshot);
        }
        let active = !compiled.is_open();
        self.shared.filter.store(
            Arc::new(ActiveFilter {
                source: filter,
                compiled,
            }),
            active,
        );
        self.shared.changes.send_modify(|count| *count += 1);
        Ok(())
    }

    /// The filter in force.
    pub fn filter(&self) -> ToolFilter {
        self.shared.filter.load().source.clone()
    }

    /// Whether a tool called `name` is served (whether or not the filter offers it).
    pub fn contains(&self, name: &str) -> bool {
        self.shared.snapshot.load().tools.contains_key(name)
    }

    /// The number of served tools (whether or not the filter offers them).
    pub fn len(&self) -> usize {
        self.shared.snapshot.load().tools.len()
    }

    /// Whether no tool is served.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A server that does not keep it alive, for what the server itself holds (a watcher
/// adding tools to the server that owns it).
#[cfg(feature = "builtin")]
#[derive(Clone)]
pub(crate) struct WeakServer(std::sync::Weak<Shared>);

#[cfg(feature = "builtin")]
impl WeakServer {
    /// The server, unless every handle to it is gone.
    pub(crate) fn upgrade(&self) -> Option<AlephToolServer> {
        self.0.upgrade().map(|shared| AlephToolServer { shared })
    }
}

#[cfg(feature = "builtin")]
impl AlephToolServer {
    /// A handle that does not keep the server alive.
    pub(crate) fn downgrade(&self) -> WeakServer {
        WeakServer(Arc::downgrade(&self.shared))
    }

    /// Keeps `value` until the server is dropped.
    pub(crate) fn attach(&self, value: impl Send + 'static) {
        lock(&self.shared.attached).push(Box::new(value));
    }
}

impl fmt::Debug for AlephToolServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let snapshot = self.shared.snapshot.load();
        let mut names: Vec<&str> = snapshot.tools.keys().map(|k| &**k).collect();
        names.sort_unstable();
        f.debug_struct("AlephToolServer")
            .field("tools", &names)
            .finish_non_exhaustive()
    }
}
