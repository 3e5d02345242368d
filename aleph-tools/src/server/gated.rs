//! [`Gated`]: a snapshot that is usually in its neutral state (no filter), with a
//! flag read first so the common call skips loading it.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use arc_swap::{ArcSwap, Guard};

/// A value behind an [`ArcSwap`], with a flag saying whether it does anything.
pub(super) struct Gated<T> {
    value: ArcSwap<T>,
    active: AtomicBool,
}

impl<T> Gated<T> {
    pub(super) fn new(value: T, active: bool) -> Self {
        Self {
            value: ArcSwap::from_pointee(value),
            active: AtomicBool::new(active),
        }
    }

    /// The value, whether or not it does anything.
    pub(super) fn load(&self) -> Guard<Arc<T>> {
        self.value.load()
    }

    /// Whether the value does anything. A call that reads `false` just before a change
    /// runs as if it had started before it.
    pub(super) fn is_active(&self) -> bool {
        self.active.load(Ordering::Acquire)
    }

    /// The value, or `None` while it does nothing. A call that reads `None` just before a
    /// change runs as if it had started before it.
    pub(super) fn load_active(&self) -> Option<Guard<Arc<T>>> {
        self.is_active().then(|| self.value.load())
    }

    /// Replaces the value; `active` says whether the new one does anything. Writers must be
    /// serialized (the server's write lock).
    pub(super) fn store(&self, value: Arc<T>, active: bool) {
        self.value.store(value);
        self.active.store(active, Ordering::Release);
    }
}
