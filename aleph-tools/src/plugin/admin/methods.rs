//! The methods: their names, the params each takes, and what each answers.

use std::path::PathBuf;

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use super::{AdminError, PluginAdmin, download};
use crate::plugin::error::PluginError;
use crate::plugin::manager::{PluginInfo, PluginManager, PluginStatus};
use crate::plugin::routes::kind;
use crate::plugin::services::{ServiceInfo, ServiceState};

/// The methods of the management API, as JSON-RPC names them.
pub const METHODS: [&str; 11] = [
    "plugins.list",
    "plugins.install",
    "plugins.uninstall",
    "plugins.enable",
    "plugins.disable",
    "plugins.reload",
    "plugins.executeCommand",
    "services.list",
    "services.status",
    "services.start",
    "services.stop",
];

/// What a method does.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    List,
    Install,
    Uninstall,
    Enable,
    Disable,
    Reload,
    ExecuteCommand,
    Services,
    ServiceStatus,
    ServiceStart,
    ServiceStop,
}

/// A method: its name, what it does, and what a tool of it says.
pub(super) struct Spec {
    pub method: &'static str,
    pub kind: Kind,
    pub description: &'static str,
    /// The params, as a JSON Schema's `properties` and `required`.
    pub params: &'static [Param],
    pub read_only: bool,
    pub destructive: bool,
}

/// One param of a method.
pub(super) struct Param {
    pub name: &'static str,
    /// `string`, `object`.
    pub kind: &'static str,
    pub description: &'static str,
    pub required: bool,
}

const ID: Param = Param {
    name: "id",
    kind: "string",
    description: "The plugin's id, as its manifest gives it",
    required: true,
};
const PLUGIN: Param = Param {
    name: "plugin",
    kind: "string",
    description: "The id of the plugin that runs the service",
    required: true,
};
const SERVICE: Param = Param {
    name: "service",
    kind: "string",
    description: "The service's name, as the plugin's manifest gives it",
    required: true,
};

pub(super) const SPECS: [Spec; 11] = [
    Spec {
        method: "plugins.list",
        kind: Kind::List,
        description: "List the plugins this server knows, each with its status, version, tools and commands: `{\"plugins\": [...]}`.",
        params: &[],
        read_only: true,
        destructive: false,
    },
    Spec {
        method: "plugins.install",
        kind: Kind::Install,
        description: "Install a plugin from a directory or archive on the server's machine, or from an https URL to a .tar.gz or .zip archive, into the first search path, and run it.",
        params: &[
            Param {
                name: "source",
                kind: "string",
                description: "A path on the server's machine, or an https URL",
                required: true,
            },
            Param {
                name: "sha256",
                kind: "string",
                description: "The archive's SHA-256, in hex: the install is refused when the archive differs",
                required: false,
            },
        ],
        read_only: false,
        destructive: false,
    },
    Spec {
        method: "plugins.uninstall",
        kind: Kind::Uninstall,
        description: "Stop a plugin and delete its directory from the search path.",
        params: &[ID],
        read_only: false,
        destructive: true,
    },
    Spec {
        method: "plugins.enable",
        kind: Kind::Enable,
        description: "Run a disabled, failed or newly copied plugin from its directory.",
        params: &[ID],
        read_only: false,
        destructive: false,
    },
    Spec {
        method: "plugins.disable",
        kind: Kind::Disable,
        description: "Stop serving a plugin's tools, routes and services, keeping it installed until it is enabled again.",
        params: &[ID],
        read_only: false,
        destructive: true,
    },
    Spec {
        method: "plugins.reload",
        kind: Kind::Reload,
        description: "Load a plugin again from its directory; the running version keeps serving when the new one fails.",
        params: &[ID],
        read_only: false,
        destructive: false,
    },
    Spec {
        method: "plugins.executeCommand",
        kind: Kind::ExecuteCommand,
        description: "Run one of a plugin's direct commands with a JSON input and return its JSON output.",
        params: &[
            ID,
            Param {
                name: "command",
                kind: "string",
                description: "The command's name, as the plugin's manifest gives it",
                required: true,
            },
            Param {
                name: "input",
                kind: "object",
                description: "The command's input ({} when left out)",
                required: false,
            },
        ],
        read_only: false,
        destructive: false,
    },
    Spec {
        method: "services.list",
        kind: Kind::Services,
        description: "List the background services of the running plugins, each with its state: `{\"services\": [...]}`.",
        params: &[],
        read_only: true,
        destructive: false,
    },
    Spec {
        method: "services.status",
        kind: Kind::ServiceStatus,
        description: "Report one background service's state.",
        params: &[PLUGIN, SERVICE],
        read_only: true,
        destructive: false,
    },
    Spec {
        method: "services.start",
        kind: Kind::ServiceStart,
        description: "Start a plugin's background service and wait for its start handler.",
        params: &[PLUGIN, SERVICE],
        read_only: false,
        destructive: false,
    },
    Spec {
        method: "services.stop",
        kind: Kind::ServiceStop,
        description: "Stop a plugin's background service and wait for its stop handler.",
        params: &[PLUGIN, SERVICE],
        read_only: false,
        destructive: true,
    },
];

impl Spec {
    /// The params as a JSON Schema.
    pub(super) fn schema(&self) -> Value {
        let properties: Map<String, Value> = self
            .params
            .iter()
            .map(|param| {
                let mut schema = json!({ "type": param.kind, "description": param.description });
                if param.kind == "string" {
                    schema["minLength"] = json!(1);
                }
                (param.name.to_owned(), schema)
            })
            .collect();
        let required: Vec<&str> = self
            .params
            .iter()
            .filter(|param| param.required)
            .map(|param| param.name)
            .collect();
        json!({
            "type": "object",
            "properties": properties,
            "required": required,
            "additionalProperties": false,
        })
    }

    /// The params in a few words: `{"id": string}`, `no params`.
    fn shape(&self) -> String {
        if self.params.is_empty() {
            return "no params".to_owned();
        }
        let fields: Vec<String> = self
            .params
            .iter()
            .map(|param| {
                let optional = if param.required { "" } else { "?" };
                format!("\"{}\"{optional}: {}", param.name, param.kind)
            })
            .collect();
        format!("{{{}}}", fields.join(", "))
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NoParams {}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Id {
    id: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Install {
    source: String,
    #[serde(default)]
    sha256: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ExecuteCommand {
    id: String,
    command: String,
    #[serde(default)]
    input: Option<Map<String, Value>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Service {
    plugin: String,
    service: String,
}

/// Runs `method` with `params`.
pub(super) async fn run(
    admin: &PluginAdmin,
    method: &str,
    params: Value,
) -> Result<Value, AdminError> {
    let Some(spec) = SPECS.iter().find(|spec| spec.method == method) else {
        return Err(AdminError::UnknownMethod {
            method: method.to_owned(),
        });
    };
    let manager = admin.manager().clone();
    // Listing takes the manager's lock, which a load holds while it compiles: off the async
    // threads, as every change is.
    match spec.kind {
        Kind::List => {
            let NoParams {} = parse(spec, params)?;
            let plugins = blocking(move || Ok(manager.list())).await?;
            let plugins: Vec<Value> = plugins.iter().map(plugin_json).collect();
            Ok(json!({ "plugins": plugins }))
        }
        Kind::Install => {
            let params: Install = parse(spec, params)?;
            install(admin, spec, params).await
        }
        Kind::Uninstall => {
            let Id { id } = parse(spec, params)?;
            let removed = blocking(move || manager.uninstall(&id).map(|dir| (id, dir))).await?;
            Ok(json!({ "id": removed.0, "removed": removed.1 }))
        }
        Kind::Enable => {
            let Id { id } = parse(spec, params)?;
            blocking(move || manager.enable(&id))
                .await
                .map(|info| plugin_json(&info))
        }
        Kind::Disable => {
            let Id { id } = parse(spec, params)?;
            blocking(move || manager.disable(&id))
                .await
                .map(|info| plugin_json(&info))
        }
        Kind::Reload => {
            let Id { id } = parse(spec, params)?;
            blocking(move || manager.reload(&id))
                .await
                .map(|info| plugin_json(&info))
        }
        Kind::ExecuteCommand => {
            let ExecuteCommand { id, command, input } = parse(spec, params)?;
            let input = Value::Object(input.unwrap_or_default());
            Ok(manager.execute_command(&id, &command, &input).await?)
        }
        Kind::Services => {
            let NoParams {} = parse(spec, params)?;
            let services = blocking(move || Ok(manager.services())).await?;
            let services: Vec<Value> = services.iter().map(service_json).collect();
            Ok(json!({ "services": services }))
        }
        Kind::ServiceStatus => {
            let Service { plugin, service } = parse(spec, params)?;
            let found = tokio::task::spawn_blocking(move || status(&manager, &plugin, &service))
                .await
                .map_err(|failed| AdminError::Interrupted(failed.to_string()))??;
            Ok(service_json(&found))
        }
        Kind::ServiceStart => {
            let Service { plugin, service } = parse(spec, params)?;
            let info = manager.start_service(&plugin, &service).await?;
            Ok(service_json(&info))
        }
        Kind::ServiceStop => {
            let Service { plugin, service } = parse(spec, params)?;
            let info = manager.stop_service(&plugin, &service).await?;
            Ok(service_json(&info))
        }
    }
}

/// `params` read as the method's params: an object (or nothing, for a method that takes
/// none), with no field it does not know and no empty name.
fn parse<T: DeserializeOwned>(spec: &Spec, params: Value) -> Result<T, AdminError> {
    let invalid = |problem: String| AdminError::InvalidParams {
        method: spec.method.to_owned(),
        expected: spec.shape(),
        problem,
    };
    let params = match params {
        Value::Null => Value::Object(Map::new()),
        Value::Object(object) => {
            if let Some((name, _)) = object.iter().find(|(name, value)| {
                *value == "" && spec.params.iter().any(|p| p.name == name.as_str())
            }) {
                return Err(invalid(format!("`{name}` is empty")));
            }
            Value::Object(object)
        }
        other => {
            return Err(invalid(format!(
                "params are given by name, as an object, not {}",
                kind(&other)
            )));
        }
    };
    serde_json::from_value(params).map_err(|error| invalid(error.to_string()))
}

/// Runs a manager method that blocks (it loads code, or touches files) off the async
/// threads.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, PluginError> + Send + 'static,
) -> Result<T, AdminError> {
    match tokio::task::spawn_blocking(work).await {
        Ok(result) => result.map_err(AdminError::from),
        Err(failed) => Err(AdminError::Interrupted(failed.to_string())),
    }
}

/// `plugins.install`: from a URL (downloaded, checked, then unpacked) or a path.
async fn install(admin: &PluginAdmin, spec: &Spec, params: Install) -> Result<Value, AdminError> {
    let Install { source, sha256 } = params;
    let invalid = |problem: String| AdminError::InvalidParams {
        method: spec.method.to_owned(),
        expected: spec.shape(),
        problem,
    };
    let sha256 = match sha256 {
        Some(hex) => Some(
            download::digest_from_hex(&hex)
                .map_err(|problem| invalid(format!("`sha256` {problem}")))?,
        ),
        None => None,
    };
    let manager = admin.manager().clone();
    let (held, file, named) = if source.contains("://") {
        let downloaded = download::fetch(&admin.inner.downloads, &source, sha256).await?;
        (Some(downloaded.dir), downloaded.path, Some(source))
    } else if let Some(expected) = sha256 {
        // The archive is copied and the copy checked and unpacked, so the file cannot change
        // between the check and the install.
        let path = PathBuf::from(&source);
        let copied = tokio::task::spawn_blocking(move || download::copy_checked(&path, &expected))
            .await
            .map_err(|failed| AdminError::Interrupted(failed.to_string()))?;
        match copied {
            Ok((dir, file)) => (Some(dir), file, Some(source)),
            Err(download::Refused::Directory) => {
                return Err(invalid(format!(
                    "`sha256` checks an archive, and `{source}` is a directory"
                )));
            }
            Err(download::Refused::Other(message)) => {
                return Err(PluginError::Install {
                    path: PathBuf::from(&source),
                    message,
                }
                .into());
            }
        }
    } else {
        (None, PathBuf::from(source), None)
    };
    let info = blocking(move || {
        let installed = manager.install(&file);
        drop(held);
        match named {
            Some(named) => installed.map_err(|error| named_for(error, &named)),
            None => installed,
        }
    })
    .await?;
    Ok(plugin_json(&info))
}

/// An install error about a copy (a download, or an archive copied to be checked), told of
/// the source it came from.
fn named_for(error: PluginError, url: &str) -> PluginError {
    match error {
        PluginError::Install { message, .. } => PluginError::Install {
            path: PathBuf::from(url),
            message,
        },
        other => other,
    }
}

/// The service `service` of plugin `plugin`.
fn status(manager: &PluginManager, plugin: &str, service: &str) -> Result<ServiceInfo, AdminError> {
    let services = manager.services();
    if let Some(info) = services
        .iter()
        .find(|info| info.plugin == plugin && info.name == service)
    {
        return Ok(info.clone());
    }
    if manager.get(plugin).is_none() {
        return Err(PluginError::NotFound(plugin.to_owned()).into());
    }
    let known: Vec<&str> = services
        .iter()
        .filter(|info| info.plugin == plugin)
        .map(|info| info.name.as_str())
        .collect();
    Err(PluginError::Service {
        plugin: plugin.to_owned(),
        service: service.to_owned(),
        message: format!(
            "no such service among those running; it has: {}",
            if known.is_empty() {
                "none".to_owned()
            } else {
                known.join(", ")
            }
        ),
    }
    .into())
}

/// A plugin as the API reports it.
pub(super) fn plugin_json(info: &PluginInfo) -> Value {
    let (status, error) = match &info.status {
        PluginStatus::Error(message) => ("error".to_owned(), Some(message.as_str())),
        other => (other.to_string(), None),
    };
    let mut plugin = json!({
        "id": info.id,
        "name": info.name,
        "version": info.version.as_ref().map(ToString::to_string),
        "kind": info.kind.map(|kind| kind.to_string()),
        "dir": info.dir,
        "status": status,
        "tools": info.tools,
        "commands": info.commands,
        "sandbox": info.sandbox,
        "dropped": info.dropped,
    });
    if let Some(error) = error {
        plugin["error"] = json!(error);
    }
    plugin
}

/// A service as the API reports it.
fn service_json(info: &ServiceInfo) -> Value {
    let (state, error) = match &info.state {
        ServiceState::Failed(reason) => ("failed".to_owned(), Some(reason.as_str())),
        other => (other.to_string(), None),
    };
    let mut service = json!({
        "plugin": info.plugin,
        "service": info.name,
        "description": info.description,
        "autoStart": info.auto_start,
        "state": state,
    });
    if let Some(error) = error {
        service["error"] = json!(error);
    }
    service
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_methods_listed_are_those_specified() {
        let specified: Vec<&str> = SPECS.iter().map(|spec| spec.method).collect();
        assert_eq!(specified, METHODS);
    }
}
