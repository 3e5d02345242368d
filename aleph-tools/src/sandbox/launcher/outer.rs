//! The launcher's first stage: makes the namespaces, maps the user, starts the sandbox's
//! first process, ends it at the wall time, and exits as it did.

use std::ffi::OsString;
use std::os::unix::process::CommandExt as _;
use std::time::{Duration, Instant};

use nix::sched::CloneFlags;
use nix::sys::signal::Signal;
use nix::unistd::{getgid, getuid};

use super::cgroup::ProcessGroup;
use super::net::{self, Proxy};
use super::{Failure, exit_code};
use crate::sandbox::launch::{INIT_NAME, Plan};
use crate::sandbox::policy::Network;

pub(super) fn run(plan: &Plan, program: &OsString, args: &[OsString]) -> Result<i32, Failure> {
    let (uid, gid) = (getuid(), getgid());
    // The proxy starts first, to stay on the host's network; it is ended when this returns.
    let proxy = match &plan.policy.network {
        Network::Proxy(_) => Some(Proxy::start(plan)?),
        Network::None | Network::Full => None,
    };
    // The kernel never holds root to RLIMIT_NPROC: for the host's root, a pids cgroup does.
    let _group = uid
        .is_root()
        .then(|| ProcessGroup::join(plan.policy.processes.saturating_add(2)))
        .flatten();
    let mut flags = CloneFlags::CLONE_NEWUSER
        | CloneFlags::CLONE_NEWNS
        | CloneFlags::CLONE_NEWPID
        | CloneFlags::CLONE_NEWIPC
        | CloneFlags::CLONE_NEWUTS;
    if plan.policy.network != Network::Full {
        flags |= CloneFlags::CLONE_NEWNET;
    }
    nix::sched::unshare(flags).map_err(|error| {
        Failure::of(
            "create a user namespace (unprivileged user namespaces may be turned off: sysctl kernel.unprivileged_userns_clone, user.max_user_namespaces, or AppArmor's restriction)",
            error,
        )
    })?;
    // The program is root of its own namespace only (and holds no capabilities once the
    // first process drops them); outside, it is the host's user.
    write("/proc/self/setgroups", "deny")?;
    write("/proc/self/uid_map", &format!("0 {uid} 1"))?;
    write("/proc/self/gid_map", &format!("0 {gid} 1"))?;
    let mut first = std::process::Command::new("/proc/self/exe");
    let mut plan = plan.clone();
    if let Some(proxy) = &proxy {
        let port = proxy.listen_inside()?;
        plan.proxy_port = Some(port);
        first.envs(net::variables(port));
    }
    let plan_text =
        serde_json::to_string(&plan).map_err(|error| Failure::of("pass the plan on", error))?;
    let mut first = first
        .arg0(INIT_NAME)
        .arg(plan_text)
        .arg(program)
        .args(args)
        .spawn()
        .map_err(|error| Failure::of("start the sandbox's first process", error))?;
    let status = match plan.policy.wall_secs {
        None => Some(
            first
                .wait()
                .map_err(|error| Failure::of("wait for the sandbox", error))?,
        ),
        Some(secs) => wait_until(&mut first, Instant::now() + Duration::from_secs(secs))?,
    };
    let Some(status) = status else {
        eprintln!(
            "{}the wall time of {} s ran out; everything the program started was ended",
            crate::sandbox::FAILURE_PREFIX,
            plan.policy.wall_secs.unwrap_or_default()
        );
        return Ok(128 + Signal::SIGKILL as i32);
    };
    Ok(exit_code(status))
}

/// Waits for the sandbox's first process until `deadline`, then kills it (the first process
/// of a PID namespace takes everything in it along when it dies); `None` when the deadline
/// came first. It polls: after `unshare(CLONE_NEWPID)` this process can start no thread (the
/// kernel refuses `CLONE_THREAD` once its children's PID namespace differs from its own).
fn wait_until(
    first: &mut std::process::Child,
    deadline: Instant,
) -> Result<Option<std::process::ExitStatus>, Failure> {
    let fail = |error| Failure::of("wait for the sandbox", error);
    loop {
        if let Some(status) = first.try_wait().map_err(fail)? {
            return Ok(Some(status));
        }
        let now = Instant::now();
        if now >= deadline {
            let _ = first.kill();
            first.wait().map_err(fail)?;
            return Ok(None);
        }
        std::thread::sleep((deadline - now).min(Duration::from_millis(20)));
    }
}

fn write(path: &str, text: &str) -> Result<(), Failure> {
    std::fs::write(path, text).map_err(|error| Failure::of(&format!("write {path}"), error))
}
