//! The policy: what a confined program may read, write and reach, and how much it may use.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// What a confined program may reach over the network.
///
/// Read from configuration: `network = "none"`, `network = "full"`, or
/// `network = { proxy = ["pypi.org", "*.pythonhosted.org"] }`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Network {
    /// Nothing: the program has a network of its own with no interface up, and Landlock
    /// refuses every TCP connection and bind.
    #[default]
    None,
    /// Only these hosts, through an HTTP(S) proxy the host runs; a pattern with a port
    /// (`localhost:3000`) admits that port alone, one without admits every port of its
    /// hosts. The program's network has loopback alone, where the proxy listens; `HTTP_PROXY`, `HTTPS_PROXY` (and their lower
    /// case forms) point at it, and Landlock lets TCP reach that port and no other. The
    /// proxy admits a `CONNECT` tunnel or a plain `http://` request only to a host a pattern
    /// covers (`api.example.com`, `*.example.com`, `*`), resolves the name itself and
    /// connects only to an address it checked: private, loopback and other special
    /// addresses are refused unless the request and a pattern both name the address
    /// (`127.0.0.1`, `::1`) or `localhost`. A redirect is a new request, checked again.
    /// Each refusal is answered with `403` and a line on the program's standard error.
    ///
    /// Programs that honour those variables use it (curl, wget, git, pip, npm, Python's
    /// `urllib` and `requests`, and Node.js 22.21 and later, for which `NODE_USE_ENV_PROXY`
    /// is set); others reach nothing.
    Proxy(Vec<String>),
    /// The host's network, unrestricted. Only for programs trusted with it.
    Full,
}

impl Network {
    /// [`Network::Proxy`] to these host patterns (`api.example.com`, `*.example.com`, `*`,
    /// `127.0.0.1`, `localhost`, each with a port or not: `localhost:3000`; `connect:` rules
    /// as plugin manifests write them are read too). A pattern that names no host is refused
    /// when the command is made.
    pub fn proxy<S: Into<String>>(hosts: impl IntoIterator<Item = S>) -> Self {
        Self::Proxy(
            hosts
                .into_iter()
                .map(|host| {
                    let host = host.into();
                    host_pattern(&host).unwrap_or(host)
                })
                .collect(),
        )
    }
}

/// A host pattern in its one form (lower case, no scheme; a port kept when one is written,
/// as `host:port` or `[v6]:port`), or what is wrong with it.
pub(crate) fn host_pattern(host: &str) -> Result<String, String> {
    let rule = if host.starts_with("connect:") {
        host.to_owned()
    } else {
        format!("connect:{host}")
    };
    let named = crate::util::hosts::parse_rule(&rule).map_err(|_| {
        format!(
            "`{host}` is not a host pattern; write `api.example.com`, `*.example.com`, `*`, `127.0.0.1`, `localhost`, or one of them with a port (`localhost:3000`)"
        )
    })?;
    Ok(match crate::util::hosts::rule_port(&rule) {
        Some(port) if named.contains(':') => format!("[{named}]:{port}"),
        Some(port) => format!("{named}:{port}"),
        None => named,
    })
}

impl<'de> Deserialize<'de> for Network {
    fn deserialize<D: serde::Deserializer<'de>>(input: D) -> Result<Self, D::Error> {
        input.deserialize_any(NetworkVisitor)
    }
}

struct NetworkVisitor;

impl<'de> serde::de::Visitor<'de> for NetworkVisitor {
    type Value = Network;

    fn expecting(&self, out: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        out.write_str(r#""none", "full" or { proxy = ["api.example.com"] }"#)
    }

    fn visit_str<E: serde::de::Error>(self, name: &str) -> Result<Network, E> {
        match name {
            "none" => Ok(Network::None),
            "full" => Ok(Network::Full),
            "proxy" => Err(E::custom(
                r#"a proxy needs the hosts it admits: network = { proxy = ["api.example.com"] }"#,
            )),
            other => Err(E::custom(format!(
                r#"`{other}` is not a network; write "none", "full" or {{ proxy = ["api.example.com"] }}"#
            ))),
        }
    }

    fn visit_map<M: serde::de::MapAccess<'de>>(self, mut map: M) -> Result<Network, M::Error> {
        use serde::de::Error as _;
        let Some(key) = map.next_key::<String>()? else {
            return Err(M::Error::custom(
                r#"an empty table is not a network; write { proxy = ["api.example.com"] }"#,
            ));
        };
        if key != "proxy" {
            return Err(M::Error::custom(format!(
                r#"`{key}` is not a network; write {{ proxy = ["api.example.com"] }}"#
            )));
        }
        let hosts: Vec<String> = map.next_value()?;
        if let Some(extra) = map.next_key::<String>()? {
            return Err(M::Error::custom(format!(
                "`{extra}` is not read beside `proxy`; the table holds `proxy` alone"
            )));
        }
        hosts
            .iter()
            .map(|host| host_pattern(host).map_err(M::Error::custom))
            .collect::<Result<_, _>>()
            .map(Network::Proxy)
    }
}

/// A sandbox policy: the files a program may read and write, its network, and its limits.
///
/// Reads are always allowed in the system directories programs need to run (`/usr`, `/bin`,
/// `/lib*`, `/sbin`, a few files of `/etc` such as the linker's cache, TLS roots, time zones
/// and name resolution, but not `/etc/passwd` or `/etc/shadow`), the program's own
/// installation (the directory above its `bin/`), the sandbox's own `/proc` and a few devices
/// (`/dev/null`, `/dev/zero`, `/dev/urandom`, …). Everything else must be listed in
/// [`read`](Self::read) or [`write`](Self::write). By default the program may write in its
/// working directory alone (`write = ["."]`); a `.git` directory at the top of a writable
/// directory stays read-only, so its hooks and configuration cannot be changed.
///
/// Read from configuration, it is a table (every key optional, unknown keys refused):
///
/// ```toml
/// [sandbox]
/// read = ["/srv/data"]
/// write = [".", "/srv/out"]
/// network = "none"        # or "full", or { proxy = ["pypi.org", "*.pythonhosted.org"] }
/// processes = 64
/// memory_mb = 2048
/// cpu_secs = 60
/// open_files = 256
/// file_size_mb = 1024
/// wall_secs = 300         # none by default: the tool's own time limit applies
/// ```
///
/// `enabled = false` is the opt-out, the same as [`Sandbox::none`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Sandbox {
    pub(crate) enabled: bool,
    pub(crate) read: Vec<PathBuf>,
    pub(crate) write: Vec<PathBuf>,
    pub(crate) network: Network,
    pub(crate) processes: u64,
    pub(crate) memory_mb: u64,
    pub(crate) cpu_secs: u64,
    pub(crate) open_files: u64,
    pub(crate) file_size_mb: u64,
    pub(crate) wall_secs: Option<u64>,
}

impl Default for Sandbox {
    fn default() -> Self {
        Self {
            enabled: true,
            read: Vec::new(),
            write: vec![PathBuf::from(".")],
            network: Network::None,
            processes: 64,
            memory_mb: 2048,
            cpu_secs: 60,
            open_files: 256,
            file_size_mb: 1024,
            wall_secs: None,
        }
    }
}

impl Sandbox {
    /// The default policy: system directories read-only, the working directory writable, no
    /// network, 64 processes, 2 GiB of memory, 60 s of CPU time, 256 open files, files of up
    /// to 1 GiB.
    pub fn new() -> Self {
        Self::default()
    }

    /// No sandbox: programs run with the host's full rights. An explicit choice, for hosts
    /// that confine the whole process some other way.
    pub fn none() -> Self {
        Self {
            enabled: false,
            ..Self::default()
        }
    }

    /// Whether programs are confined (false only for [`Sandbox::none`]).
    pub fn is_enabled(&self) -> bool {
        self.enabled
    }

    /// Lets the program read (and run) what is under `path` as well. A relative path is
    /// taken from the program's working directory.
    #[must_use]
    pub fn read(mut self, path: impl Into<PathBuf>) -> Self {
        self.read.push(path.into());
        self
    }

    /// Lets the program read, write, create and delete what is under `path` as well. A
    /// relative path is taken from the program's working directory.
    #[must_use]
    pub fn write(mut self, path: impl Into<PathBuf>) -> Self {
        self.write.push(path.into());
        self
    }

    /// Takes every writable path away, the working directory included: the program may
    /// write nothing but what [`write`](Self::write) adds afterwards.
    #[must_use]
    pub fn no_writes(mut self) -> Self {
        self.write.clear();
        self
    }

    /// The network the program may reach.
    #[must_use]
    pub fn network(mut self, network: Network) -> Self {
        self.network = network;
        self
    }

    /// How many processes the program may have running at once, itself included.
    #[must_use]
    pub fn processes(mut self, count: u64) -> Self {
        self.processes = count.max(1);
        self
    }

    /// How much memory each process may allocate (heap and anonymous mappings), in MiB.
    #[must_use]
    pub fn memory_mb(mut self, mib: u64) -> Self {
        self.memory_mb = mib.max(1);
        self
    }

    /// How much CPU time each process may use (whole seconds, rounded up).
    #[must_use]
    pub fn cpu_time(mut self, time: Duration) -> Self {
        self.cpu_secs = whole_seconds(time);
        self
    }

    /// How many files each process may hold open.
    #[must_use]
    pub fn open_files(mut self, count: u64) -> Self {
        self.open_files = count.max(16);
        self
    }

    /// The largest file a process may write, in MiB.
    #[must_use]
    pub fn file_size_mb(mut self, mib: u64) -> Self {
        self.file_size_mb = mib;
        self
    }

    /// How long the program may run, from its start to the end of everything it started
    /// (whole seconds, rounded up). None by default: the caller's own time limit applies.
    #[must_use]
    pub fn wall_time(mut self, time: Duration) -> Self {
        self.wall_secs = Some(whole_seconds(time));
        self
    }

    /// What this policy enforces, in one sentence, for a tool's description or a plugin's
    /// info.
    pub fn describe(&self) -> String {
        if !self.enabled {
            return "not sandboxed: programs run with the host's full rights".to_owned();
        }
        let mut text =
            String::from("sandboxed (namespaces, Landlock, seccomp): reads system directories");
        for path in &self.read {
            let _ = write!(text, ", {}", path.display());
        }
        if self.write.is_empty() {
            text.push_str(", writes nothing");
        } else {
            text.push_str(", writes ");
            let places: Vec<String> = self
                .write
                .iter()
                .map(|path| {
                    if path.as_os_str() == "." {
                        "its working directory".to_owned()
                    } else {
                        path.display().to_string()
                    }
                })
                .collect();
            text.push_str(&places.join(", "));
        }
        match &self.network {
            Network::None => text.push_str(", no network"),
            Network::Full => text.push_str(", the full network"),
            Network::Proxy(hosts) if hosts.is_empty() => {
                text.push_str(", no network (a proxy that admits no host)");
            }
            Network::Proxy(hosts) => {
                let _ = write!(
                    text,
                    ", the network through a proxy to {}",
                    hosts.join(", ")
                );
            }
        }
        let _ = write!(
            text,
            ", at most {} processes, {} MiB of memory and {} s of CPU each",
            self.processes, self.memory_mb, self.cpu_secs
        );
        if let Some(secs) = self.wall_secs {
            let _ = write!(text, ", {secs} s in all");
        }
        text
    }
}

fn whole_seconds(time: Duration) -> u64 {
    time.as_secs() + u64::from(time.subsec_nanos() > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_reads_into_a_policy_and_unknown_keys_are_refused() {
        let policy: Sandbox =
            serde_json::from_str(r#"{ "read": ["/srv"], "network": "full", "processes": 8 }"#)
                .unwrap();
        assert_eq!(policy.read, vec![PathBuf::from("/srv")]);
        assert_eq!(policy.network, Network::Full);
        assert_eq!(policy.processes, 8);
        assert_eq!(policy.write, vec![PathBuf::from(".")]);
        let error = serde_json::from_str::<Sandbox>(r#"{ "netwerk": "full" }"#).unwrap_err();
        assert!(error.to_string().contains("netwerk"), "{error}");
        for (network, expected) in [
            (r#""proxy""#, "needs the hosts it admits"),
            (r#""open""#, "`open` is not a network"),
            ("{}", "empty table"),
            (r#"{ "allow": [] }"#, "`allow` is not a network"),
            (
                r#"{ "proxy": ["a.com"], "full": true }"#,
                "holds `proxy` alone",
            ),
            ("7", r#""none", "full" or"#),
        ] {
            let json = format!(r#"{{ "network": {network} }}"#);
            let error = serde_json::from_str::<Sandbox>(&json).unwrap_err();
            assert!(error.to_string().contains(expected), "{network}: {error}");
        }
    }

    #[test]
    fn a_proxy_reads_its_hosts_in_one_form_and_refuses_what_names_no_host() {
        let policy: Sandbox = serde_json::from_str(
            r#"{ "network": { "proxy": ["PyPI.org", "*.pythonhosted.org", "connect:https://[::1]:8080", "127.0.0.1:9"] } }"#,
        )
        .unwrap();
        assert_eq!(
            policy.network,
            Network::proxy([
                "pypi.org",
                "*.pythonhosted.org",
                "[::1]:8080",
                "127.0.0.1:9"
            ])
        );
        assert_eq!(
            Network::proxy([
                "connect:http://LocalHost:3000/x",
                "::1",
                "[::1]",
                "a.com:443"
            ]),
            Network::Proxy(vec![
                "localhost:3000".into(),
                "::1".into(),
                "::1".into(),
                "a.com:443".into()
            ])
        );
        let text = policy.describe();
        assert!(text.contains("through a proxy to pypi.org"), "{text}");
        for bad in ["", "a b", "ex*mple.com", "http://"] {
            let json = format!(r#"{{ "network": {{ "proxy": [{bad:?}] }} }}"#);
            let error = serde_json::from_str::<Sandbox>(&json).unwrap_err();
            assert!(
                error.to_string().contains("not a host pattern"),
                "{bad}: {error}"
            );
        }
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_proxy_pattern_naming_no_host_is_refused_when_the_command_is_made() {
        let policy = Sandbox::new().network(Network::proxy(["pypi.org", "not a host"]));
        let error = policy.std_command("true").unwrap_err();
        assert!(
            matches!(&error, super::super::SandboxError::Network(text) if text.contains("`not a host`")),
            "{error}"
        );
    }

    #[test]
    fn the_description_says_what_is_enforced() {
        let text = Sandbox::new().read("/srv").describe();
        assert!(
            text.contains("/srv") && text.contains("no network"),
            "{text}"
        );
        assert!(text.contains("its working directory"), "{text}");
        assert!(Sandbox::none().describe().starts_with("not sandboxed"));
    }
}
