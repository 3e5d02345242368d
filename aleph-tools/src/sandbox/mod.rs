//! An OS sandbox for the programs a tool runs: the policy ([`Sandbox`]) and the commands
//! started under it ([`Sandbox::command`]).
//!
//! On Linux a confined program starts in new user, mount, PID, IPC, UTS and (unless the
//! policy grants the full network) network namespaces, behind a fresh `/proc` that shows only
//! its own processes. Landlock limits the files it may read and write (and its TCP ports), a
//! seccomp filter refuses the system calls no tool needs (`ptrace`, `process_vm_*`,
//! `io_uring`, `bpf`, `keyctl`, `perf_event_open`, mounts, new namespaces), resource limits
//! cap its processes, memory, CPU time, open files and file sizes, and it holds no
//! capabilities and cannot gain privileges. When its first process ends, or its wall time
//! runs out, everything it started ends too, `setsid` and double forks included.
//!
//! The launcher is the running program itself, started again under a name the library
//! recognizes before `main` runs, so nothing has to be installed. On a kernel without these
//! features, or off Linux, [`Sandbox::command`] refuses with a [`SandboxError`] naming what is
//! missing; [`Sandbox::none`] is the explicit opt-out.
//!
//! ```no_run
//! use aleph_tools::sandbox::Sandbox;
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let output = Sandbox::new()
//!     .read("/srv/data")
//!     .command("wc")?
//!     .arg("-l")
//!     .arg("/srv/data/list.txt")
//!     .output()
//!     .await?;
//! println!("{}", String::from_utf8_lossy(&output.stdout));
//! # Ok(())
//! # }
//! ```

mod launch;
#[cfg(target_os = "linux")]
mod launcher;
mod policy;

#[cfg(any(feature = "node", feature = "browser"))]
pub(crate) use launch::locate;
pub use launch::{SandboxError, Support};
pub use policy::{Network, Sandbox};

/// The exit code of a sandboxed command whose sandbox could not be set up; its standard error
/// then holds one line starting with [`FAILURE_PREFIX`] that says why.
pub const SETUP_FAILED: i32 = 125;

/// The exit code of a sandboxed command whose program was not found, as a shell gives; its
/// standard error then holds one line starting with [`FAILURE_PREFIX`].
pub const NOT_FOUND: i32 = 127;

/// How the launcher's own messages on standard error begin.
pub const FAILURE_PREFIX: &str = "aleph-sandbox: ";
