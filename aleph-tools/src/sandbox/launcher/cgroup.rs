//! A pids cgroup for a sandbox started by the host's root: the kernel never applies
//! `RLIMIT_NPROC` to root's processes, and the sandbox's root is the host's user, so the
//! process count is held by the cgroup's `pids.max` instead. Made under this process's own
//! cgroup, in the cgroup v1 `pids` hierarchy or, on cgroup v2, where this process's cgroup
//! hands the `pids` controller down; where neither can be written, the count is not held
//! (as the guide says).

use std::path::{Path, PathBuf};
use std::time::Duration;

/// Where the group's directories are named from.
const PREFIX: &str = "aleph-sandbox-";

/// The cgroup this process moved into; it moves back out and removes the group when
/// dropped (after the sandbox's first process ended, which leaves the group empty).
pub(super) struct ProcessGroup {
    dir: PathBuf,
}

impl ProcessGroup {
    /// Moves this process into a new pids cgroup allowing `limit` tasks (processes and
    /// threads, as `RLIMIT_NPROC` counts them); `None` where no such group can be made.
    pub(super) fn join(limit: u64) -> Option<Self> {
        let parent = pids_cgroup()?;
        sweep(&parent);
        let dir = parent.join(format!("{PREFIX}{}", std::process::id()));
        std::fs::create_dir(&dir).ok()?;
        let group = Self { dir };
        let joined = std::fs::write(group.dir.join("pids.max"), limit.to_string()).and_then(|()| {
            std::fs::write(
                group.dir.join("cgroup.procs"),
                std::process::id().to_string(),
            )
        });
        joined.is_ok().then_some(group)
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        if let Some(parent) = self.dir.parent() {
            let _ = std::fs::write(parent.join("cgroup.procs"), std::process::id().to_string());
        }
        // The namespace's last processes may take a moment to leave the group.
        for _ in 0..50 {
            if std::fs::remove_dir(&self.dir).is_ok() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// This process's cgroup in a hierarchy where it can make a child group with `pids.max`.
fn pids_cgroup() -> Option<PathBuf> {
    let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    // cgroup v1: the hierarchy whose controllers include `pids`.
    if let Some(path) = own.lines().find_map(|line| {
        let mut fields = line.splitn(3, ':');
        let (_, controllers, path) = (fields.next()?, fields.next()?, fields.next()?);
        controllers.split(',').any(|c| c == "pids").then_some(path)
    }) && let Some(dir) = place(&mounts, path, |kind, options| {
        kind == "cgroup" && options.split(',').any(|option| option == "pids")
    }) {
        return Some(dir);
    }
    // cgroup v2: this process's group, if it hands `pids` down to groups below it.
    let path = own.lines().find_map(|line| line.strip_prefix("0::"))?;
    let dir = place(&mounts, path, |kind, _| kind == "cgroup2")?;
    let handed = std::fs::read_to_string(dir.join("cgroup.subtree_control")).ok()?;
    handed
        .split_whitespace()
        .any(|controller| controller == "pids")
        .then_some(dir)
}

/// The directory of cgroup `path` in the mount `matches` picks (by file system type and
/// super options) from `/proc/self/mountinfo`.
fn place(mounts: &str, path: &str, matches: impl Fn(&str, &str) -> bool) -> Option<PathBuf> {
    mounts.lines().find_map(|line| {
        let (mount, kind) = line.split_once(" - ")?;
        let mut after = kind.split_whitespace();
        let (kind, _, options) = (after.next()?, after.next()?, after.next().unwrap_or(""));
        if !matches(kind, options) {
            return None;
        }
        let mut fields = mount.split_whitespace().skip(3);
        let (root, point) = (fields.next()?, fields.next()?);
        let inside = Path::new(path).strip_prefix(root).ok()?;
        let dir = Path::new(point).join(inside);
        dir.is_dir().then_some(dir)
    })
}

/// Removes the groups left by launchers that were killed before they could: those named for
/// a process that no longer runs (a group whose launcher lives may be empty for a moment,
/// between its making and its joining, and is left alone).
fn sweep(parent: &Path) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|name| name.strip_prefix(PREFIX))
            .and_then(|pid| pid.parse::<i32>().ok())
        else {
            continue;
        };
        let gone = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None)
            == Err(nix::errno::Errno::ESRCH);
        if gone || pid == std::process::id().cast_signed() {
            let _ = std::fs::remove_dir(entry.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTS: &str = "\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
39 31 0:36 /outer /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";

    #[test]
    fn a_cgroup_is_found_in_the_mount_of_its_hierarchy() {
        let temp = std::env::temp_dir();
        let mounts = MOUNTS.replace("/sys/fs/cgroup/pids", temp.to_str().unwrap());
        let pids =
            |kind: &str, options: &str| kind == "cgroup" && options.split(',').any(|o| o == "pids");
        assert_eq!(place(&mounts, "/outer", pids), Some(temp.clone()));
        // A group outside the mount's root is not in this mount.
        assert_eq!(place(&mounts, "/elsewhere", pids), None);
        assert_eq!(place(&mounts, "/outerside", pids), None);
        assert_eq!(place(&mounts, "/outer/missing-group", pids), None);
        assert_eq!(place(&mounts, "/", |kind, _| kind == "cgroup9"), None);
    }
}
