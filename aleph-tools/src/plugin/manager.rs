//! `PluginManager`: finds plugins, loads them into an [`AlephToolServer`]'s tool set, and
//! unloads, reloads, enables and disables them.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::Value;

use super::code::{Code, Purpose};
use super::config::PluginsConfig;
use super::error::PluginError;
use super::manifest::{LoadedManifest, MANIFEST_FILES, PluginManifest, read_small};
use super::messages::MessageHook;
#[cfg(feature = "node")]
use super::node::NodejsRuntime;
use super::prompts::PluginPrompt;
use super::services::Services;
use super::tree::TreeError;
#[cfg(feature = "wasm")]
use super::wasm::WasmRuntime;
use crate::middleware::LayerId;
use crate::server::AlephToolServer;
use crate::util::sync::lock;

mod info;
mod prepare;

pub use self::info::{LoadReport, PluginInfo, PluginStatus};

/// Loads plugins and serves their tools beside the server's own.
///
/// A plugin's tools are served under the names its manifest gives, with category
/// [`Plugin`](crate::ToolCategory::Plugin); they go through everything other tools go
/// through (name repair, filters, argument validation, confirmation, middleware, timeouts).
/// Loading, reloading and unloading swap a plugin's whole tool set at once; calls already
/// running finish on the version they started on.
///
/// A plugin's hooks join the server's hooks, its services run in the background
/// ([`services`](Self::services)) and its prompt is offered by scope
/// ([`prompts`](Self::prompts)), all withdrawn with the plugin.
///
/// Loading compiles WebAssembly, or starts a Node.js process and waits for its answer, and
/// blocks while it does; from async code, call it inside `tokio::task::spawn_blocking`.
/// Cloning is cheap and shares the manager.
#[derive(Clone)]
pub struct PluginManager {
    pub(super) inner: Arc<Inner>,
}

pub(super) struct Inner {
    server: AlephToolServer,
    pub(super) config: PluginsConfig,
    #[cfg(feature = "wasm")]
    runtime: WasmRuntime,
    #[cfg(feature = "node")]
    node: NodejsRuntime,
    /// Plugin directory → what is known of it. One lock serializes every change.
    slots: Mutex<BTreeMap<PathBuf, Slot>>,
    /// The next [`Serving::seq`].
    next_seq: AtomicU64,
}

struct Slot {
    id: String,
    manifest: Option<Arc<LoadedManifest>>,
    status: PluginStatus,
    serving: Option<Serving>,
}

/// The version of a plugin whose tools are being served.
struct Serving {
    manifest: Arc<LoadedManifest>,
    tools: Vec<String>,
    hooks: Vec<LayerId>,
    message_hooks: Vec<Arc<MessageHook>>,
    /// When it started serving, among every plugin version: message hooks of equal
    /// priority run in this order.
    seq: u64,
    prompt: Option<PluginPrompt>,
    services: Arc<Services>,
    code: Option<Code>,
    dropped: Vec<String>,
}

impl fmt::Debug for PluginManager {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PluginManager")
            .field("plugins", &self.list())
            .finish_non_exhaustive()
    }
}

impl PluginManager {
    /// A manager that serves plugin tools through `server` (any handle to it).
    pub fn new(server: &AlephToolServer, config: PluginsConfig) -> Self {
        Self {
            inner: Arc::new(Inner {
                server: server.clone(),
                #[cfg(feature = "wasm")]
                runtime: WasmRuntime::new(config.runtimes.wasm.clone()),
                #[cfg(feature = "node")]
                node: NodejsRuntime::new(config.runtimes.nodejs.clone()),
                config,
                slots: Mutex::new(BTreeMap::new()),
                next_seq: AtomicU64::new(0),
            }),
        }
    }

    /// The settings.
    pub fn config(&self) -> &PluginsConfig {
        &self.inner.config
    }

    /// The plugin directories in the search paths, in search order: each directory directly
    /// inside a search path that holds a manifest (hidden ones, named `.…`, aside). Search
    /// paths that do not exist are skipped.
    pub fn discover(&self) -> Vec<PathBuf> {
        let mut found = Vec::new();
        for root in self.inner.config.resolved_search_paths() {
            let Ok(entries) = std::fs::read_dir(&root) else {
                continue;
            };
            let mut dirs: Vec<PathBuf> = entries
                .filter_map(Result::ok)
                .filter(|entry| !entry.file_name().to_string_lossy().starts_with('.'))
                .map(|entry| entry.path())
                .filter(|path| has_manifest(path))
                .collect();
            dirs.sort();
            found.extend(dirs);
        }
        found
    }

    /// Loads every plugin [`discover`](Self::discover) finds. A plugin that fails is
    /// reported and skipped; the others load. A plugin the config lists as `disabled` is
    /// listed as [`Stopped`](PluginStatus::Stopped) without running until
    /// [`Plugin::enable`](super::Plugin::enable). Nothing loads when `enabled` is off.
    pub fn load_all(&self) -> LoadReport {
        let mut report = LoadReport::default();
        if !self.inner.config.enabled {
            return report;
        }
        for dir in self.discover() {
            if let Ok(manifest) = PluginManifest::read_dir(&dir)
                && self
                    .inner
                    .config
                    .disabled
                    .contains(&manifest.manifest.plugin.id)
            {
                let id = manifest.manifest.plugin.id.clone();
                self.keep_stopped(&dir, manifest);
                report.disabled.push(id);
                continue;
            }
            match self.load(&dir) {
                Ok(info) => report.loaded.push(info.id),
                Err(error) => report.failed.push((dir, error)),
            }
        }
        report
    }

    /// Loads the plugin in `dir`, or reloads it when it is loaded already. Its tools are
    /// served once this returns.
    ///
    /// First the directory's tree is walked, without following links: a plugin holding a
    /// symbolic link that leads out of its directory (or a device file, or more than 50,000
    /// entries or 64 levels) is refused, with the link and where it leads, because its
    /// sandbox allows paths as written and the system follows the link. Links that stay
    /// inside are fine.
    ///
    /// # Errors
    ///
    /// [`PluginError`] saying what to fix. The failure is also kept as the plugin's status;
    /// when a previous version was serving, it keeps serving, unless the failure is such a
    /// link, which stops it.
    pub fn load(&self, dir: &Path) -> Result<PluginInfo, PluginError> {
        let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
        // Walked before the lock, so a large tree holds up no other plugin.
        let tree = super::tree::check(&dir);
        let mut slots = self.slots();
        let escaped = matches!(tree, Err(TreeError::Escape { .. } | TreeError::Device(_)));
        let manifest = match tree {
            Ok(()) => PluginManifest::read_dir(&dir)
                .map(Arc::new)
                .map_err(PluginError::from),
            Err(problem) => Err(PluginError::Load {
                plugin: slots
                    .get(&dir)
                    .map_or_else(|| dir_name(&dir), |slot| slot.id.clone()),
                message: problem.to_string(),
            }),
        };
        let read_id = manifest.as_ref().ok().map(|m| m.manifest.plugin.id.clone());
        let result = manifest
            .and_then(|manifest| self.inner.prepare(manifest, &dir, &slots))
            .and_then(|prepared| {
                let old = slots.get(&dir).and_then(|slot| slot.serving.as_ref());
                self.inner.activate(prepared, old)
            });
        let slot = slots.entry(dir.clone()).or_insert_with(|| Slot {
            id: dir_name(&dir),
            manifest: None,
            status: PluginStatus::Loaded,
            serving: None,
        });
        match result {
            Ok(serving) => {
                slot.id.clone_from(&serving.manifest.manifest.plugin.id);
                slot.manifest = Some(Arc::clone(&serving.manifest));
                slot.status = PluginStatus::Running;
                slot.serving = Some(serving);
                tracing::info!(plugin = %slot.id, dir = %dir.display(), "plugin loaded");
                Ok(slot.info(&dir))
            }
            Err(error) => {
                if let Some(id) = read_id
                    && slot.serving.is_none()
                    && !matches!(error, PluginError::DuplicateId { .. })
                {
                    slot.id = id;
                }
                // The running version works in the same directory: it would reach what the
                // link reaches, so it stops too.
                if escaped && let Some(serving) = slot.serving.take() {
                    self.inner.withdraw(&serving);
                    tracing::warn!(plugin = %slot.id, "plugin stopped: its directory holds a link that leads out of it");
                }
                let message = match &slot.serving {
                    Some(serving) => format!(
                        "{error} (still serving version {})",
                        serving.manifest.manifest.plugin.version
                    ),
                    None => error.to_string(),
                };
                tracing::warn!(plugin = %slot.id, dir = %dir.display(), "{message}");
                slot.status = PluginStatus::Error(message);
                Err(error)
            }
        }
    }

    /// Reloads the plugin `id` from its directory.
    ///
    /// # Errors
    ///
    /// [`PluginError::NotFound`], or why the new version cannot load (the previous one keeps
    /// serving).
    pub(crate) fn reload(&self, id: &str) -> Result<PluginInfo, PluginError> {
        let dir = self.dir_of(id)?;
        self.load(&dir)
    }

    /// Stops serving the plugin `id`'s tools and forgets it.
    ///
    /// # Errors
    ///
    /// [`PluginError::NotFound`].
    pub(crate) fn unload(&self, id: &str) -> Result<(), PluginError> {
        let dir = self.dir_of(id)?;
        self.unload_dir(&dir);
        Ok(())
    }

    /// Stops serving the plugin `id`'s tools, keeping it listed as
    /// [`Stopped`](PluginStatus::Stopped) until [`enable`](Self::enable).
    ///
    /// # Errors
    ///
    /// [`PluginError::NotFound`].
    pub(crate) fn disable(&self, id: &str) -> Result<PluginInfo, PluginError> {
        let dir = self.dir_of(id)?;
        let mut slots = self.slots();
        let slot = slots
            .get_mut(&dir)
            .ok_or_else(|| PluginError::NotFound(id.to_owned()))?;
        if let Some(serving) = slot.serving.take() {
            self.inner.withdraw(&serving);
        }
        slot.status = PluginStatus::Stopped;
        Ok(slot.info(&dir))
    }

    /// Loads a disabled (or failed) plugin `id` again from its directory, or the plugin
    /// with this id that [`discover`](Self::discover) finds when the manager does not know it
    /// yet (one copied into a search path by hand).
    ///
    /// # Errors
    ///
    /// As [`reload`](Self::reload).
    pub(crate) fn enable(&self, id: &str) -> Result<PluginInfo, PluginError> {
        if !self.inner.config.enabled {
            return Err(PluginError::Load {
                plugin: id.to_owned(),
                message: "plugins are turned off in this server's config (`enabled = false`)"
                    .to_owned(),
            });
        }
        let dir = match self.dir_of(id) {
            Ok(dir) => dir,
            Err(not_found) => self.discovered(id).ok_or(not_found)?,
        };
        self.load(&dir)
    }

    /// Every plugin the manager knows, sorted by id.
    pub fn list(&self) -> Vec<PluginInfo> {
        let slots = self.slots();
        let mut list: Vec<PluginInfo> = slots.iter().map(|(dir, slot)| slot.info(dir)).collect();
        list.sort_by(|a, b| a.id.cmp(&b.id));
        list
    }

    /// The plugin `id`.
    pub(crate) fn get(&self, id: &str) -> Option<PluginInfo> {
        self.list().into_iter().find(|info| info.id == id)
    }

    /// Runs the direct command `command` of plugin `id` with `input` (JSON), without a
    /// model: the handler (a WebAssembly export, or a Node.js plugin's command) gets the
    /// input as JSON and returns JSON, within the runtime's time limit.
    ///
    /// # Errors
    ///
    /// [`PluginError::NotFound`] for an unknown or stopped plugin; [`PluginError::Command`]
    /// for an unknown command (naming the commands there are) or a failed one.
    #[cfg_attr(
        not(any(feature = "wasm", feature = "node")),
        allow(
            clippy::unused_async,
            unused_variables,
            reason = "awaits the plugin with a runtime feature"
        )
    )]
    pub(crate) async fn execute_command(
        &self,
        id: &str,
        command: &str,
        input: &Value,
    ) -> Result<Value, PluginError> {
        let (code, handler) = {
            let slots = self.slots();
            let serving = slots
                .values()
                .find(|slot| slot.id == id)
                .and_then(|slot| slot.serving.as_ref())
                .ok_or_else(|| PluginError::NotFound(id.to_owned()))?;
            let manifest = &serving.manifest.manifest;
            let Some(section) = manifest.commands.iter().find(|c| c.name == command) else {
                let known: Vec<&str> = manifest.commands.iter().map(|c| c.name.as_str()).collect();
                return Err(PluginError::Command {
                    plugin: id.to_owned(),
                    command: command.to_owned(),
                    message: format!(
                        "no such command; it has: {}",
                        if known.is_empty() {
                            "none".to_owned()
                        } else {
                            known.join(", ")
                        }
                    ),
                });
            };
            (serving.code.clone(), section.handler.clone())
        };
        let Some(code) = code else {
            return Err(PluginError::NotFound(id.to_owned()));
        };
        code.invoke(&handler, Purpose::Command(command), input)
            .await
            .map_err(|message| PluginError::Command {
                plugin: id.to_owned(),
                command: command.to_owned(),
                message,
            })
    }

    pub(super) fn unload_dir(&self, dir: &Path) -> bool {
        let mut slots = self.slots();
        let Some(slot) = slots.remove(dir) else {
            return false;
        };
        if let Some(serving) = &slot.serving {
            self.inner.withdraw(serving);
        }
        tracing::info!(plugin = %slot.id, dir = %dir.display(), "plugin unloaded");
        true
    }

    /// The prompt of every plugin being served, with the tools it serves.
    pub(super) fn serving_prompts(&self) -> Vec<(PluginPrompt, Vec<String>)> {
        self.slots()
            .values()
            .filter_map(|slot| slot.serving.as_ref())
            .filter_map(|serving| Some((serving.prompt.clone()?, serving.tools.clone())))
            .collect()
    }

    /// The running code and manifest of plugin `id`, when it is being served with code.
    pub(super) fn serving_code(&self, id: &str) -> Option<(Code, Arc<LoadedManifest>)> {
        let slots = self.slots();
        let serving = slots
            .values()
            .find(|slot| slot.id == id)?
            .serving
            .as_ref()?;
        Some((serving.code.clone()?, Arc::clone(&serving.manifest)))
    }

    /// The running code of plugin `id` and what `find` picks from its manifest (a channel's
    /// or provider's section), or why there is none, in words.
    pub(super) fn serving_section<T: Clone>(
        &self,
        id: &str,
        what: &str,
        find: impl Fn(&PluginManifest) -> Option<&T>,
    ) -> Result<(Code, T), String> {
        let (code, manifest) = self
            .serving_code(id)
            .ok_or_else(|| format!("plugin `{id}` is not running"))?;
        let section = find(&manifest.manifest)
            .cloned()
            .ok_or_else(|| format!("plugin `{id}` no longer declares this {what}"))?;
        Ok((code, section))
    }

    /// The running plugins' `sections`, each with its plugin's id, by that id and then `name`.
    pub(super) fn serving_sections<S: Clone>(
        &self,
        sections: impl Fn(&PluginManifest) -> &[S],
        name: impl Fn(&S) -> &str,
    ) -> Vec<(String, S)> {
        let mut all: Vec<(String, S)> = self
            .list()
            .into_iter()
            .filter_map(|info| self.serving_code(&info.id))
            .flat_map(|(_, manifest)| {
                sections(&manifest.manifest)
                    .iter()
                    .map(|section| (manifest.manifest.plugin.id.clone(), section.clone()))
                    .collect::<Vec<_>>()
            })
            .collect();
        all.sort_by(|(a, x), (b, y)| (a.as_str(), name(x)).cmp(&(b.as_str(), name(y))));
        all
    }

    /// Checks that the running plugin `id` declares the `what` (`channel`, `provider`)
    /// `name` among `names` of its manifest.
    pub(super) fn check_declared(
        &self,
        id: &str,
        what: &str,
        name: &str,
        names: impl Fn(&PluginManifest) -> Vec<String>,
    ) -> Result<(), PluginError> {
        let (_, manifest) = self
            .serving_code(id)
            .ok_or_else(|| PluginError::NotFound(id.to_owned()))?;
        let known = names(&manifest.manifest);
        if known.iter().any(|known| known == name) {
            return Ok(());
        }
        Err(PluginError::Unknown {
            plugin: id.to_owned(),
            what: what.to_owned(),
            name: name.to_owned(),
            known,
        })
    }

    /// The message hooks of every plugin being served, in the order they run: by priority,
    /// then by when their plugin started serving, then in manifest order.
    pub(super) fn serving_message_hooks(&self) -> Vec<Arc<MessageHook>> {
        let slots = self.slots();
        let mut hooks: Vec<(i32, u64, usize, Arc<MessageHook>)> = slots
            .values()
            .filter_map(|slot| slot.serving.as_ref())
            .flat_map(|serving| {
                serving
                    .message_hooks
                    .iter()
                    .enumerate()
                    .map(|(i, hook)| (hook.priority.value(), serving.seq, i, Arc::clone(hook)))
            })
            .collect();
        hooks.sort_by_key(|(priority, seq, i, _)| (*priority, *seq, *i));
        hooks.into_iter().map(|(.., hook)| hook).collect()
    }

    /// The services of every plugin being served.
    pub(super) fn serving_services(&self) -> Vec<Arc<Services>> {
        self.slots()
            .values()
            .filter_map(|slot| slot.serving.as_ref())
            .map(|serving| Arc::clone(&serving.services))
            .collect()
    }

    /// The services of plugin `id`, when it is being served.
    pub(super) fn serving_services_of(&self, id: &str) -> Option<Arc<Services>> {
        self.slots()
            .values()
            .find(|slot| slot.id == id)
            .and_then(|slot| slot.serving.as_ref())
            .map(|serving| Arc::clone(&serving.services))
    }

    /// Whether `path` lies in a directory the plugin in `dir` may write (its data, not its
    /// code).
    pub(super) fn is_plugin_data(&self, dir: &Path, path: &Path) -> bool {
        let slots = self.slots();
        let Some(manifest) = slots.get(dir).and_then(|slot| slot.manifest.as_ref()) else {
            return false;
        };
        manifest
            .manifest
            .permissions
            .mounts(dir)
            .iter()
            .any(|mount| !mount.read_only && path.starts_with(&mount.host))
    }

    /// Lists the plugin in `dir` as stopped, without running it, unless it is known already.
    fn keep_stopped(&self, dir: &Path, manifest: LoadedManifest) {
        let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
        self.slots().entry(dir).or_insert_with(|| Slot {
            id: manifest.manifest.plugin.id.clone(),
            manifest: Some(Arc::new(manifest)),
            status: PluginStatus::Stopped,
            serving: None,
        });
    }

    /// Whether the plugin in `dir` is disabled.
    pub(super) fn is_disabled(&self, dir: &Path) -> bool {
        self.slots()
            .get(dir)
            .is_some_and(|slot| slot.status == PluginStatus::Stopped)
    }

    pub(super) fn knows_dir(&self, dir: &Path) -> bool {
        self.slots().contains_key(dir)
    }

    fn dir_of(&self, id: &str) -> Result<PathBuf, PluginError> {
        self.slots()
            .iter()
            .find(|(_, slot)| slot.id == id)
            .map(|(dir, _)| dir.clone())
            .ok_or_else(|| PluginError::NotFound(id.to_owned()))
    }

    /// The directory in the search paths whose manifest names plugin `id`, loaded or not.
    pub(super) fn discovered(&self, id: &str) -> Option<PathBuf> {
        self.discover()
            .into_iter()
            .find(|dir| PluginManifest::read_dir(dir).is_ok_and(|m| m.manifest.plugin.id == id))
    }

    fn slots(&self) -> MutexGuard<'_, BTreeMap<PathBuf, Slot>> {
        lock(&self.inner.slots)
    }
}

/// Whether `dir` holds a plugin manifest (for `package.json`, one with `alephPlugin`).
pub(super) fn has_manifest(dir: &Path) -> bool {
    MANIFEST_FILES.iter().any(|name| {
        let file = dir.join(name);
        if *name == "package.json" {
            read_small(&file).is_ok_and(|text| text.is_some_and(|t| t.contains("\"alephPlugin\"")))
        } else {
            file.is_file()
        }
    })
}

fn dir_name(dir: &Path) -> String {
    dir.file_name().map_or_else(
        || dir.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}
