//! The launcher: this very program, started again under [`OUTER_NAME`] (which makes the
//! namespaces), [`INIT_NAME`] (the sandbox's first process, which confines itself and runs
//! the program) or [`PROXY_NAME`] (the network proxy, outside the sandbox). It is recognized before `main` runs, so any program linking the library can
//! confine programs without installing anything.

mod cgroup;
mod files;
mod init;
mod limits;
mod net;
mod outer;
mod proxy;
mod syscalls;

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt as _;
use std::sync::atomic::{AtomicBool, Ordering};

use super::launch::{INIT_NAME, OUTER_NAME, PROXY_NAME, Plan};
use super::{FAILURE_PREFIX, SETUP_FAILED};

/// Set before `main` in every process the launcher's entry was linked into.
static LINKED: AtomicBool = AtomicBool::new(false);

/// Whether the launcher's entry runs in this program (it does wherever this module is
/// linked; a `false` here means a linker dropped it).
pub(super) fn linked() -> bool {
    LINKED.load(Ordering::Relaxed)
}

// The one piece of unsafe code in the library: a function the loader calls before `main`.
// It is sound because it relies on nothing `main` sets up: it reads `/proc/self/cmdline`
// with the standard library and, only in a process started as the launcher, marks every
// descriptor past standard error close-on-exec (closing none, so no owner loses one), runs
// the launcher and exits without returning.
#[allow(unsafe_code)]
#[ctor::ctor(unsafe)]
fn entry() {
    LINKED.store(true, Ordering::Relaxed);
    let Ok(line) = std::fs::read("/proc/self/cmdline") else {
        return;
    };
    let mut words = line.split(|&byte| byte == 0);
    let stage = match words.next() {
        Some(name) if name == OUTER_NAME.as_bytes() => Stage::Outer,
        Some(name) if name == INIT_NAME.as_bytes() => Stage::Init,
        Some(name) if name == PROXY_NAME.as_bytes() => Stage::Proxy,
        _ => return,
    };
    let mut args: Vec<OsString> = words
        .map(|word| OsString::from_vec(word.to_vec()))
        .collect();
    // The command line ends with a NUL, which leaves one empty word behind.
    if args.last().is_some_and(|last| last.is_empty()) {
        args.pop();
    }
    // A descriptor the caller left open on exec (a socket on the host's network, a listener,
    // a file outside the allowed paths) must not reach the program: only standard input,
    // output and error pass on. `close_range` with this flag is Linux 5.11, below Landlock's.
    if matches!(stage, Stage::Outer) {
        // SAFETY: a system call that changes descriptor flags and touches no memory.
        let marked = unsafe {
            libc::syscall(
                libc::SYS_close_range,
                3_u32,
                u32::MAX,
                libc::CLOSE_RANGE_CLOEXEC,
            )
        };
        if marked != 0 {
            eprintln!(
                "{FAILURE_PREFIX}cannot keep inherited descriptors out of the sandbox: {}",
                std::io::Error::last_os_error()
            );
            std::process::exit(SETUP_FAILED);
        }
    }
    std::process::exit(run(stage, args));
}

/// Which part of the launcher this process is.
#[derive(Clone, Copy)]
enum Stage {
    Outer,
    Init,
    Proxy,
}

/// A step of the set-up that failed, said in words.
#[derive(Debug)]
pub(super) struct Failure(pub(super) String);

impl Failure {
    /// A failure to `what` (a verb phrase) because of `error`.
    pub(super) fn of(what: &str, error: impl std::fmt::Display) -> Self {
        Self(format!("cannot {what}: {error}"))
    }
}

fn run(stage: Stage, args: Vec<OsString>) -> i32 {
    let mut args = args.into_iter();
    let plan = args.next().and_then(|plan| {
        plan.to_str()
            .and_then(|text| serde_json::from_str::<Plan>(text).ok())
    });
    let Some(plan) = plan else {
        eprintln!("{FAILURE_PREFIX}the plan it was given is not one it can read");
        return SETUP_FAILED;
    };
    let program = args.next();
    let rest: Vec<OsString> = args.collect();
    let result = match (stage, program) {
        (Stage::Proxy, _) => proxy::run(&plan),
        (Stage::Outer, Some(program)) => outer::run(&plan, &program, &rest),
        (Stage::Init, Some(program)) => init::run(&plan, &program, &rest),
        (_, None) => Err(Failure("started without a program".to_owned())),
    };
    result.unwrap_or_else(|Failure(message)| {
        eprintln!("{FAILURE_PREFIX}{message}");
        SETUP_FAILED
    })
}

/// The exit code a shell would give for `status`: the code, or 128 and the signal.
pub(super) fn exit_code(status: std::process::ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt as _;
    status
        .code()
        .or_else(|| status.signal().map(|signal| 128 + signal))
        .unwrap_or(SETUP_FAILED)
}
