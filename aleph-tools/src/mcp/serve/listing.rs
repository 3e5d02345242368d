//! `tools/list`: the answer built once per version of the tools and shared by every
//! session, less what middleware leaves out for the caller, given out in pages in name
//! order.

use std::sync::Arc;

use rmcp::ErrorData;
use rmcp::model::{ListToolsResult, Tool};

use super::Session;
use crate::context::ToolContext;
use crate::mcp::convert::{OutputShape, tool_to_mcp};
use crate::util::sync::lock;

/// The most tools one `tools/list` answer holds unless
/// [`with_page_size`](super::McpServer::with_page_size) says otherwise.
pub(super) const DEFAULT_PAGE_SIZE: usize = 500;

/// `tools/list` cursors: the last name of a page, base64 so that clients treat it as opaque.
mod cursor {
    use base64::Engine as _;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;

    pub(super) fn write(last_name: &str) -> String {
        URL_SAFE_NO_PAD.encode(last_name)
    }

    pub(super) fn read(cursor: &str) -> Option<String> {
        String::from_utf8(URL_SAFE_NO_PAD.decode(cursor).ok()?).ok()
    }
}

/// The `tools/list` answers built for one version of the tools, one per output shape.
#[derive(Default)]
pub(super) struct Listing {
    wrapped: Built,
    plain: Built,
}

/// One answer and the version of the tools it was built from.
#[derive(Default)]
struct Built {
    version: u64,
    tools: Option<Arc<[Tool]>>,
}

impl Listing {
    fn slot(&mut self, shape: OutputShape) -> &mut Built {
        match shape {
            OutputShape::Wrapped => &mut self.wrapped,
            OutputShape::Plain => &mut self.plain,
        }
    }

    fn get(&mut self, version: u64, shape: OutputShape) -> Option<Arc<[Tool]>> {
        let built = self.slot(shape);
        built
            .tools
            .as_ref()
            .filter(|_| built.version == version)
            .cloned()
    }

    fn put(&mut self, version: u64, shape: OutputShape, tools: Arc<[Tool]>) {
        let built = self.slot(shape);
        if built.tools.is_none() || version >= built.version {
            built.version = version;
            built.tools = Some(tools);
        }
    }
}

impl Session {
    /// Builds the `tools/list` answer in `shape` and keeps it for `version`.
    fn build_listing(&self, version: u64, shape: OutputShape) -> Arc<[Tool]> {
        let tools: Arc<[Tool]> = self
            .served
            .tools
            .offered_definitions()
            .iter()
            // Deferred tools wait for `tool_search`, and are called through `call_tool`.
            .filter(|definition| !definition.defer_loading)
            .filter_map(
                |definition| match tool_to_mcp(definition, self.served.dialect, shape) {
                    Ok(tool) => Some(tool),
                    Err(err) => {
                        tracing::warn!(tool = %definition.name, "not listed over MCP: {err}");
                        None
                    }
                },
            )
            .collect();
        lock(&self.served.listing).put(version, shape, Arc::clone(&tools));
        tools
    }
    /// One page of the `tools/list` answer in `shape` for a caller with `context`: the
    /// first, or the one after `cursor`.
    pub(super) fn tools_page(
        &self,
        cursor: Option<String>,
        shape: OutputShape,
        context: &ToolContext,
    ) -> Result<ListToolsResult, ErrorData> {
        let version = self.served.tools.tools_version();
        let cached = lock(&self.served.listing).get(version, shape);
        let mut tools = cached.unwrap_or_else(|| self.build_listing(version, shape));
        if let Some(hidden) = self.served.tools.hidden_from(context) {
            // Middleware leaves some tools out for this caller: its own list, in the same order.
            tools = tools
                .iter()
                .filter(|tool| !hidden.contains(&*tool.name))
                .cloned()
                .collect();
        }
        let start = match cursor {
            None => 0,
            Some(cursor) => {
                let after = cursor::read(&cursor).ok_or_else(|| {
                    ErrorData::invalid_params(
                        format!(
                            "`{cursor}` is not a cursor this server gave; list the tools again \
                             without a cursor to start from the first page"
                        ),
                        None,
                    )
                })?;
                // The list is in name order: the page goes on after the last name seen.
                tools.partition_point(|tool| *tool.name <= *after)
            }
        };
        let end = tools.len().min(start.saturating_add(self.served.page_size));
        let mut page = ListToolsResult::with_all_items(tools[start..end].to_vec());
        if end < tools.len() {
            page.next_cursor = Some(cursor::write(&tools[end - 1].name));
        }
        // Tools come and go at any time: a client may not cache the list.
        Ok(page.with_ttl_ms(0))
    }
}
