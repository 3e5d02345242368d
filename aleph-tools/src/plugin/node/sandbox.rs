//! What a Node.js plugin may reach: the `node` program found and its version checked, the
//! manifest's grants turned into an OS sandbox policy and Node's own permission flags, and
//! the environment cut down to what the manifest lists.

use std::ffi::OsString;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::super::config::NodeConfig;
use super::super::manifest::LoadedManifest;
use super::connection::Spawn;
use crate::sandbox::{Network, Sandbox};

/// The `node` program plugins run on.
#[derive(Debug, Clone)]
pub(super) struct NodeBinary {
    pub(super) path: PathBuf,
    pub(super) version: semver::Version,
}

/// How the installed Node restricts a process, by version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum PermissionModel {
    /// `--permission` (Node 22.13 and 23.5 onward).
    Stable,
    /// `--experimental-permission` (Node 20 to 22.12, 23.0 to 23.4).
    Experimental,
    /// None (before Node 20): the plugin can reach every file and start processes.
    Missing,
}

impl NodeBinary {
    /// Finds `config.node` (a path, or a name in `PATH`) and reads its version.
    pub(super) fn find(config: &NodeConfig) -> Result<Self, String> {
        let path = crate::sandbox::locate(config.node.as_os_str())
            .filter(|path| path.is_file())
            .ok_or_else(|| {
            format!(
                "cannot find `{}`: Node.js plugins need Node.js 20 or newer on `PATH`, or `[plugins.runtimes.nodejs] node = \"/path/to/node\"`",
                config.node.display()
            )
        })?;
        let output = std::process::Command::new(&path)
            .arg("--version")
            .output()
            .map_err(|e| format!("cannot run `{} --version`: {e}", path.display()))?;
        let text = String::from_utf8_lossy(&output.stdout);
        let version =
            semver::Version::parse(text.trim().trim_start_matches('v')).map_err(|_| {
                format!(
                    "`{} --version` printed `{}`, not a Node.js version",
                    path.display(),
                    text.trim()
                )
            })?;
        if let Some(range) = &config.node_version
            && !range.matches(&version)
        {
            return Err(format!(
                "`{}` is Node.js {version}, and `[plugins.runtimes.nodejs] node_version` asks for `{range}`; install a matching Node.js or change the setting",
                path.display()
            ));
        }
        Ok(Self { path, version })
    }

    pub(super) fn permission_model(&self) -> PermissionModel {
        let v = &self.version;
        match (v.major, v.minor) {
            (24.., _) | (23, 5..) | (22, 13..) => PermissionModel::Stable,
            (20..=23, _) => PermissionModel::Experimental,
            _ => PermissionModel::Missing,
        }
    }
}

/// How to start the plugin, and a sentence saying what its sandbox enforces.
pub(super) fn spawn_for(
    binary: &NodeBinary,
    loaded: &LoadedManifest,
    config: &NodeConfig,
) -> (Spawn, String) {
    let permissions = &loaded.manifest.permissions;
    let mut args: Vec<OsString> = Vec::new();
    let policy = policy(&config.sandbox, loaded);
    let mut report = format!("{}; Node.js {}", policy.describe(), binary.version);
    let model = binary.permission_model();
    if model == PermissionModel::Missing {
        report.push_str(
            ": no permission model before Node.js 20, so files and processes are not restricted",
        );
    } else {
        args.push(
            if model == PermissionModel::Stable {
                "--permission"
            } else {
                "--experimental-permission"
            }
            .into(),
        );
        let mut read = vec![loaded.dir.clone()];
        let mut written = Vec::new();
        for mount in permissions.mounts(&loaded.dir) {
            read.push(mount.host.clone());
            if !mount.read_only {
                written.push(mount.host);
            }
        }
        for dir in &read {
            args.push(flag("--allow-fs-read=", dir));
        }
        for dir in &written {
            args.push(flag("--allow-fs-write=", dir));
        }
        let _ = write!(
            report,
            ": files readable in the plugin's directory and {} granted path(s), writable in {}",
            read.len() - 1,
            written.len()
        );
        if permissions.child_process {
            args.push("--allow-child-process".into());
            report.push_str("; may start processes");
        } else {
            report.push_str("; no processes, worker threads or native addons");
        }
    }

    let mut env: Vec<(String, OsString)> = Vec::new();
    if let Some(path) = std::env::var_os("PATH") {
        env.push(("PATH".into(), path));
    }
    for name in &permissions.env {
        if let Some(value) = std::env::var_os(name) {
            env.push((name.clone(), value));
        }
    }
    let _ = write!(
        report,
        "; environment: PATH and {} listed variable(s)",
        permissions.env.len()
    );
    args.push(
        loaded
            .entry()
            .unwrap_or_else(|| loaded.dir.join("index.js"))
            .into(),
    );
    let spawn = Spawn {
        node: binary.path.clone(),
        args,
        dir: loaded.dir.clone(),
        env,
        sandbox: policy,
    };
    (spawn, report)
}

/// The OS sandbox a plugin runs in: the runtime's policy (its limits, and paths granted to
/// every plugin), with the plugin's directory and granted directories readable, the
/// directories granted `write:` writable, and, for a plugin granted hosts, the network
/// through the sandbox's proxy to those hosts alone (the whole network where the runtime's
/// policy already grants it).
fn policy(base: &Sandbox, loaded: &LoadedManifest) -> Sandbox {
    if !base.is_enabled() {
        return base.clone();
    }
    let permissions = &loaded.manifest.permissions;
    let mut policy = base.clone();
    // A plugin's own directory holds its code (a change reloads it): never writable, even
    // through the `"."` a written-out table starts from. Its `write:` grants are its own.
    policy
        .write
        .retain(|path| path.as_os_str() != "." && path.as_os_str() != "./");
    let mut policy = policy.read(&loaded.dir);
    for mount in permissions.mounts(&loaded.dir) {
        policy = if mount.read_only {
            policy.read(mount.host)
        } else {
            policy.write(mount.host)
        };
    }
    if !permissions.network.is_empty() && policy.network != Network::Full {
        policy = policy.network(Network::proxy(permissions.network.iter().cloned()));
    }
    policy
}

fn flag(name: &str, path: &Path) -> OsString {
    let mut flag = OsString::from(name);
    flag.push(path);
    flag
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_permission_model_follows_the_version() {
        let model = |v: &str| {
            NodeBinary {
                path: PathBuf::new(),
                version: v.parse().unwrap(),
            }
            .permission_model()
        };
        assert_eq!(model("18.19.0"), PermissionModel::Missing);
        assert_eq!(model("20.20.2"), PermissionModel::Experimental);
        assert_eq!(model("22.12.0"), PermissionModel::Experimental);
        assert_eq!(model("22.13.0"), PermissionModel::Stable);
        assert_eq!(model("23.4.0"), PermissionModel::Experimental);
        assert_eq!(model("24.19.0"), PermissionModel::Stable);
    }

    #[test]
    fn a_missing_node_says_what_to_do() {
        let config = NodeConfig {
            node: PathBuf::from("node-that-is-not-installed"),
            ..NodeConfig::default()
        };
        let error = NodeBinary::find(&config).unwrap_err();
        assert!(error.contains("node-that-is-not-installed"), "{error}");
        assert!(error.contains("[plugins.runtimes.nodejs]"), "{error}");
    }
}
