//! Starting a program under a policy: the launcher's command line, and the check, made once
//! per process, that this machine can enforce a policy at all.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use super::policy::Sandbox;

/// Why a program cannot be started confined.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SandboxError {
    /// This machine lacks what the sandbox is built from (the message says what); the
    /// application may run programs unconfined only by choosing [`Sandbox::none`].
    #[error(
        "programs cannot be sandboxed here: {0}; run them unconfined only by choosing so (Sandbox::none(), `enabled = false`, --no-sandbox)"
    )]
    Unsupported(String),
    /// The program is not a path and is not on this process's `PATH`.
    #[error("`{0}` is not installed here (not found on the PATH)")]
    NotFound(String),
    /// The policy names a path that is not valid UTF-8.
    #[error("the sandbox policy names a path that is not valid UTF-8: {0}")]
    Path(String),
    /// The policy's network names a host pattern that names no host (the message says which).
    #[error("the sandbox policy's network is not valid: {0}")]
    Network(String),
}

/// What [`Sandbox::check`] found this machine can enforce.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Support {
    /// The Landlock ABI the kernel speaks (1 and up; TCP rules from 4, scoped signals and
    /// abstract sockets from 6).
    pub landlock_abi: u32,
}

/// What the launcher is told: the policy, and whether to only try it.
#[derive(Clone, Serialize, Deserialize)]
pub(super) struct Plan {
    pub(super) policy: Sandbox,
    /// Set the sandbox up, report, and run nothing.
    pub(super) probe: bool,
    /// Where the network proxy listens inside the sandbox (set by the first stage).
    #[serde(default)]
    pub(super) proxy_port: Option<u16>,
}

/// The name the launcher's first stage is started under.
pub(super) const OUTER_NAME: &str = "aleph-sandbox";

/// The name the launcher's second stage (the sandbox's first process) is started under.
pub(super) const INIT_NAME: &str = "aleph-sandbox-init";

/// The name the network proxy (outside the sandbox) is started under.
pub(super) const PROXY_NAME: &str = "aleph-sandbox-proxy";

/// How the probe reports the Landlock ABI on standard output.
pub(super) const ABI_REPORT: &str = "landlock-abi=";

impl Sandbox {
    /// A command that runs `program` under this policy; add arguments, environment, working
    /// directory and standard streams as for any [`tokio::process::Command`]. The working
    /// directory given is the one `"."` in the policy stands for. A `program` without a `/`
    /// is looked up on this process's `PATH` now.
    ///
    /// For [`Sandbox::none`] it is a plain command.
    ///
    /// # Errors
    ///
    /// [`SandboxError::Unsupported`] off Linux, [`SandboxError::NotFound`] for a program not
    /// on the `PATH`, [`SandboxError::Path`] for a path the launcher cannot be told. Where
    /// the kernel lacks what the sandbox needs, the command exits with [`SETUP_FAILED`]
    /// and a line on standard error saying what is missing (as [`Sandbox::check`] would).
    ///
    /// [`SETUP_FAILED`]: super::SETUP_FAILED
    pub fn command(
        &self,
        program: impl AsRef<OsStr>,
    ) -> Result<tokio::process::Command, SandboxError> {
        self.std_command(program).map(tokio::process::Command::from)
    }

    /// [`command`](Self::command) as a [`std::process::Command`], for blocking code.
    ///
    /// # Errors
    ///
    /// As [`command`](Self::command).
    pub fn std_command(
        &self,
        program: impl AsRef<OsStr>,
    ) -> Result<std::process::Command, SandboxError> {
        if !self.enabled {
            return Ok(std::process::Command::new(program));
        }
        // Without its entry, the launcher would be this program's own `main`.
        #[cfg(target_os = "linux")]
        if !super::launcher::linked() {
            return Err(not_linked());
        }
        let program = program.as_ref();
        let found = locate(program)
            .ok_or_else(|| SandboxError::NotFound(program.to_string_lossy().into_owned()))?;
        self.launcher(found.as_os_str(), false)
    }

    /// Checks, once per process, that programs can be confined here: sets a sandbox up with
    /// the default policy and runs nothing in it.
    ///
    /// # Errors
    ///
    /// [`SandboxError::Unsupported`], naming what is missing (not Linux, user namespaces
    /// turned off, no Landlock, no seccomp).
    pub fn check() -> Result<Support, SandboxError> {
        static SUPPORT: OnceLock<Result<Support, SandboxError>> = OnceLock::new();
        SUPPORT.get_or_init(probe).clone()
    }

    #[cfg_attr(not(target_os = "linux"), allow(clippy::unused_self))]
    fn launcher(
        &self,
        program: &OsStr,
        probe: bool,
    ) -> Result<std::process::Command, SandboxError> {
        #[cfg(target_os = "linux")]
        {
            use std::os::unix::process::CommandExt as _;
            for path in self.read.iter().chain(&self.write) {
                if path.to_str().is_none() {
                    return Err(SandboxError::Path(path.display().to_string()));
                }
            }
            let mut policy = self.clone();
            if let super::Network::Proxy(hosts) = &mut policy.network {
                for host in hosts.iter_mut() {
                    *host = super::policy::host_pattern(host).map_err(SandboxError::Network)?;
                }
            }
            let plan = serde_json::to_string(&Plan {
                policy,
                probe,
                proxy_port: None,
            })
            .map_err(|error| SandboxError::Path(error.to_string()))?;
            let mut command = std::process::Command::new("/proc/self/exe");
            command.arg0(OUTER_NAME).arg(plan).arg(program);
            Ok(command)
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = (program, probe);
            Err(SandboxError::Unsupported(
                "the sandbox is built from Linux namespaces, Landlock and seccomp, and this is not Linux".to_owned(),
            ))
        }
    }
}

/// `program` itself when it holds a `/`, else the first executable file of that name on
/// this process's `PATH`.
pub(crate) fn locate(program: &OsStr) -> Option<PathBuf> {
    let path = Path::new(program);
    if path.components().count() > 1 || program.is_empty() {
        return Some(path.to_path_buf());
    }
    let dirs = std::env::var_os("PATH")?;
    std::env::split_paths(&dirs)
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.metadata().is_ok_and(|meta| executable(&meta)))
}

#[cfg(unix)]
fn executable(meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt as _;
    meta.is_file() && meta.permissions().mode() & 0o111 != 0
}

#[cfg(not(unix))]
fn executable(meta: &std::fs::Metadata) -> bool {
    meta.is_file()
}

#[cfg(target_os = "linux")]
fn not_linked() -> SandboxError {
    SandboxError::Unsupported("the sandbox launcher was not linked into this program".to_owned())
}

fn probe() -> Result<Support, SandboxError> {
    #[cfg(target_os = "linux")]
    if !super::launcher::linked() {
        return Err(not_linked());
    }
    let mut command = Sandbox::new().launcher(OsStr::new(""), true)?;
    let output = command
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|error| {
            SandboxError::Unsupported(format!("this program cannot start itself again ({error})"))
        })?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    if output.status.success()
        && let Some(abi) = stdout
            .lines()
            .find_map(|line| line.strip_prefix(ABI_REPORT))
            .and_then(|abi| abi.trim().parse().ok())
    {
        return Ok(Support { landlock_abi: abi });
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    let reason = stderr
        .lines()
        .find_map(|line| line.strip_prefix(super::FAILURE_PREFIX))
        .map_or_else(
            || format!("the sandbox's trial run ended with {}", output.status),
            str::to_owned,
        );
    Err(SandboxError::Unsupported(reason))
}
