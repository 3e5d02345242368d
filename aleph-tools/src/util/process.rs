//! A child's process group, killed whole: the child and whatever it started.

/// The process group a child leads (it was started with `process_group(0)`). Dropped while
/// armed, it is killed.
pub(crate) struct ProcessGroup(Option<u32>);

impl ProcessGroup {
    /// The group led by the process `pid` (`None` once that process was reaped).
    pub(crate) fn new(pid: Option<u32>) -> Self {
        Self(pid)
    }

    /// Sends `SIGKILL` to every process in the group.
    pub(crate) fn kill(&self) {
        #[cfg(unix)]
        if let Some(pid) = self.0.and_then(|pid| i32::try_from(pid).ok()) {
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }

    /// Kills the group one last time and forgets it: call this right after the leader is
    /// reaped, before its number can be given to another process.
    pub(crate) fn kill_and_forget(&mut self) {
        self.kill();
        self.0 = None;
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        self.kill();
    }
}
