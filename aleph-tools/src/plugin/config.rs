//! The `[plugins]` settings: where plugins live, hot reload, and the sandbox limits.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::policy::PermissionPolicy;

/// Settings for plugins, in the shape of an `[plugins]` table:
///
/// ```toml
/// [plugins]
/// enabled = true
/// search_paths = ["~/.aleph/plugins", "./plugins"]
/// hot_reload = true
/// disabled = []                 # plugin ids found but not run
///
/// [plugins.runtimes.wasm]
/// enabled = true
/// memory_limit = "256MB"
/// timeout_ms = 30000
/// fuel = 10000000000
/// pool_size = 2
/// max_output = "16MB"
///
/// [plugins.runtimes.nodejs]
/// enabled = true
/// node = "node"
/// node_version = ">=20"
/// timeout_ms = 30000
/// start_timeout_ms = 10000
/// shutdown_grace_ms = 2000
/// max_message = "16MB"
/// restart = { max_restarts = 5, backoff_ms = 200, max_backoff_ms = 10000 }
///
/// [plugins.policy]
/// network = ["connect:*"]
/// env = ["*"]
///
/// [plugins.routes]
/// max_body = "2MB"
/// ```
///
/// The table may also be named `[extensions]`. Every key may be left out; [`Default`]
/// gives the values above except `search_paths`, which defaults to the three standard
/// directories ([`PluginsConfig::standard_paths`]), and `node_version`, which is unchecked
/// unless set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct PluginsConfig {
    /// Whether plugins load at all.
    pub enabled: bool,
    /// Directories searched for plugins, each holding one directory per plugin. A leading
    /// `~/` is the user's home directory; relative paths are taken from the current directory.
    pub search_paths: Vec<PathBuf>,
    /// Whether [`PluginManager::watch`](super::PluginManager::watch) reloads plugins
    /// whose files change.
    pub hot_reload: bool,
    /// Ids of plugins that are found but not run until enabled
    /// ([`Plugin::enable`](super::Plugin::enable)).
    pub disabled: Vec<String>,
    /// Settings per runtime.
    pub runtimes: RuntimesConfig,
    /// What any plugin may be granted, whatever its manifest asks.
    pub policy: PermissionPolicy,
    /// How plugins' HTTP routes are served.
    pub routes: RoutesConfig,
}

impl Default for PluginsConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            search_paths: Self::standard_paths(),
            hot_reload: true,
            disabled: Vec::new(),
            runtimes: RuntimesConfig::default(),
            policy: PermissionPolicy::default(),
            routes: RoutesConfig::default(),
        }
    }
}

impl PluginsConfig {
    /// The three standard places, in the order they are searched: the user's plugins
    /// (`~/.aleph/plugins`), the system's (`/usr/local/share/aleph/plugins`) and the
    /// project's (`./plugins`). A plugin id found twice loads from the first place only.
    pub fn standard_paths() -> Vec<PathBuf> {
        vec![
            PathBuf::from("~/.aleph/plugins"),
            PathBuf::from("/usr/local/share/aleph/plugins"),
            PathBuf::from("./plugins"),
        ]
    }

    /// Settings that search only `paths`, with every other value at its default.
    pub fn with_search_paths(paths: impl IntoIterator<Item = impl Into<PathBuf>>) -> Self {
        Self {
            search_paths: paths.into_iter().map(Into::into).collect(),
            ..Self::default()
        }
    }

    /// Reads the settings from TOML text holding a `[plugins]` table, or the same table
    /// named `[extensions]` (other tables are ignored, so a whole application config file may
    /// be passed).
    ///
    /// # Errors
    ///
    /// The TOML error, with line and column, when the text is not valid TOML or a key has the
    /// wrong type or an unknown name; a policy rule that cannot be read.
    pub fn from_toml(text: &str) -> Result<Self, toml::de::Error> {
        #[derive(Deserialize)]
        struct Root {
            #[serde(default)]
            plugins: Option<PluginsConfig>,
            #[serde(default)]
            extensions: Option<PluginsConfig>,
        }
        let root = toml::from_str::<Root>(text)?;
        let config = match (root.plugins, root.extensions) {
            (Some(_), Some(_)) => {
                return Err(serde::de::Error::custom(
                    "both `[plugins]` and `[extensions]` are set; they are the same table, so keep one",
                ));
            }
            (plugins, extensions) => plugins.or(extensions).unwrap_or_default(),
        };
        config.policy.check().map_err(serde::de::Error::custom)?;
        Ok(config)
    }

    /// The search paths with `~/` expanded to the home directory. A `~/` path is left out when
    /// there is no `HOME`.
    pub fn resolved_search_paths(&self) -> Vec<PathBuf> {
        self.search_paths
            .iter()
            .filter_map(|path| match path.strip_prefix("~") {
                Ok(rest) => std::env::var_os("HOME").map(|home| PathBuf::from(home).join(rest)),
                Err(_) => Some(path.clone()),
            })
            .collect()
    }
}

/// Plugins' HTTP routes: `[plugins.routes]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct RoutesConfig {
    /// The largest request body a route accepts (`"2MB"`); a larger one is answered 413.
    pub max_body: ByteSize,
}

impl Default for RoutesConfig {
    fn default() -> Self {
        Self {
            max_body: ByteSize::mib(2),
        }
    }
}

/// Settings per runtime: `[plugins.runtimes.*]`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct RuntimesConfig {
    /// `[plugins.runtimes.wasm]`.
    pub wasm: WasmConfig,
    /// `[plugins.runtimes.nodejs]`.
    pub nodejs: NodeConfig,
}

/// The WebAssembly sandbox: `[plugins.runtimes.wasm]`. Every limit applies to every
/// plugin, whatever its manifest says.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct WasmConfig {
    /// Whether WebAssembly plugins load.
    pub enabled: bool,
    /// The most linear memory one plugin instance may grow to (`"256MB"`).
    pub memory_limit: ByteSize,
    /// How long one call may run, in milliseconds, before it is interrupted.
    pub timeout_ms: u64,
    /// The fuel (roughly, WebAssembly instructions) one call may spend, instantiation
    /// included. The timeout cannot stop a module's start function; fuel does.
    pub fuel: u64,
    /// How many instances of one plugin may run calls at the same time.
    pub pool_size: usize,
    /// The largest output a call may return (`"16MB"`).
    pub max_output: ByteSize,
    /// The address space each instance reserves for its linear memory (`"300MB"`). Left
    /// out, the engine's default: on 64-bit machines 4 GiB and guard pages per instance,
    /// address space only (no memory is used), which lets compiled code skip bounds checks.
    /// A process under an address-space limit (`ulimit -v`, `RLIMIT_AS`) cannot reserve that
    /// and no plugin loads: set this (to `"64MB"`, say), and each instance reserves only
    /// that, its memories growing to `memory_limit` by moving, with bounds checked in code
    /// (somewhat slower).
    pub memory_reservation: Option<ByteSize>,
}

impl Default for WasmConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            memory_limit: ByteSize::mib(256),
            timeout_ms: 30_000,
            fuel: 10_000_000_000,
            pool_size: 2,
            max_output: ByteSize::mib(16),
            memory_reservation: None,
        }
    }
}

impl WasmConfig {
    /// The per-call timeout as a [`Duration`].
    pub fn timeout(&self) -> Duration {
        Duration::from_millis(self.timeout_ms)
    }
}

/// Node.js plugins: `[plugins.runtimes.nodejs]`. Every plugin process is started, timed and
/// restarted by these settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct NodeConfig {
    /// Whether Node.js plugins load.
    pub enabled: bool,
    /// The `node` program: a path, or a name looked up in `PATH`.
    pub node: PathBuf,
    /// The Node.js versions plugins may run on (`">=20"`; a bare `"20"` means 20.x); any
    /// when left out. A `node` outside the range is a load error.
    pub node_version: Option<semver::VersionReq>,
    /// How long one call may run, in milliseconds, when the manifest's tool sets no
    /// `timeout_ms`. The call is then cancelled in the plugin and fails with a timeout.
    pub timeout_ms: u64,
    /// How long a starting process has to answer `initialize`, in milliseconds.
    pub start_timeout_ms: u64,
    /// How long a stopping process has, after `shutdown`, before it is killed.
    pub shutdown_grace_ms: u64,
    /// The largest message either side may write (`"16MB"`). A call whose request or answer
    /// is larger fails; the plugin keeps running.
    pub max_message: ByteSize,
    /// What happens when a process dies.
    pub restart: RestartPolicy,
    /// The OS sandbox every plugin process runs in (`[plugins.runtimes.nodejs.sandbox]`): its
    /// limits, and paths granted to every plugin. Each manifest's `[permissions]` add the
    /// plugin's own directory and grants; by default nothing else is writable and there is
    /// no network. `enabled = false` runs plugins with the host's rights (Node's permission
    /// flags alone).
    pub sandbox: crate::sandbox::Sandbox,
}

impl Default for NodeConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            node: PathBuf::from("node"),
            node_version: None,
            timeout_ms: 30_000,
            start_timeout_ms: 10_000,
            shutdown_grace_ms: 2_000,
            max_message: ByteSize::mib(16),
            restart: RestartPolicy::default(),
            sandbox: crate::sandbox::Sandbox::new().no_writes(),
        }
    }
}

impl NodeConfig {
    /// The per-call timeout as a [`Duration`].
    pub fn timeout(&self) -> Duration {
        Duration::from_millis(self.timeout_ms)
    }
}

/// How a plugin process that died is restarted: after `backoff_ms`, doubling with each
/// crash in a row up to `max_backoff_ms`, at most `max_restarts` times in a row; then the
/// plugin stays in [`Error`](super::PluginStatus::Error) until it is reloaded. A process that
/// ran for a minute before it died starts the count again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct RestartPolicy {
    /// Restarts in a row before giving up; `0` never restarts.
    pub max_restarts: u32,
    /// The wait before the first restart, in milliseconds.
    pub backoff_ms: u64,
    /// The longest wait between restarts, in milliseconds.
    pub max_backoff_ms: u64,
}

impl Default for RestartPolicy {
    fn default() -> Self {
        Self {
            max_restarts: 5,
            backoff_ms: 200,
            max_backoff_ms: 10_000,
        }
    }
}

impl RestartPolicy {
    /// The wait before restart number `attempt` (counting from 1).
    pub fn backoff(&self, attempt: u32) -> Duration {
        let factor = 1u64 << attempt.saturating_sub(1).min(20);
        Duration::from_millis(
            self.backoff_ms
                .saturating_mul(factor)
                .min(self.max_backoff_ms.max(self.backoff_ms)),
        )
    }
}

/// A number of bytes, written in config files as `"256MB"`, `"64 KiB"`, `"1GB"` or a plain
/// number. `KB`, `MB` and `GB` are powers of 1024, as memory sizes are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ByteSize(pub u64);

impl ByteSize {
    /// `n` mebibytes.
    pub const fn mib(n: u64) -> Self {
        Self(n * 1024 * 1024)
    }

    /// The number of bytes.
    pub const fn bytes(self) -> u64 {
        self.0
    }
}

impl fmt::Display for ByteSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const UNITS: [(&str, u64); 3] = [("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)];
        for (unit, size) in UNITS {
            if self.0 >= size && self.0.is_multiple_of(size) {
                return write!(f, "{}{unit}", self.0 / size);
            }
        }
        write!(f, "{}B", self.0)
    }
}

impl FromStr for ByteSize {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let text = text.trim();
        let split = text
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(text.len());
        let (number, unit) = text.split_at(split);
        let number: u64 = number
            .parse()
            .map_err(|_| format!("`{text}` is not a size; write it as `256MB`, `64KB` or `1GB`"))?;
        let scale: u64 = match unit.trim().to_ascii_uppercase().as_str() {
            "" | "B" => 1,
            "K" | "KB" | "KIB" => 1 << 10,
            "M" | "MB" | "MIB" => 1 << 20,
            "G" | "GB" | "GIB" => 1 << 30,
            other => {
                return Err(format!(
                    "unknown size unit `{other}` in `{text}`; use B, KB, MB or GB"
                ));
            }
        };
        number
            .checked_mul(scale)
            .map(Self)
            .ok_or_else(|| format!("`{text}` is too large"))
    }
}

impl Serialize for ByteSize {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for ByteSize {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Number(u64),
            Text(String),
        }
        match Raw::deserialize(deserializer)? {
            Raw::Number(n) => Ok(Self(n)),
            Raw::Text(text) => text.parse().map_err(serde::de::Error::custom),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_and_print() {
        assert_eq!("256MB".parse::<ByteSize>(), Ok(ByteSize::mib(256)));
        assert_eq!("64 KiB".parse::<ByteSize>(), Ok(ByteSize(64 * 1024)));
        assert_eq!("12".parse::<ByteSize>(), Ok(ByteSize(12)));
        assert!(
            "12 parsecs"
                .parse::<ByteSize>()
                .unwrap_err()
                .contains("parsecs")
        );
        assert!("MB".parse::<ByteSize>().is_err());
        assert!("99999999999999GB".parse::<ByteSize>().is_err());
        assert_eq!(ByteSize::mib(256).to_string(), "256MB");
        assert_eq!(ByteSize(1 << 30).to_string(), "1GB");
        assert_eq!(ByteSize(1000).to_string(), "1000B");
    }

    #[test]
    fn an_extensions_table_is_the_plugins_table() {
        let config = PluginsConfig::from_toml(
            "[extensions]\nhot_reload = false\n[extensions.runtimes.nodejs]\nnode_version = \"20\"\n",
        )
        .unwrap();
        assert!(!config.hot_reload);
        assert!(config.runtimes.nodejs.node_version.is_some());
        let err = PluginsConfig::from_toml("[extensions]\n[plugins]\n").unwrap_err();
        assert!(err.to_string().contains("keep one"), "{err}");
    }

    #[test]
    fn the_plugins_table_reads_with_defaults() {
        let config = PluginsConfig::from_toml(
            "[other]\nx = 1\n[plugins]\nsearch_paths = [\"./p\"]\n[plugins.runtimes.wasm]\nmemory_limit = \"64MB\"\ntimeout_ms = 500\n",
        )
        .unwrap();
        assert_eq!(config.search_paths, vec![PathBuf::from("./p")]);
        assert_eq!(config.runtimes.wasm.memory_limit, ByteSize::mib(64));
        assert_eq!(config.runtimes.wasm.timeout(), Duration::from_millis(500));
        assert_eq!(config.runtimes.wasm.pool_size, 2);
        assert_eq!(config.runtimes.nodejs, NodeConfig::default());
        let error = PluginsConfig::from_toml("[plugins.runtimes.wasm]\nmemroy_limit = 1\n")
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("memroy_limit") && error.contains("line 2"),
            "{error}"
        );
    }
}

#[cfg(test)]
mod node_tests {
    use super::*;

    #[test]
    fn the_nodejs_table_reads() {
        let config = PluginsConfig::from_toml(
            "[plugins.runtimes.nodejs]\nnode = \"/opt/node/bin/node\"\nnode_version = \"20\"\nmax_message = \"1MB\"\nrestart = { max_restarts = 2 }\n",
        )
        .unwrap();
        let node = &config.runtimes.nodejs;
        assert_eq!(node.node, PathBuf::from("/opt/node/bin/node"));
        let range = node.node_version.as_ref().unwrap();
        assert!(range.matches(&semver::Version::new(20, 20, 2)));
        assert!(!range.matches(&semver::Version::new(22, 0, 0)));
        assert_eq!(node.max_message, ByteSize::mib(1));
        assert_eq!(node.restart.max_restarts, 2);
        assert_eq!(node.restart.backoff_ms, 200);
        let error =
            PluginsConfig::from_toml("[plugins.runtimes.nodejs]\nnode_version = \"twenty\"\n")
                .unwrap_err()
                .to_string();
        assert!(error.contains("node_version"), "{error}");
    }

    #[test]
    fn backoff_doubles_up_to_its_cap() {
        let policy = RestartPolicy::default();
        assert_eq!(policy.backoff(1), Duration::from_millis(200));
        assert_eq!(policy.backoff(2), Duration::from_millis(400));
        assert_eq!(policy.backoff(6), Duration::from_millis(6_400));
        assert_eq!(policy.backoff(7), Duration::from_secs(10));
        assert_eq!(policy.backoff(1_000), Duration::from_secs(10));
    }
}
