//! [`AsBuilt`]: the served tools a call reaches without loading the snapshot, for as long as
//! the server's tools and layers are as they were when its build finished.
//!
//! A call loads the snapshot to find its tool, and the load and its release are two atomic
//! read-modify-writes: a tenth of the whole cost of an in-process call of a small `inline`
//! tool. Until the tools or layers change, the tools whose calls run in place with nothing
//! else to do and that hold nothing are found here instead, with one plain atomic load.
//!
//! These entries live as long as the server, even after a change takes them off the table.
//! That is why only tools that hold nothing qualify ([`AlephToolDyn::holds_nothing`]: a type
//! with no size and nothing to drop, as every `#[tool]` function is), whose lingering entry
//! keeps no process, connection or file open.
//!
//! [`AlephToolDyn::holds_nothing`]: crate::AlephToolDyn

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use super::table::{Entry, Table};
use super::{Settings, Snapshot};

/// The tools that run in place and hold nothing, as the build left them, and whether the
/// server still serves them as they were.
#[derive(Default)]
pub(super) struct AsBuilt {
    tools: OnceLock<Table>,
    /// Set when the build finishes; cleared, for good, by the first change after it.
    current: AtomicBool,
}

impl AsBuilt {
    /// Takes the tools of `snapshot`, the one the server serves as its build finishes (after
    /// the work that adds plugins' and skills' tools). Runs once, holding the write lock, so
    /// no change comes between reading the snapshot and this. None qualifies when the
    /// server has layers or repairs arguments.
    pub(super) fn settle(&self, snapshot: &Snapshot, settings: &Settings) {
        let plain = snapshot.stack.is_empty() && !settings.repair_arguments;
        let tools: Table = snapshot
            .tools
            .iter()
            .filter(|(_, entry)| plain && runs_in_place_holding_nothing(entry, settings))
            .map(|(name, entry)| (Arc::clone(name), Arc::clone(entry)))
            .collect();
        let any = !tools.is_empty();
        if self.tools.set(tools).is_ok() && any {
            self.current.store(true, Ordering::Release);
        }
    }

    /// The tool `name` as built, while the tools and layers are. A call that reads this just
    /// before a change runs as if it had started before it, as one that loaded the snapshot
    /// does.
    #[inline]
    pub(super) fn get(&self, name: &str) -> Option<&Arc<Entry>> {
        if self.current.load(Ordering::Acquire) {
            self.tools.get()?.get(name)
        } else {
            None
        }
    }

    /// The tools or layers change: calls load the snapshot from now on. Writers call this
    /// before they swap a new snapshot in.
    pub(super) fn outdated(&self) {
        self.current.store(false, Ordering::Release);
    }
}

/// Whether a call of `entry`'s tool runs in place with nothing to prepare (inline, reads no
/// context, has no time limit, asks for no approval), and the tool holds nothing.
fn runs_in_place_holding_nothing(entry: &Entry, settings: &Settings) -> bool {
    settings.in_place(entry).is_some()
        && !entry.definition.requires_confirmation
        && entry.tool.holds_nothing()
}
