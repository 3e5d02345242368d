//! Resource limits and capabilities: what the sandbox's processes may use, and the
//! privileges they give up.

use nix::sys::resource::{Resource, getrlimit, setrlimit};

use super::Failure;
use crate::sandbox::policy::Sandbox;

const MIB: u64 = 1024 * 1024;

/// Sets the policy's limits on this process, for everything it starts.
pub(super) fn apply(policy: &Sandbox) -> Result<(), Failure> {
    // The namespace's processes are counted together, the launcher's two among them.
    set(
        Resource::RLIMIT_NPROC,
        policy.processes.saturating_add(2),
        "processes",
    )?;
    // Heap and anonymous mappings: what a memory bomb grows, not the address space runtimes
    // such as V8 reserve and never touch.
    set(
        Resource::RLIMIT_DATA,
        policy.memory_mb.saturating_mul(MIB),
        "memory",
    )?;
    set(Resource::RLIMIT_CPU, policy.cpu_secs, "CPU time")?;
    set(Resource::RLIMIT_NOFILE, policy.open_files, "open files")?;
    set(
        Resource::RLIMIT_FSIZE,
        policy.file_size_mb.saturating_mul(MIB),
        "file size",
    )?;
    set(Resource::RLIMIT_CORE, 0, "core dumps")
}

/// Lowers `resource` to `value` (never raises it past the limit already in force).
fn set(resource: Resource, value: u64, name: &str) -> Result<(), Failure> {
    let (_, hard) = getrlimit(resource)
        .map_err(|error| Failure::of(&format!("read the limit on {name}"), error))?;
    let value = value.min(hard);
    setrlimit(resource, value, value).map_err(|error| Failure::of(&format!("limit {name}"), error))
}

/// Gives up every capability for good: the program runs as root of its own namespace with
/// none of root's powers, and cannot get them back by running anything.
pub(super) fn drop_capabilities() -> Result<(), Failure> {
    use caps::CapSet;
    let fail = |error: caps::errors::CapsError| Failure::of("give up capabilities", error);
    for capability in caps::all() {
        caps::drop(None, CapSet::Bounding, capability).map_err(fail)?;
    }
    for set in [
        CapSet::Ambient,
        CapSet::Inheritable,
        CapSet::Effective,
        CapSet::Permitted,
    ] {
        caps::clear(None, set).map_err(fail)?;
    }
    Ok(())
}
