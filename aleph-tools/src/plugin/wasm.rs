//! `WasmRuntime`: WebAssembly plugins run by Extism, sandboxed, in a pool of instances.
//!
//! Every instance in a pool is compiled into an engine of its own. Extism interrupts a call
//! that runs past its timeout by advancing its engine's epoch, which interrupts every call
//! running in that engine; with one engine per instance a timeout in one call never reaches a
//! call running beside it. An instance whose call did not return normally (a trap, a timeout,
//! memory or fuel used up, a cancellation) is dropped and a fresh one is built for the next
//! call, so nothing a failed call left in memory is seen again.
//!
//! A plugin's HTTP goes through the host under the library's one host rule
//! ([`wasm_http`](super::wasm_http)): every redirect hop checked, no private address reached
//! unless the manifest names it.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::util::sync::lock;
use extism::{CancelHandle, Manifest, Plugin, PluginBuilder, Wasm};
use tokio::sync::Semaphore;

use super::config::{ByteSize, WasmConfig};
use super::error::PluginError;
use super::manifest::{LoadedManifest, Permissions};
use super::wasm_http::{self, PluginHttp};
use crate::context::CancellationToken;

/// The most bytes of a plugin's error message that are kept.
const MAX_ERROR_CHARS: usize = 2_000;

/// The name looked up to instantiate a module at load time; no plugin exports it.
const PROBE_EXPORT: &str = "__aleph_probe";

/// Builds [`WasmPlugin`]s with the sandbox limits of one [`WasmConfig`].
#[derive(Debug, Clone, Default)]
pub struct WasmRuntime {
    config: WasmConfig,
}

impl WasmRuntime {
    /// A runtime with these limits.
    pub fn new(config: WasmConfig) -> Self {
        Self { config }
    }

    /// The limits.
    pub fn config(&self) -> &WasmConfig {
        &self.config
    }

    /// Loads the entry of a `wasm` plugin with the permissions of its manifest.
    ///
    /// # Errors
    ///
    /// [`PluginError`] when the entry cannot be read, is not WebAssembly (or WAT text), or
    /// fails to instantiate (a start function that traps or runs out of fuel).
    pub fn load(&self, loaded: &LoadedManifest) -> Result<WasmPlugin, PluginError> {
        let id = loaded.manifest.plugin.id.clone();
        let entry = loaded.entry().ok_or_else(|| PluginError::Load {
            plugin: id.clone(),
            message: "the manifest names no `entry`".into(),
        })?;
        let bytes = std::fs::read(&entry).map_err(|e| PluginError::Load {
            plugin: id.clone(),
            message: format!("cannot read `{}`: {e}", entry.display()),
        })?;
        self.load_bytes(&id, &bytes, &loaded.manifest.permissions, &loaded.dir)
    }

    /// Loads a module from memory: WebAssembly bytes or WAT text. `permissions` are read as in
    /// a manifest, relative paths from `dir`.
    ///
    /// # Errors
    ///
    /// As [`load`](Self::load).
    pub fn load_bytes(
        &self,
        id: &str,
        bytes: &[u8],
        permissions: &Permissions,
        dir: &Path,
    ) -> Result<WasmPlugin, PluginError> {
        let pages = u32::try_from(self.config.memory_limit.bytes() / 65_536).unwrap_or(u32::MAX);
        let wasm = wat::parse_bytes(bytes)
            .map_err(|e| PluginError::Load {
                plugin: id.to_owned(),
                message: format!("not WebAssembly (nor WAT text): {e}"),
            })?
            .into_owned();
        let mut manifest = Manifest::new([Wasm::data(wasm.clone())])
            .with_memory_max(pages.max(1))
            .with_timeout(self.config.timeout())
            .with_allowed_hosts(permissions.allowed_hosts().into_iter());
        manifest.memory.max_http_response_bytes = Some(self.config.max_output.bytes());
        let mounts = permissions.mounts(dir);
        for mount in &mounts {
            let host = mount.host.display().to_string();
            let source = if mount.read_only {
                format!("ro:{host}")
            } else {
                host
            };
            manifest = manifest.with_allowed_path(source, &mount.guest);
        }
        for name in &permissions.env {
            if let Ok(value) = std::env::var(name) {
                manifest = manifest.with_config_key(name, value);
            }
        }
        // WASI grants no directory beyond the mounts and no environment; a module built for
        // `wasm32-wasip1` needs it to link at all.
        let shape = ModuleShape::read(&wasm);
        let needs_wasi = !mounts.is_empty() || shape.imports_wasi;
        let pool = Pool {
            id: id.to_owned(),
            manifest,
            // Extism's default, which plugins were built against: no response headers.
            http: Arc::new(PluginHttp::new(permissions.allowed_hosts(), false)),
            wasi: needs_wasi,
            fuel: self.config.fuel,
            timeout: self.config.timeout(),
            memory_limit: self.config.memory_limit,
            max_output: self.config.max_output,
            memory_reservation: self.config.memory_reservation,
            idle: Mutex::new(Vec::new()),
            permits: Arc::new(Semaphore::new(self.config.pool_size.max(1))),
        };
        let first = pool.instantiate()?;
        // Callable by Extism: no parameters, no result or one `i32`.
        let exports = shape
            .functions
            .into_iter()
            .filter(|name| first.function_exists(name))
            .collect();
        pool.give_back(first);
        Ok(WasmPlugin {
            pool: Arc::new(pool),
            exports: Arc::new(exports),
        })
    }
}

/// One loaded WebAssembly plugin: a pool of sandboxed instances of one module. Cloning is
/// cheap and shares the pool.
#[derive(Clone)]
pub struct WasmPlugin {
    pool: Arc<Pool>,
    exports: Arc<Vec<String>>,
}

impl std::fmt::Debug for WasmPlugin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WasmPlugin")
            .field("id", &self.pool.id)
            .field("exports", &self.exports)
            .finish_non_exhaustive()
    }
}

/// Why a call into a plugin failed. `Display` is written for the model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WasmCallError {
    /// The plugin returned an error message.
    #[error("{0}")]
    Plugin(String),
    /// The call ran past the timeout and was interrupted.
    #[error("the plugin did not finish within {}ms and was stopped", .0.as_millis())]
    Timeout(Duration),
    /// The call (or the module's start function) used up its fuel.
    #[error("the plugin ran out of fuel (it did more work than one call may) and was stopped")]
    OutOfFuel,
    /// The plugin tried to grow its memory past the limit.
    #[error("the plugin ran out of memory (the limit is {0}) and was stopped")]
    OutOfMemory(ByteSize),
    /// The output is larger than allowed.
    #[error("the plugin returned {size} bytes, more than the {limit} allowed")]
    OutputTooLarge {
        /// The output's size in bytes.
        size: usize,
        /// The limit.
        limit: ByteSize,
    },
    /// The plugin asked for something its permissions do not grant, such as an HTTP request
    /// to a host its manifest does not list, or to a private address (loopback, private,
    /// link-local, …) that no rule names, a redirect hop included.
    #[error(
        "the plugin was refused: {0}; the plugin's manifest must list it under `[permissions]`"
    )]
    Denied(String),
    /// An HTTP request the plugin sent got no answer: no such host, no connection, more than
    /// ten redirects, or an answer larger than the plugin may receive.
    #[error("the plugin's HTTP request failed: {0}")]
    Http(String),
    /// The plugin does not export the function.
    #[error("the plugin exports no function `{0}`")]
    MissingExport(String),
    /// The call was cancelled.
    #[error("the call was cancelled")]
    Cancelled,
    /// The module crashed (a trap) or the runtime failed.
    #[error("the plugin crashed: {0}")]
    Crashed(String),
}

impl WasmPlugin {
    /// The plugin's id.
    pub fn id(&self) -> &str {
        &self.pool.id
    }

    /// The functions the module exports that can be called.
    pub fn exports(&self) -> &[String] {
        &self.exports
    }

    /// Whether the module exports `function` in a callable form.
    pub fn has_export(&self, function: &str) -> bool {
        self.exports.iter().any(|e| e == function)
    }

    /// Calls `function` with `input`, off the async runtime's worker threads, in a free
    /// instance of the pool (waiting for one when all are busy). Cancelling `cancel`, or
    /// dropping the returned future, interrupts the call.
    ///
    /// # Errors
    ///
    /// [`WasmCallError`] for everything a plugin can do wrong; the instance that failed is
    /// dropped and the pool keeps serving.
    pub async fn call(
        &self,
        function: &str,
        input: Vec<u8>,
        cancel: &CancellationToken,
    ) -> Result<Vec<u8>, WasmCallError> {
        if !self.has_export(function) {
            return Err(WasmCallError::MissingExport(function.to_owned()));
        }
        let permit = Arc::clone(&self.pool.permits)
            .acquire_owned()
            .await
            .map_err(|_| WasmCallError::Cancelled)?;
        let pool = Arc::clone(&self.pool);
        let stop = Arc::new(Stop::default());
        let task = {
            let stop = Arc::clone(&stop);
            let function = function.to_owned();
            tokio::task::spawn_blocking(move || {
                let _permit = permit;
                let result = pool.run(&function, &input, &stop);
                stop.finish();
                result
            })
        };
        let mut guard = StopOnDrop(Some(Arc::clone(&stop)));
        let mut task = std::pin::pin!(task);
        let result = tokio::select! {
            joined = &mut task => joined,
            () = cancel.cancelled() => {
                loop {
                    stop.request();
                    tokio::select! {
                        joined = &mut task => break joined,
                        () = tokio::time::sleep(Duration::from_millis(20)) => {}
                    }
                }
            }
        };
        guard.0 = None;
        result.unwrap_or_else(|e| Err(WasmCallError::Crashed(e.to_string())))
    }

    /// [`call`](Self::call) on the current thread, for programs without an async runtime.
    ///
    /// # Errors
    ///
    /// As [`call`](Self::call).
    pub fn call_blocking(&self, function: &str, input: &[u8]) -> Result<Vec<u8>, WasmCallError> {
        if !self.has_export(function) {
            return Err(WasmCallError::MissingExport(function.to_owned()));
        }
        self.pool.run(function, input, &Stop::default())
    }
}

struct Pool {
    id: String,
    manifest: Manifest,
    http: Arc<PluginHttp>,
    wasi: bool,
    fuel: u64,
    timeout: Duration,
    memory_limit: ByteSize,
    max_output: ByteSize,
    memory_reservation: Option<ByteSize>,
    idle: Mutex<Vec<Plugin>>,
    permits: Arc<Semaphore>,
}

impl Pool {
    /// Compiles the module into an engine of its own and runs its start function.
    fn instantiate(&self) -> Result<Plugin, PluginError> {
        let fail = |message: String| PluginError::Load {
            plugin: self.id.clone(),
            message,
        };
        let mut builder = PluginBuilder::new(self.manifest.clone())
            .with_wasi(self.wasi)
            .with_fuel_limit(self.fuel)
            .with_cache_disabled();
        if let Some(reservation) = self.memory_reservation {
            // Only this much address space per memory, a small guard, and no room kept
            // for growth beyond it: bounds are checked in code instead.
            let mut engine = wasmtime::Config::new();
            engine
                .memory_reservation(reservation.bytes())
                .memory_guard_size(64 * 1024)
                .memory_reservation_for_growth(0);
            builder = builder.with_wasmtime_config(engine);
        }
        let mut plugin = self
            .http
            .link(builder)
            .build()
            .map_err(|e| match self.classify(&e) {
                // Compiling failed: the bytes are not a module Extism can run.
                WasmCallError::Crashed(cause) if !cause.contains("wasm trap") => {
                    fail(format!("not a usable WebAssembly module: {cause}"))
                }
                // The start function ran and failed.
                error => fail(format!("the module cannot start: {error}")),
            })?;
        // Instantiation is lazy in Extism; asking for a function nobody exports runs the
        // start function now, so a module that cannot start fails here, not on a call.
        match plugin.call::<&[u8], &[u8]>(PROBE_EXPORT, &[]) {
            Err(e) if e.to_string().contains("Function not found") => {}
            Err(e) => {
                let error = self.classify(&e);
                return Err(fail(format!("the module cannot start: {error}")));
            }
            Ok(_) => {}
        }
        Ok(plugin)
    }

    fn give_back(&self, instance: Plugin) {
        lock(&self.idle).push(instance);
    }

    fn run(&self, function: &str, input: &[u8], stop: &Stop) -> Result<Vec<u8>, WasmCallError> {
        let taken = lock(&self.idle).pop();
        let mut instance = match taken {
            Some(instance) => instance,
            None => self
                .instantiate()
                .map_err(|e| WasmCallError::Crashed(e.to_string()))?,
        };
        if !stop.arm(instance.cancel_handle()) {
            self.give_back(instance);
            return Err(WasmCallError::Cancelled);
        }
        let outcome = match instance.call_get_error_code::<&[u8], &[u8]>(function, input) {
            Ok(output) if output.len() as u64 > self.max_output.bytes() => Err((
                WasmCallError::OutputTooLarge {
                    size: output.len(),
                    limit: self.max_output,
                },
                true,
            )),
            Ok(output) => Ok(output.to_vec()),
            Err((error, code)) => {
                let returned = code != -1 && code != 134;
                let error = if stop.was_requested() {
                    WasmCallError::Cancelled
                } else if returned {
                    WasmCallError::Plugin(truncate(&error.to_string()))
                } else {
                    self.classify(&error)
                };
                Err((error, returned))
            }
        };
        match outcome {
            Ok(output) => {
                self.give_back(instance);
                Ok(output)
            }
            Err((error, reusable)) => {
                if reusable {
                    self.give_back(instance);
                }
                Err(error)
            }
        }
    }

    fn classify(&self, error: &extism::Error) -> WasmCallError {
        let cause = root_cause(error);
        if cause == "timeout" {
            WasmCallError::Timeout(self.timeout)
        } else if cause == "oom" {
            WasmCallError::OutOfMemory(self.memory_limit)
        } else if let Some(why) = after(&cause, wasm_http::REFUSED) {
            WasmCallError::Denied(truncate(why))
        } else if let Some(why) = after(&cause, wasm_http::FAILED) {
            WasmCallError::Http(truncate(why))
        } else if cause.contains("fuel") {
            WasmCallError::OutOfFuel
        } else if cause.contains("is not allowed") {
            WasmCallError::Denied(truncate(&cause))
        } else {
            WasmCallError::Crashed(truncate(&cause))
        }
    }
}

fn root_cause(error: &extism::Error) -> String {
    let text = error.root_cause().to_string();
    if text.is_empty() {
        error.to_string()
    } else {
        text
    }
}

/// What follows `marker` in `text`, if it is there.
fn after<'a>(text: &'a str, marker: &str) -> Option<&'a str> {
    text.find(marker).map(|at| &text[at + marker.len()..])
}

fn truncate(text: &str) -> String {
    match text.char_indices().nth(MAX_ERROR_CHARS) {
        Some((end, _)) => format!("{}… (cut at {MAX_ERROR_CHARS} characters)", &text[..end]),
        None => text.to_owned(),
    }
}

/// What loading needs to know of a module, read in one pass: the functions it exports and
/// whether it imports WASI.
struct ModuleShape {
    functions: Vec<String>,
    imports_wasi: bool,
}

impl ModuleShape {
    fn read(wasm: &[u8]) -> Self {
        let mut shape = Self {
            functions: Vec::new(),
            imports_wasi: false,
        };
        for payload in wasmparser::Parser::new(0).parse_all(wasm) {
            match payload {
                Ok(wasmparser::Payload::ImportSection(section)) => {
                    shape.imports_wasi |= section
                        .into_imports()
                        .flatten()
                        .any(|import| import.module.starts_with("wasi_"));
                }
                Ok(wasmparser::Payload::ExportSection(section)) => {
                    shape.functions.extend(
                        section
                            .into_iter()
                            .flatten()
                            .filter(|export| export.kind == wasmparser::ExternalKind::Func)
                            .map(|export| export.name.to_owned()),
                    );
                }
                _ => {}
            }
        }
        shape.functions.sort();
        shape
    }
}

/// The link between an async call and the blocking thread running it: a request to stop
/// reaches the instance's cancel handle whichever comes first.
#[derive(Default)]
struct Stop {
    state: Mutex<StopState>,
    requested: AtomicBool,
}

#[derive(Default)]
struct StopState {
    handle: Option<CancelHandle>,
    finished: bool,
}

impl Stop {
    /// Registers the running instance; `false` when a stop was already requested.
    fn arm(&self, handle: CancelHandle) -> bool {
        let mut state = lock(&self.state);
        if self.requested.load(Ordering::SeqCst) {
            return false;
        }
        state.handle = Some(handle);
        true
    }

    fn request(&self) {
        self.requested.store(true, Ordering::SeqCst);
        let state = lock(&self.state);
        if !state.finished
            && let Some(handle) = &state.handle
        {
            let _ = handle.cancel();
        }
    }

    fn was_requested(&self) -> bool {
        self.requested.load(Ordering::SeqCst)
    }

    fn finish(&self) {
        let mut state = lock(&self.state);
        state.finished = true;
        state.handle = None;
    }

    fn is_finished(&self) -> bool {
        lock(&self.state).finished
    }
}

/// Stops the call when the future running it is dropped (a server timeout, a dropped
/// request). The cancel request is repeated until the call ends, because a request that
/// reaches Extism before the call has started its timer is lost.
struct StopOnDrop(Option<Arc<Stop>>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        let Some(stop) = self.0.take() else { return };
        stop.request();
        if stop.is_finished() {
            return;
        }
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                while !stop.is_finished() {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    stop.request();
                }
            });
        }
    }
}
