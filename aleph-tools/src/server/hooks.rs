//! Adding and removing hooks on a running server. The hook set is a snapshot like the tool
//! table: calls read it without locks, a change swaps in a new one, and calls already
//! running keep the hooks they started with.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::AlephToolServer;
use crate::middleware::{Hook, HookId, HookSet};
use crate::util::sync::lock;

impl AlephToolServer {
    fn change_hooks(&self, change: impl FnOnce(&mut HookSet, HookId)) -> HookId {
        let _writer = lock(&self.shared.write);
        let id = HookId(self.shared.next_hook_id.fetch_add(1, Ordering::Relaxed));
        let mut hooks = HookSet::clone(&self.shared.hooks.load());
        change(&mut hooks, id);
        let active = !hooks.is_empty();
        self.shared.hooks.store(Arc::new(hooks), active);
        id
    }

    /// Adds a hook: an interceptor, a resolver or an observer (see [`Hook`]). Calls that
    /// start afterwards run it; the id removes it again.
    pub fn add_hook(&self, hook: Hook) -> HookId {
        self.change_hooks(|hooks, id| hooks.add(id, hook))
    }

    /// Removes the hook `id`; says whether it was there. Calls already running keep it.
    pub fn remove_hook(&self, id: HookId) -> bool {
        let mut removed = false;
        self.change_hooks(|hooks, _| removed = hooks.remove(id));
        removed
    }
}
