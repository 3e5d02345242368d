//! The sandbox's file system: its own `/proc` and `/dev/shm`, read-only `.git` directories,
//! and the Landlock rules that say what may be read and written.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, NetPort, Ruleset, RulesetAttr,
    RulesetCreatedAttr, RulesetStatus, Scope, path_beneath_rules,
};
use nix::mount::{MsFlags, mount};

use super::Failure;
use crate::sandbox::policy::{Network, Sandbox};

/// Read-only everywhere: what programs need to start and run.
const SYSTEM: &[&str] = &[
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/ld.so.preload",
    "/etc/alternatives",
    "/etc/ssl",
    "/etc/ca-certificates",
    "/etc/pki",
    "/etc/localtime",
    "/etc/timezone",
    "/etc/nsswitch.conf",
    "/etc/hosts",
    "/etc/host.conf",
    "/etc/resolv.conf",
    "/etc/gai.conf",
    "/etc/protocols",
    "/etc/services",
    "/etc/mime.types",
    "/etc/inputrc",
    "/etc/bash.bashrc",
    "/proc",
];

/// Devices any program may open.
const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
];

/// Names kept read-only at the top of every writable directory.
const PROTECTED: &[&str] = &[".git"];

/// Where the program may read, and where it may write, resolved to existing paths.
pub(super) struct Places {
    reads: Vec<PathBuf>,
    writes: Vec<PathBuf>,
    devices: Vec<PathBuf>,
}

/// Mounts the sandbox's own `/proc` and `/dev/shm`, makes protected names read-only, and
/// resolves what the policy lets the program reach.
pub(super) fn prepare(policy: &Sandbox, program: &OsStr) -> Result<Places, Failure> {
    let none = None::<&str>;
    mount(none, "/", none, MsFlags::MS_REC | MsFlags::MS_PRIVATE, none)
        .map_err(|error| Failure::of("make the sandbox's mounts its own", error))?;
    mount(
        Some("proc"),
        "/proc",
        Some("proc"),
        MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC,
        none,
    )
    .map_err(|error| Failure::of("mount the sandbox's own /proc", error))?;
    if Path::new("/dev/shm").is_dir() {
        mount(
            Some("tmpfs"),
            "/dev/shm",
            Some("tmpfs"),
            MsFlags::MS_NOSUID | MsFlags::MS_NODEV,
            Some("size=64m,mode=1777"),
        )
        .map_err(|error| Failure::of("mount the sandbox's own /dev/shm", error))?;
    }
    let cwd = std::env::current_dir()
        .map_err(|error| Failure::of("find the working directory", error))?;
    let writes = existing(policy.write.iter().map(|path| cwd.join(path)));
    for root in &writes {
        for name in PROTECTED {
            protect(&root.join(name))?;
        }
    }
    let mut reads = existing(SYSTEM.iter().map(PathBuf::from));
    reads.extend(existing(policy.read.iter().map(|path| cwd.join(path))));
    reads.extend(existing(installation(program, &cwd).into_iter()));
    let devices = existing(DEVICES.iter().map(PathBuf::from));
    let mut writes = writes;
    if Path::new("/dev/shm").is_dir() {
        writes.push(PathBuf::from("/dev/shm"));
    }
    Ok(Places {
        reads,
        writes,
        devices,
    })
}

/// Binds `path` over itself read-only, when it is there and not a link.
fn protect(path: &Path) -> Result<(), Failure> {
    let Ok(meta) = path.symlink_metadata() else {
        return Ok(());
    };
    if meta.file_type().is_symlink() {
        return Ok(());
    }
    let none = None::<&str>;
    let what = || format!("keep {} read-only", path.display());
    mount(
        Some(path),
        path,
        none,
        MsFlags::MS_BIND | MsFlags::MS_REC,
        none,
    )
    .map_err(|error| Failure::of(&what(), error))?;
    // A remount inside a user namespace must keep the flags the mount was locked with.
    let kept = nix::sys::statvfs::statvfs(path)
        .map_or(MsFlags::empty(), |stat| locked_flags(stat.flags()));
    mount(
        none,
        path,
        none,
        MsFlags::MS_BIND | MsFlags::MS_REMOUNT | MsFlags::MS_RDONLY | kept,
        none,
    )
    .map_err(|error| Failure::of(&what(), error))
}

fn locked_flags(flags: nix::sys::statvfs::FsFlags) -> MsFlags {
    use nix::sys::statvfs::FsFlags;
    let mut kept = MsFlags::empty();
    for (from, to) in [
        (FsFlags::ST_NOSUID, MsFlags::MS_NOSUID),
        (FsFlags::ST_NODEV, MsFlags::MS_NODEV),
        (FsFlags::ST_NOEXEC, MsFlags::MS_NOEXEC),
        (FsFlags::ST_NOATIME, MsFlags::MS_NOATIME),
        (FsFlags::ST_NODIRATIME, MsFlags::MS_NODIRATIME),
        (FsFlags::ST_RELATIME, MsFlags::MS_RELATIME),
    ] {
        if flags.contains(from) {
            kept |= to;
        }
    }
    kept
}

/// Where `program` is installed: its directory, and the directory above when that is a
/// `bin`, `sbin` or `shims` (not the root, not the home directory), for the path it is
/// found at and the path links lead to. `Sandbox::command` found it on the `PATH` already.
fn installation(program: &OsStr, cwd: &Path) -> Vec<PathBuf> {
    if program.is_empty() {
        return Vec::new();
    }
    let found = cwd.join(program);
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let mut places = Vec::new();
    for path in [Some(found.clone()), found.canonicalize().ok()]
        .into_iter()
        .flatten()
    {
        let Some(dir) = path.parent() else { continue };
        places.push(dir.to_path_buf());
        let layout = dir
            .file_name()
            .is_some_and(|name| name == "bin" || name == "sbin" || name == "shims");
        if let Some(above) = dir
            .parent()
            .filter(|above| layout && *above != Path::new("/") && home.as_deref() != Some(*above))
        {
            places.push(above.to_path_buf());
        }
    }
    places
}

fn existing(paths: impl Iterator<Item = PathBuf>) -> Vec<PathBuf> {
    paths.filter(|path| path.exists()).collect()
}

/// Confines this process (and all it starts) to `places` with Landlock; unless the network
/// is the host's, TCP is refused too but for connections to the proxy's port, and signals
/// and abstract sockets stay inside. Returns the ABI the kernel enforced.
pub(super) fn confine(
    policy: &Sandbox,
    places: &Places,
    proxy_port: Option<u16>,
) -> Result<i32, Failure> {
    let abi = ABI::V7;
    let fail = |error: landlock::RulesetError| Failure::of("confine files with Landlock", error);
    let all = AccessFs::from_all(abi);
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(all)
        .map_err(fail)?;
    if policy.network != Network::Full {
        ruleset = ruleset
            .handle_access(AccessNet::from_all(abi))
            .map_err(fail)?;
    }
    let proxy = proxy_port.map(|port| Ok(NetPort::new(port, AccessNet::ConnectTcp)));
    let status = ruleset
        .scope(Scope::from_all(abi))
        .map_err(fail)?
        .create()
        .map_err(fail)?
        .add_rules(proxy)
        .map_err(fail)?
        .add_rules(path_beneath_rules(&places.reads, AccessFs::from_read(abi)))
        .map_err(fail)?
        .add_rules(path_beneath_rules(&places.writes, all))
        .map_err(fail)?
        .add_rules(path_beneath_rules(
            &places.devices,
            AccessFs::from_file(abi),
        ))
        .map_err(fail)?
        .restrict_self()
        .map_err(fail)?;
    if status.ruleset == RulesetStatus::NotEnforced {
        return Err(Failure(
            "Landlock is not enabled in this kernel (Linux 5.13 or later, with landlock in the lsm= boot list)".to_owned(),
        ));
    }
    Ok(ABI::from(status.landlock) as i32)
}
