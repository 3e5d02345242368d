//! `[permissions]`: what the sandbox lets a plugin reach, and the rules that turn each grant
//! into a host name or a directory mount.

use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};

/// `[permissions]`. Nothing is granted unless listed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct Permissions {
    /// Hosts the plugin may send HTTP requests to: `"connect:https://api.example.com"`,
    /// `"connect:*.example.com"`, `"connect:*"`.
    pub network: Vec<String>,
    /// Directories it may use: `"read:./data"` (read-only) or `"write:./output"`, relative to
    /// the plugin's directory or absolute. Each is mounted at the same path inside the plugin,
    /// relative ones under `/`.
    pub filesystem: Vec<String>,
    /// Environment variables it may read: handed to a WebAssembly plugin as config keys of
    /// the same name, and to a Node.js plugin's process as its environment (with `PATH`).
    pub env: Vec<String>,
    /// Whether a Node.js plugin may start processes of its own. Refused for other kinds,
    /// which cannot.
    pub child_process: bool,
}

/// One directory a plugin may use.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Mount {
    /// The directory on the host.
    pub host: PathBuf,
    /// Where the plugin sees it.
    pub guest: PathBuf,
    /// Whether writes are refused.
    pub read_only: bool,
}

impl Permissions {
    /// The host patterns of the `network` list, in Extism's form (`api.example.com`,
    /// `*.example.com`).
    pub fn allowed_hosts(&self) -> Vec<String> {
        self.network
            .iter()
            .filter_map(|rule| crate::util::hosts::parse_rule(rule).ok())
            .collect()
    }

    /// The `filesystem` list as mounts, relative paths taken from `plugin_dir`.
    pub fn mounts(&self, plugin_dir: &Path) -> Vec<Mount> {
        self.filesystem
            .iter()
            .filter_map(|rule| parse_filesystem(rule, plugin_dir).ok())
            .collect()
    }
}

pub(in crate::plugin) fn parse_filesystem(rule: &str, plugin_dir: &Path) -> Result<Mount, String> {
    let (read_only, path) = if let Some(path) = rule.strip_prefix("read:") {
        (true, path)
    } else if let Some(path) = rule.strip_prefix("write:") {
        (false, path)
    } else {
        return Err(format!(
            "`{rule}` must start with `read:` or `write:`, as in `read:./data`"
        ));
    };
    if path.is_empty() {
        return Err(format!("`{rule}` names no directory"));
    }
    let path = Path::new(path);
    if path.is_absolute() {
        return Ok(Mount {
            host: path.to_path_buf(),
            guest: path.to_path_buf(),
            read_only,
        });
    }
    let relative = inside(path).ok_or_else(|| {
        format!("`{rule}` leaves the plugin's directory; use a path inside it or an absolute one")
    })?;
    Ok(Mount {
        host: plugin_dir.join(&relative),
        guest: Path::new("/").join(relative),
        read_only,
    })
}

/// `path` without `.` parts, or `None` when it climbs out with `..` or is absolute.
pub(super) fn inside(path: &Path) -> Option<PathBuf> {
    let mut clean = PathBuf::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::Normal(name) => clean.push(name),
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    Some(clean)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filesystem_rules_become_mounts() {
        let dir = Path::new("/plugins/p");
        let mount = parse_filesystem("read:./data", dir).unwrap();
        assert_eq!(mount.host, Path::new("/plugins/p/data"));
        assert_eq!(mount.guest, Path::new("/data"));
        assert!(mount.read_only);
        assert!(!parse_filesystem("write:/tmp/out", dir).unwrap().read_only);
        assert!(
            parse_filesystem("read:../secrets", dir)
                .unwrap_err()
                .contains("leaves")
        );
        assert!(parse_filesystem("data", dir).unwrap_err().contains("read:"));
        assert!(parse_filesystem("read:", dir).is_err());
    }
}
