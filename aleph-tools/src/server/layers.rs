//! Adding and removing layers on a running server. The stack is part of the server's
//! snapshot: calls read it without locks, a change swaps in a new one, and calls already
//! running keep the layers they started with.

use std::sync::atomic::Ordering;

use super::{AlephToolServer, Snapshot};
use crate::middleware::{Layer, LayerId, Stack};
use crate::util::sync::lock;

impl AlephToolServer {
    /// Adds a layer to every call that starts afterwards: any middleware, an interceptor, a
    /// resolver or an observer (see [`Layer`]). The id removes it again.
    ///
    /// Layers added here run after the builder's, observers first, then interceptors and
    /// other middleware, then resolvers, each by priority and then in the order added. A
    /// layer may leave tools out of listings ([`Middleware::offers`](crate::middleware::Middleware::offers)),
    /// so [`watch_tools`](Self::watch_tools) hears of every change.
    pub fn add_layer(&self, layer: Layer) -> LayerId {
        let id = self.next_layer_id();
        self.change_layers(|stack| {
            stack.add(id, layer);
            true
        });
        id
    }

    /// Removes the layer `id`; says whether it was there. Calls already running keep it.
    pub fn remove_layer(&self, id: LayerId) -> bool {
        self.change_layers(|stack| stack.remove(id))
    }

    /// Removes the layers `remove` and adds `add`, as one change: every call runs with the
    /// stack before it or the one after. Gives the ids of the layers added, in order.
    #[cfg(feature = "plugins")]
    pub(crate) fn swap_layers(&self, remove: &[LayerId], add: Vec<Layer>) -> Vec<LayerId> {
        let mut ids = Vec::with_capacity(add.len());
        self.change_layers(|stack| {
            for id in remove {
                stack.remove(*id);
            }
            for layer in add {
                let id = self.next_layer_id();
                stack.add(id, layer);
                ids.push(id);
            }
            true
        });
        ids
    }

    fn next_layer_id(&self) -> LayerId {
        LayerId(self.shared.next_layer_id.fetch_add(1, Ordering::Relaxed))
    }

    /// Runs `change` on a copy of the stack and swaps it in when `change` says it changed
    /// something; gives back what `change` said.
    fn change_layers(&self, change: impl FnOnce(&mut Stack) -> bool) -> bool {
        let _writer = lock(&self.shared.write);
        let mut snapshot = Snapshot::clone(&self.shared.snapshot.load());
        let changed = change(&mut snapshot.stack);
        if changed {
            self.shared.publish(snapshot);
            self.shared.changes.send_modify(|count| *count += 1);
        }
        changed
    }
}
