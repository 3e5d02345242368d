//! `[plugins.policy]`: what the host lets any manifest be granted. A manifest asks; the
//! policy caps what it may get.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::manifest::{Permissions, parse_filesystem};
use crate::util::hosts::{covers as host_covers, parse_rule as parse_network, rule_port};

/// The host's cap on plugin permissions: `[plugins.policy]`.
///
/// ```toml
/// [plugins.policy]
/// mode = "refuse"                               # or "trim"
/// network = ["connect:*.example.com"]           # hosts a manifest may be granted
/// filesystem = ["read:/usr/share/dict", "write:/var/lib/agent"]
/// env = ["OPENAI_API_KEY", "WEATHER_*"]
/// child_process = false
///
/// [plugins.policy.plugins.weather]              # one plugin's own cap
/// network = ["connect:api.open-meteo.com"]
/// ```
///
/// A grant the policy does not cover is refused, and so the plugin does not load, with what
/// it asked and what the policy allows ([`PolicyMode::Refuse`]); or the grant is dropped and
/// the plugin loads without it ([`PolicyMode::Trim`]), listed in
/// [`PluginInfo::dropped`](super::PluginInfo::dropped).
///
/// The defaults let a plugin have any host and any variable it asks for, and files only
/// inside its own directory: a `filesystem` grant anywhere else needs a root here that holds
/// it, and `child_process` (which escapes Node's file rules) needs `child_process = true`.
/// Paths are compared after `..` and symbolic links are resolved, so neither leads out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct PermissionPolicy {
    /// What happens to a manifest that asks for more than the policy allows.
    pub mode: PolicyMode,
    /// The hosts a plugin may be granted, in the manifest's syntax: `"connect:*"` (any, the
    /// default), `"connect:*.example.com"` (its subdomains), `"connect:api.example.com"`.
    pub network: Vec<String>,
    /// Directories, besides its own, where a plugin's `filesystem` grants may lie:
    /// `"read:/srv/shared"` covers read grants inside it, `"write:/srv/out"` read and write
    /// grants. Relative paths are taken from the current directory, `~/` is the home
    /// directory. None by default.
    pub filesystem: Vec<String>,
    /// The environment variables a plugin may be handed: names, `PREFIX_*`, or `*` (any, the
    /// default).
    pub env: Vec<String>,
    /// Whether a Node.js plugin may be allowed to start processes (which are not bound by
    /// Node's permission model). Off by default.
    pub child_process: bool,
    /// Caps for single plugins, by id. A key set here replaces the one above for that
    /// plugin.
    pub plugins: BTreeMap<String, PolicyOverride>,
}

impl Default for PermissionPolicy {
    fn default() -> Self {
        Self {
            mode: PolicyMode::Refuse,
            network: vec!["connect:*".to_owned()],
            filesystem: Vec::new(),
            env: vec!["*".to_owned()],
            child_process: false,
            plugins: BTreeMap::new(),
        }
    }
}

/// One plugin's cap: `[plugins.policy.plugins.<id>]`. Each key set replaces the policy's.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct PolicyOverride {
    /// Replaces [`PermissionPolicy::mode`].
    pub mode: Option<PolicyMode>,
    /// Replaces [`PermissionPolicy::network`].
    pub network: Option<Vec<String>>,
    /// Replaces [`PermissionPolicy::filesystem`].
    pub filesystem: Option<Vec<String>>,
    /// Replaces [`PermissionPolicy::env`].
    pub env: Option<Vec<String>>,
    /// Replaces [`PermissionPolicy::child_process`].
    pub child_process: Option<bool>,
}

/// What a policy does with a grant it does not cover.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum PolicyMode {
    /// The plugin does not load; the error names each grant and what the policy allows.
    #[default]
    Refuse,
    /// The plugin loads without the grants the policy does not cover.
    Trim,
}

/// What a manifest gets under a policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Granted {
    /// The permissions the plugin runs with.
    pub permissions: Permissions,
    /// The grants it asked for and does not get (empty unless trimming).
    pub dropped: Vec<String>,
}

/// The policy as it applies to one plugin.
struct Caps<'a> {
    mode: PolicyMode,
    network: &'a [String],
    filesystem: &'a [String],
    env: &'a [String],
    child_process: bool,
    /// Where these caps are set, for messages: `[plugins.policy]` or the plugin's own table.
    table: String,
}

impl PermissionPolicy {
    /// Checks every rule of the policy, naming the first one that cannot be read.
    ///
    /// # Errors
    ///
    /// The key (`plugins.policy.network[1]`) and what is wrong with it.
    pub fn check(&self) -> Result<(), String> {
        let tables = std::iter::once(("plugins.policy".to_owned(), self.caps_for(""))).chain(
            self.plugins
                .keys()
                .map(|id| (format!("plugins.policy.plugins.{id}"), self.caps_for(id))),
        );
        for (table, caps) in tables {
            for (i, rule) in caps.network.iter().enumerate() {
                parse_network(rule).map_err(|e| format!("`{table}.network[{i}]`: {e}"))?;
            }
            for (i, rule) in caps.filesystem.iter().enumerate() {
                policy_root(rule).map_err(|e| format!("`{table}.filesystem[{i}]`: {e}"))?;
            }
        }
        Ok(())
    }

    fn caps_for(&self, id: &str) -> Caps<'_> {
        let own = self.plugins.get(id);
        Caps {
            mode: own.and_then(|o| o.mode).unwrap_or(self.mode),
            network: own
                .and_then(|o| o.network.as_deref())
                .unwrap_or(&self.network),
            filesystem: own
                .and_then(|o| o.filesystem.as_deref())
                .unwrap_or(&self.filesystem),
            env: own.and_then(|o| o.env.as_deref()).unwrap_or(&self.env),
            child_process: own
                .and_then(|o| o.child_process)
                .unwrap_or(self.child_process),
            table: if own.is_some() {
                format!("[plugins.policy.plugins.{id}]")
            } else {
                "[plugins.policy]".to_owned()
            },
        }
    }

    /// What plugin `id` in `dir` gets of what it `asked` for.
    ///
    /// # Errors
    ///
    /// Under [`PolicyMode::Refuse`], every grant the policy does not cover, each with what
    /// the policy allows instead; also a policy rule that cannot be read.
    pub(super) fn grant(
        &self,
        id: &str,
        asked: &Permissions,
        dir: &Path,
    ) -> Result<Granted, String> {
        self.check()?;
        let caps = self.caps_for(id);
        let mut permissions = asked.clone();
        let mut refused = Vec::new();

        let hosts: Vec<(String, Option<u16>)> = caps
            .network
            .iter()
            .filter_map(|rule| Some((parse_network(rule).ok()?, rule_port(rule))))
            .collect();
        permissions.network.retain(|rule| {
            let Ok(host) = parse_network(rule) else {
                return true;
            };
            let covered = network_covered(&hosts, &host, rule_port(rule));
            if !covered {
                refused.push((
                    rule.clone(),
                    format!(
                        "the hosts allowed are {}",
                        listed(caps.network, "none (`network = []`)")
                    ),
                ));
            }
            covered
        });

        let plugin_dir = resolve(dir);
        let roots: Vec<(PathBuf, bool)> = caps
            .filesystem
            .iter()
            .filter_map(|rule| policy_root(rule).ok())
            .collect();
        permissions.filesystem.retain(|rule| {
            let Ok(mount) = parse_filesystem(rule, dir) else {
                return true;
            };
            let path = resolve(&mount.host);
            let covered = path.starts_with(&plugin_dir)
                || roots.iter().any(|(root, writable)| {
                    path.starts_with(root) && (mount.read_only || *writable)
                });
            if !covered {
                let mut why = format!(
                    "`{}` is outside the plugin's directory, and the policy's roots are {}",
                    path.display(),
                    listed(caps.filesystem, "none")
                );
                if !mount.read_only && roots.iter().any(|(root, _)| path.starts_with(root)) {
                    why.push_str(" (read-only there)");
                }
                refused.push((rule.clone(), why));
            }
            covered
        });

        permissions.env.retain(|name| {
            let covered = caps.env.iter().any(|cap| env_covers(cap, name));
            if !covered {
                refused.push((
                    format!("env {name}"),
                    format!(
                        "the variables allowed are {}",
                        listed(caps.env, "none (`env = []`)")
                    ),
                ));
            }
            covered
        });

        if permissions.child_process && !caps.child_process {
            permissions.child_process = false;
            refused.push((
                "child_process".to_owned(),
                "processes are not allowed (`child_process = false`)".to_owned(),
            ));
        }

        if refused.is_empty() || caps.mode == PolicyMode::Trim {
            return Ok(Granted {
                permissions,
                dropped: refused.into_iter().map(|(grant, _)| grant).collect(),
            });
        }
        let mut message = format!("it asks for more than {} allows:", caps.table);
        for (grant, why) in &refused {
            let _ = write!(message, " `{grant}` ({why});");
        }
        message.pop();
        let _ = write!(
            message,
            ". Widen {} or remove the grant{} from the manifest",
            caps.table,
            if refused.len() == 1 { "" } else { "s" }
        );
        Err(message)
    }
}

/// A policy `filesystem` rule as an absolute root and whether it allows writes.
fn policy_root(rule: &str) -> Result<(PathBuf, bool), String> {
    let (writable, path) = if let Some(path) = rule.strip_prefix("read:") {
        (false, path)
    } else if let Some(path) = rule.strip_prefix("write:") {
        (true, path)
    } else {
        return Err(format!(
            "`{rule}` must start with `read:` or `write:`, as in `read:/srv/shared`"
        ));
    };
    if path.is_empty() {
        return Err(format!("`{rule}` names no directory"));
    }
    let path = match path.strip_prefix("~/") {
        Some(rest) => std::env::var_os("HOME")
            .map(|home| PathBuf::from(home).join(rest))
            .ok_or_else(|| format!("`{rule}` starts with `~/` and there is no HOME"))?,
        None => std::env::current_dir()
            .map_err(|e| format!("`{rule}` is relative and the current directory is unknown: {e}"))?
            .join(path),
    };
    Ok((resolve(&path), writable))
}

/// `path` made absolute, with `.` and `..` taken out and the symbolic links of the part that
/// exists followed, so it names where a grant really leads.
fn resolve(path: &Path) -> PathBuf {
    let clean = super::tree::lexical(path);
    let mut existing = clean.as_path();
    let mut rest = Vec::new();
    loop {
        if let Ok(real) = std::fs::canonicalize(existing) {
            return rest.iter().rev().fold(real, |path, part| path.join(part));
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_owned());
                existing = parent;
            }
            _ => return clean,
        }
    }
}

/// Whether the policy's variable pattern `cap` covers the variable `name`.
fn env_covers(cap: &str, name: &str) -> bool {
    match cap.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => cap == name,
    }
}

fn listed(rules: &[String], none: &str) -> String {
    if rules.is_empty() {
        none.to_owned()
    } else {
        rules
            .iter()
            .map(|r| format!("`{r}`"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Whether a cap among `caps` covers `host` on `port`: a cap with a port covers a grant of
/// that port alone (a grant without a port asks for every port), one without covers any.
fn network_covered(caps: &[(String, Option<u16>)], host: &str, port: Option<u16>) -> bool {
    caps.iter()
        .any(|(cap, cap_port)| host_covers(cap, host) && (cap_port.is_none() || *cap_port == port))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cap_with_a_port_covers_that_port_alone() {
        let caps = vec![
            ("localhost".to_owned(), Some(3000)),
            ("*.example.com".to_owned(), None),
        ];
        assert!(network_covered(&caps, "localhost", Some(3000)));
        assert!(!network_covered(&caps, "localhost", Some(6379)));
        // A grant without a port asks for every port: more than the cap allows.
        assert!(!network_covered(&caps, "localhost", None));
        assert!(network_covered(&caps, "api.example.com", None));
        assert!(network_covered(&caps, "api.example.com", Some(8443)));
        assert!(!network_covered(&caps, "example.org", Some(443)));
    }

    #[test]
    fn variable_patterns() {
        assert!(env_covers("*", "HOME"));
        assert!(env_covers("WEATHER_*", "WEATHER_KEY"));
        assert!(!env_covers("WEATHER_*", "AWS_SECRET"));
        assert!(env_covers("HOME", "HOME"));
        assert!(!env_covers("HOME", "HOMER"));
    }

    #[cfg(unix)]
    #[test]
    fn paths_resolve_dot_dot_and_links() {
        let dir = std::env::temp_dir().join(format!("aleph-policy-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let real = std::fs::canonicalize(&dir).unwrap();
        let _ = std::fs::remove_file(real.join("link"));
        assert_eq!(resolve(&real.join("a/../b/./c")), real.join("b/c"));
        std::os::unix::fs::symlink("/etc", real.join("link")).unwrap();
        assert_eq!(
            resolve(&real.join("link/passwd")),
            std::fs::canonicalize("/etc").unwrap().join("passwd")
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn bad_rules_are_named() {
        let policy = PermissionPolicy {
            filesystem: vec!["/srv".into()],
            ..PermissionPolicy::default()
        };
        let error = policy.check().unwrap_err();
        assert!(error.contains("plugins.policy.filesystem[0]"), "{error}");
        let mut policy = PermissionPolicy::default();
        policy.plugins.insert(
            "w".into(),
            PolicyOverride {
                network: Some(vec!["api.example.com".into()]),
                ..PolicyOverride::default()
            },
        );
        let error = policy.check().unwrap_err();
        assert!(
            error.contains("plugins.policy.plugins.w.network[0]"),
            "{error}"
        );
    }
}
