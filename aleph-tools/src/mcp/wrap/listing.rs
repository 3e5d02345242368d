//! Listing a wrapped server's tools, page after page, within bounds: a time limit for the
//! whole listing, a number of tools and a size it may not pass.

use std::time::Duration;

use rmcp::ServiceError;
use rmcp::model::{PaginatedRequestParams, Tool};

use super::link::Link;
use super::stdio::is_unreadable;

/// How a listing is bounded.
pub(super) struct ListingBounds {
    pub(super) within: Duration,
    pub(super) max_tools: usize,
    pub(super) max_bytes: usize,
}

/// Every tool of the server behind `link`, or why they could not be listed.
pub(super) async fn list_tools(link: &Link, bounds: &ListingBounds) -> Result<Vec<Tool>, String> {
    let listing = async {
        let mut tools = Vec::new();
        let mut bytes = 0usize;
        let mut cursor = None;
        loop {
            let params = PaginatedRequestParams::default().with_cursor(cursor);
            let page = link
                .peer
                .list_tools(Some(params))
                .await
                .map_err(|error| describe(&error))?;
            for tool in &page.tools {
                bytes = bytes.saturating_add(serde_json::to_vec(tool).map_or(0, |t| t.len()));
            }
            tools.extend(page.tools);
            if tools.len() > bounds.max_tools {
                return Err(format!(
                    "it lists more than {} tools, the most one server may serve \
                     (`McpConnectionBuilder::max_tools` raises the limit)",
                    bounds.max_tools
                ));
            }
            if bytes > bounds.max_bytes {
                return Err(format!(
                    "its tools take more than {} bytes, the most one listing may hold \
                     (four times `McpConnectionBuilder::max_message_bytes`)",
                    bounds.max_bytes
                ));
            }
            cursor = page.next_cursor;
            if cursor.is_none() {
                return Ok(tools);
            }
        }
    };
    tokio::select! {
        listed = tokio::time::timeout(bounds.within, listing) => listed.unwrap_or_else(|_| {
            Err(format!(
                "it did not list its tools within {}",
                duration(bounds.within)
            ))
        }),
        () = link.ended.cancelled() => Err(link.why_ended()),
    }
}

/// What went wrong with a request, as a sentence's end.
pub(super) fn describe(error: &ServiceError) -> String {
    match error {
        ServiceError::McpError(error) if is_unreadable(error.data.as_ref()) => {
            error.message.to_string()
        }
        ServiceError::McpError(error) => format!("it answered with an error: {}", error.message),
        other => other.to_string(),
    }
}

/// A duration for a message: `30s`, `250ms`.
pub(super) fn duration(duration: Duration) -> String {
    let ms = duration.as_millis();
    if ms >= 1000 && ms.is_multiple_of(1000) {
        format!("{}s", ms / 1000)
    } else {
        format!("{ms}ms")
    }
}
