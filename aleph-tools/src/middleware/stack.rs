//! [`Stack`]: the layers every call of a server runs through, in order; and [`Next`], the
//! rest of the stack as a layer sees it.

use std::fmt;
use std::sync::Arc;

use super::layer::{Layer, LayerId, Priority, Stage};
use super::{DynMiddleware, ToolCall};
use crate::context::ToolContext;
use crate::error::ToolError;
use crate::result::ToolOutput;
use crate::tool::{BoxFuture, ToolDefinition};

/// The layers a call runs through, outermost first.
pub(crate) type Chain = Arc<[Arc<dyn DynMiddleware>]>;

/// One layer in the stack, with where it sits.
#[derive(Clone)]
struct Placed {
    id: LayerId,
    stage: Stage,
    priority: Priority,
    layer: Arc<dyn DynMiddleware>,
}

/// The server's layers: replaced whole on every change, read without locks as part of the
/// server's snapshot. Empty, a call runs nothing between its checks and its tool.
#[derive(Clone, Default)]
pub(crate) struct Stack {
    placed: Vec<Placed>,
    /// The layers in the order calls run them.
    chain: Chain,
}

impl Stack {
    /// Whether a call runs no layer.
    pub(crate) fn is_empty(&self) -> bool {
        self.placed.is_empty()
    }

    /// The layers, outermost first.
    pub(crate) fn chain(&self) -> &Chain {
        &self.chain
    }

    /// Adds a layer the builder was given: after every other such layer, before those
    /// added at run time.
    pub(crate) fn push_built(&mut self, id: LayerId, layer: Arc<dyn DynMiddleware>) {
        self.place(Placed {
            id,
            stage: Stage::Built,
            priority: Priority::Normal,
            layer,
        });
    }

    /// Adds `layer` after every layer of its stage with the same or a higher priority.
    pub(crate) fn add(&mut self, id: LayerId, layer: Layer) {
        let Layer {
            priority,
            stage,
            inner,
        } = layer;
        self.place(Placed {
            id,
            stage,
            priority,
            layer: inner,
        });
    }

    fn place(&mut self, placed: Placed) {
        let key = (placed.stage, placed.priority);
        let at = self
            .placed
            .partition_point(|p| (p.stage, p.priority) <= key);
        self.placed.insert(at, placed);
        self.rechain();
    }

    /// Removes the layer `id`; says whether there was one.
    pub(crate) fn remove(&mut self, id: LayerId) -> bool {
        let before = self.placed.len();
        self.placed.retain(|p| p.id != id);
        let removed = before != self.placed.len();
        if removed {
            self.rechain();
        }
        removed
    }

    fn rechain(&mut self) {
        self.chain = self.placed.iter().map(|p| Arc::clone(&p.layer)).collect();
    }

    /// Whether every layer offers `tool` to a caller with `context`.
    pub(crate) fn offers(&self, tool: &ToolDefinition, context: &ToolContext) -> bool {
        self.chain
            .iter()
            .all(|layer| layer.offers_dyn(tool, context))
    }
}

/// What runs after the last layer: the argument check, confirmation and the tool.
pub(crate) trait Endpoint: Send + Sync + 'static {
    fn call(self: Arc<Self>, call: ToolCall) -> BoxFuture<'static, Result<ToolOutput, ToolError>>;
}

/// The rest of the stack after the current layer.
pub struct Next {
    chain: Chain,
    index: usize,
    endpoint: Arc<dyn Endpoint>,
}

impl Next {
    pub(crate) fn new(chain: Chain, endpoint: Arc<dyn Endpoint>) -> Self {
        Self {
            chain,
            index: 0,
            endpoint,
        }
    }

    /// Runs the rest of the stack, and in the end the tool, on `call`.
    ///
    /// # Errors
    ///
    /// Whatever a later layer, the argument check or the tool fails with.
    pub async fn run(self, call: ToolCall) -> Result<ToolOutput, ToolError> {
        let Self {
            chain,
            index,
            endpoint,
        } = self;
        match chain.get(index).map(Arc::clone) {
            Some(layer) => {
                let next = Self {
                    chain,
                    index: index + 1,
                    endpoint,
                };
                layer.handle_boxed(call, next).await
            }
            None => endpoint.call(call).await,
        }
    }
}

impl fmt::Debug for Next {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Next")
            .field("layers_left", &(self.chain.len() - self.index))
            .finish_non_exhaustive()
    }
}
