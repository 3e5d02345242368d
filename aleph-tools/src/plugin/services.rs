//! Background services: what a plugin's `[[services]]` start and stop, each with its state.
//!
//! A service goes Stopped → Starting → Running → Stopping → Stopped, or to Failed with the
//! reason when a handler fails or outlives the runtime's time limit. Services with
//! `auto_start` start when their plugin loads, every one on its own, so one that fails or
//! hangs holds up no other; running services are stopped when their plugin is unloaded,
//! disabled or replaced by a reload.

use std::fmt;
use std::sync::{Arc, Mutex};

use serde_json::json;

use super::code::{Code, Purpose};
use super::error::PluginError;
use super::manager::PluginManager;
use super::manifest::ServiceSection;
use crate::util::sync::lock;

/// Where a service is in its life.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ServiceState {
    /// Not running.
    Stopped,
    /// Its start handler is running.
    Starting,
    /// Started.
    Running,
    /// Its stop handler is running.
    Stopping,
    /// A handler failed; the reason. It may be started again.
    Failed(String),
}

impl fmt::Display for ServiceState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Stopped => f.write_str("stopped"),
            Self::Starting => f.write_str("starting"),
            Self::Running => f.write_str("running"),
            Self::Stopping => f.write_str("stopping"),
            Self::Failed(reason) => write!(f, "failed: {reason}"),
        }
    }
}

/// One service, as [`PluginManager::services`] reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServiceInfo {
    /// The plugin's id.
    pub plugin: String,
    /// The service's name.
    pub name: String,
    /// What it does.
    pub description: String,
    /// Whether it starts with its plugin.
    pub auto_start: bool,
    /// Where it is.
    pub state: ServiceState,
}

/// The services of one loaded version of a plugin.
pub(super) struct Services {
    plugin: String,
    code: Option<Code>,
    sections: Vec<ServiceSection>,
    states: Mutex<Vec<ServiceState>>,
}

impl Services {
    pub(super) fn new(plugin: &str, code: Option<Code>, sections: &[ServiceSection]) -> Arc<Self> {
        Arc::new(Self {
            plugin: plugin.to_owned(),
            code,
            sections: sections.to_vec(),
            states: Mutex::new(vec![ServiceState::Stopped; sections.len()]),
        })
    }

    pub(super) fn infos(&self) -> Vec<ServiceInfo> {
        let states = lock(&self.states);
        self.sections
            .iter()
            .zip(states.iter())
            .map(|(section, state)| self.info(section, state.clone()))
            .collect()
    }

    fn info(&self, section: &ServiceSection, state: ServiceState) -> ServiceInfo {
        ServiceInfo {
            plugin: self.plugin.clone(),
            name: section.name.clone(),
            description: section.description.clone(),
            auto_start: section.auto_start,
            state,
        }
    }

    fn index(&self, name: &str) -> Result<usize, PluginError> {
        self.sections
            .iter()
            .position(|s| s.name == name)
            .ok_or_else(|| {
                let known: Vec<&str> = self.sections.iter().map(|s| s.name.as_str()).collect();
                PluginError::Service {
                    plugin: self.plugin.clone(),
                    service: name.to_owned(),
                    message: format!(
                        "no such service; it has: {}",
                        if known.is_empty() {
                            "none".to_owned()
                        } else {
                            known.join(", ")
                        }
                    ),
                }
            })
    }

    /// Starts service `i` unless it is starting or running; its state after.
    async fn start(&self, i: usize) -> ServiceState {
        self.run(i, true).await
    }

    /// Stops service `i` when it is running; its state after.
    async fn stop(&self, i: usize) -> ServiceState {
        self.run(i, false).await
    }

    async fn run(&self, i: usize, start: bool) -> ServiceState {
        let section = &self.sections[i];
        {
            let mut states = lock(&self.states);
            let state = &mut states[i];
            let ready = if start {
                matches!(state, ServiceState::Stopped | ServiceState::Failed(_))
            } else {
                *state == ServiceState::Running
            };
            if !ready {
                return state.clone();
            }
            *state = if start {
                ServiceState::Starting
            } else {
                ServiceState::Stopping
            };
        }
        let handler = if start {
            &section.start_handler
        } else {
            &section.stop_handler
        };
        let outcome = match &self.code {
            Some(code) => code
                .invoke(
                    handler,
                    Purpose::Service {
                        name: &section.name,
                        start,
                    },
                    &json!({ "service": section.name }),
                )
                .await
                .map(drop),
            None => Err("the plugin runs no code".to_owned()),
        };
        let state = match outcome {
            Ok(()) if start => ServiceState::Running,
            Ok(()) => ServiceState::Stopped,
            Err(error) => {
                let verb = if start { "start" } else { "stop" };
                tracing::warn!(plugin = %self.plugin, service = %section.name, "the service failed to {verb}: {error}");
                ServiceState::Failed(format!("`{handler}` failed: {error}"))
            }
        };
        lock(&self.states)[i] = state.clone();
        state
    }

    /// Starts every `auto_start` service, each on its own, off the caller's thread.
    pub(super) fn start_automatic(self: &Arc<Self>) {
        let automatic: Vec<usize> = (0..self.sections.len())
            .filter(|&i| self.sections[i].auto_start)
            .collect();
        if !automatic.is_empty() {
            let services = Arc::clone(self);
            in_background(async move {
                let starts = automatic.into_iter().map(|i| services.start(i));
                futures_util::future::join_all(starts).await;
            });
        }
    }

    /// Stops every running service, off the caller's thread.
    pub(super) fn stop_all(self: &Arc<Self>) {
        let running: Vec<usize> = lock(&self.states)
            .iter()
            .enumerate()
            .filter(|(_, state)| **state == ServiceState::Running)
            .map(|(i, _)| i)
            .collect();
        if !running.is_empty() {
            let services = Arc::clone(self);
            in_background(async move {
                let stops = running.into_iter().map(|i| services.stop(i));
                futures_util::future::join_all(stops).await;
            });
        }
    }
}

/// Runs `work` on a thread of its own, so loading and unloading never wait for a service.
fn in_background(work: impl Future<Output = ()> + Send + 'static) {
    let spawned = std::thread::Builder::new()
        .name("aleph-plugin-services".into())
        .spawn(move || {
            match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(runtime) => runtime.block_on(work),
                Err(error) => tracing::error!("cannot run plugin services: {error}"),
            }
        });
    if let Err(error) = spawned {
        tracing::error!("cannot start a thread for plugin services: {error}");
    }
}

impl PluginManager {
    /// Every service of every running plugin, by plugin id, in manifest order.
    pub fn services(&self) -> Vec<ServiceInfo> {
        let mut all: Vec<ServiceInfo> = self
            .serving_services()
            .iter()
            .flat_map(|services| services.infos())
            .collect();
        all.sort_by(|a, b| a.plugin.cmp(&b.plugin));
        all
    }

    /// Starts service `name` of plugin `id` and waits for its start handler (at most the
    /// runtime's time limit). Starting a service that is starting or running changes nothing.
    ///
    /// # Errors
    ///
    /// [`PluginError::NotFound`] for a plugin that is not running, [`PluginError::Service`]
    /// for an unknown service or a start handler that failed (the service is then
    /// [`Failed`](ServiceState::Failed)).
    pub(crate) async fn start_service(
        &self,
        id: &str,
        name: &str,
    ) -> Result<ServiceInfo, PluginError> {
        self.change_service(id, name, true).await
    }

    /// Stops service `name` of plugin `id` and waits for its stop handler. Stopping a service
    /// that is not running changes nothing.
    ///
    /// # Errors
    ///
    /// As [`start_service`](Self::start_service).
    pub(crate) async fn stop_service(
        &self,
        id: &str,
        name: &str,
    ) -> Result<ServiceInfo, PluginError> {
        self.change_service(id, name, false).await
    }

    async fn change_service(
        &self,
        id: &str,
        name: &str,
        start: bool,
    ) -> Result<ServiceInfo, PluginError> {
        let services = self
            .serving_services_of(id)
            .ok_or_else(|| PluginError::NotFound(id.to_owned()))?;
        let i = services.index(name)?;
        let state = if start {
            services.start(i).await
        } else {
            services.stop(i).await
        };
        match state {
            ServiceState::Failed(message) => Err(PluginError::Service {
                plugin: id.to_owned(),
                service: name.to_owned(),
                message,
            }),
            state => Ok(services.info(&services.sections[i], state)),
        }
    }
}
