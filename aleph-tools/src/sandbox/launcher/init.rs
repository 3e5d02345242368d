//! The sandbox's first process (PID 1 of its namespace): sets the file system up, confines
//! itself, starts the program, reaps whatever is left to it, and exits as the program did,
//! which ends every process still in the namespace.

use std::ffi::OsString;

use nix::errno::Errno;
use nix::sys::signal::Signal;
use nix::sys::wait::{WaitStatus, waitpid};

use super::{Failure, files, limits, syscalls};
use crate::sandbox::launch::{ABI_REPORT, Plan};
use crate::sandbox::{FAILURE_PREFIX, NOT_FOUND};

pub(super) fn run(plan: &Plan, program: &OsString, args: &[OsString]) -> Result<i32, Failure> {
    // The first stage waits for this process; should it die first, so does this one.
    nix::sys::prctl::set_pdeathsig(Signal::SIGKILL)
        .map_err(|error| Failure::of("follow the launcher's end", error))?;
    // Nothing in the sandbox may read this process's memory or environment.
    nix::sys::prctl::set_dumpable(false)
        .map_err(|error| Failure::of("make the first process non-dumpable", error))?;
    let _ = nix::unistd::sethostname("sandbox");
    let places = files::prepare(&plan.policy, program)?;
    limits::apply(&plan.policy)?;
    limits::drop_capabilities()?;
    let abi = files::confine(&plan.policy, &places, plan.proxy_port)?;
    syscalls::confine(&plan.policy.network)?;
    if plan.probe {
        println!("{ABI_REPORT}{abi}");
        return Ok(0);
    }
    let child = match std::process::Command::new(program).args(args).spawn() {
        Ok(child) => child,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            eprintln!(
                "{FAILURE_PREFIX}`{}` is not installed here (not found on the PATH)",
                program.to_string_lossy()
            );
            return Ok(NOT_FOUND);
        }
        Err(error) => {
            let what = format!("start `{}`", program.to_string_lossy());
            return Err(Failure::of(&what, error));
        }
    };
    let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap_or(i32::MAX));
    // PID 1 inherits every orphan of the namespace: reap them all until the program ends.
    loop {
        match waitpid(None, None) {
            Ok(WaitStatus::Exited(done, code)) if done == pid => return Ok(code),
            Ok(WaitStatus::Signaled(done, signal, _)) if done == pid => {
                return Ok(128 + signal as i32);
            }
            Ok(_) | Err(Errno::EINTR) => {}
            Err(error) => return Err(Failure::of("wait for the program", error)),
        }
    }
}
