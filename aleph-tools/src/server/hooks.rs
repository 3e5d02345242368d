//! Adding and removing hooks on a running server. The hook set is a snapshot like the tool
//! table: calls read it without locks, a change swaps in a new one, and calls already
//! running keep the hooks they started with.

use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};

use super::ToolServerHandle;
use crate::middleware::{HookId, HookPriority, HookSet, Interceptor, Observer, Resolver};

impl ToolServerHandle {
    fn change_hooks(&self, change: impl FnOnce(&mut HookSet, HookId)) -> HookId {
        let _writer = self
            .shared
            .write
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let id = HookId(self.shared.next_hook_id.fetch_add(1, Ordering::Relaxed));
        let mut hooks = HookSet::clone(&self.shared.hooks.load());
        change(&mut hooks, id);
        self.shared.hooks.store(Arc::new(hooks));
        id
    }

    /// Adds a hook that sees every call before the tool and may change or refuse it.
    /// Interceptors run one after another, by priority, then in the order added.
    pub fn add_interceptor(&self, priority: HookPriority, hook: impl Interceptor) -> HookId {
        self.change_hooks(|hooks, id| hooks.add_interceptor(id, priority, Arc::new(hook)))
    }

    /// Adds a hook that may answer calls in place of the tool; the first answer wins.
    pub fn add_resolver(&self, priority: HookPriority, hook: impl Resolver) -> HookId {
        self.change_hooks(|hooks, id| hooks.add_resolver(id, priority, Arc::new(hook)))
    }

    /// Adds a hook that hears every finished call on its own task; its errors are logged.
    pub fn add_observer(&self, priority: HookPriority, hook: impl Observer) -> HookId {
        self.change_hooks(|hooks, id| hooks.add_observer(id, priority, Arc::new(hook)))
    }

    /// Removes the hook `id`; says whether it was there. Calls already running keep it.
    pub fn remove_hook(&self, id: HookId) -> bool {
        let mut removed = false;
        self.change_hooks(|hooks, _| removed = hooks.remove(id));
        removed
    }
}
