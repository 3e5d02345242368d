//! [`AsBuilt`]: the served tools a call reaches without loading the snapshot, for as long as
//! the server is as it was built.
//!
//! A call loads the snapshot to find its tool, and the load and its release are two atomic
//! read-modify-writes: a tenth of the whole cost of an in-process call of a small `inline`
//! tool. While nothing has changed since the server was built (no tool added, replaced or
//! removed, no layer, the filter open), the tools that hold nothing and run in place are
//! found here instead, with one plain atomic load.
//!
//! These entries live as long as the server, even after a change takes them off the table.
//! That is why only tools that hold nothing qualify: a tool type with no size and nothing
//! to drop (every `#[tool]` function), whose lingering entry keeps no process, connection
//! or file open.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use super::table::{Entry, Table};
use super::{Settings, Snapshot};
use crate::tool::TypedArguments;

/// The build's tools that hold nothing and run in place, and whether the server is still
/// as built.
pub(super) struct AsBuilt {
    tools: Table,
    /// Cleared, for good, by the first change to the snapshot.
    current: AtomicBool,
}

impl AsBuilt {
    /// The tools of `snapshot`, the one the server is built with, that a call runs in place
    /// with nothing else to do: none when the server has layers or repairs arguments.
    pub(super) fn new(snapshot: &Snapshot, settings: &Settings) -> Self {
        let plain = snapshot.stack.is_empty() && !settings.repair_arguments;
        let tools: Table = snapshot
            .tools
            .iter()
            .filter(|_| plain)
            .filter(|(_, entry)| runs_in_place_holding_nothing(entry))
            .map(|(name, entry)| (Arc::clone(name), Arc::clone(entry)))
            .collect();
        Self {
            current: AtomicBool::new(!tools.is_empty()),
            tools,
        }
    }

    /// The tool `name` as built, while the server is as built. A call that reads this just
    /// before a change runs as if it had started before it, as one that loaded the
    /// snapshot does.
    #[inline]
    pub(super) fn get(&self, name: &str) -> Option<&Arc<Entry>> {
        if self.current.load(Ordering::Acquire) {
            self.tools.get(name)
        } else {
            None
        }
    }

    /// The server is no longer as built: calls load the snapshot from now on. Writers call
    /// this before they swap a new snapshot in.
    pub(super) fn outdated(&self) {
        self.current.store(false, Ordering::Release);
    }
}

/// Whether a call of `entry`'s tool runs in place with nothing to prepare (inline, reads no
/// context, asks for no approval), and the tool holds nothing.
fn runs_in_place_holding_nothing(entry: &Entry) -> bool {
    entry
        .fast
        .is_some_and(|fast| fast.run_inline.is_some() && !fast.reads_context)
        && !entry.definition.requires_confirmation
        && entry
            .tool
            .typed_arguments()
            .is_some_and(TypedArguments::holds_nothing)
}
