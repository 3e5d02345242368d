//! What the browser tools share: the tab a call acts on, waiting for the loads an action
//! starts, taking snapshots, and finding elements by reference.

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use super::Browsers;
use super::cdp::CdpError;
use super::snapshot;
use super::tabs::{Loading, Running, Tab};
use crate::context::ToolContext;
use crate::error::ToolError;
use crate::result::ToolOutput;

/// The most elements a page may have to be read as an accessibility tree: past it, the
/// tree takes the browser seconds to build and can exceed what the connection reads.
const MAX_TREE_ELEMENTS: u64 = 50_000;

/// How long after an action a navigation it caused is waited for to begin.
const SETTLE: Duration = Duration::from_millis(250);

/// The browser and tab a call acts on, and what happened since the last call.
pub(super) struct Page {
    pub(super) running: Arc<Running>,
    pub(super) tab: Arc<Tab>,
    pub(super) notes: Vec<String>,
}

impl Page {
    /// The tab `tab` (the current one by default) of the caller's browser; refused when the
    /// tab's page crashed, which only a navigation mends.
    pub(super) async fn open(
        browsers: &Browsers,
        ctx: &ToolContext,
        tab: Option<usize>,
    ) -> Result<Self, ToolError> {
        let page = Self::to_navigate(browsers, ctx, tab).await?;
        if page.running.connection().crashed(&page.tab.session) {
            return Err(crashed());
        }
        Ok(page)
    }

    /// As [`open`](Self::open), a crashed tab included.
    pub(super) async fn to_navigate(
        browsers: &Browsers,
        ctx: &ToolContext,
        tab: Option<usize>,
    ) -> Result<Self, ToolError> {
        let (running, restarted) = browsers.get(ctx).await?;
        let tab = running.tab(tab).await.map_err(ToolError::execution)?;
        Ok(Self {
            running,
            tab,
            notes: restarted.into_iter().collect(),
        })
    }

    pub(super) async fn call(&self, method: &str, params: Value) -> Result<Value, ToolError> {
        self.running
            .connection()
            .call(Some(&self.tab.session), method, params)
            .await
            .map_err(|error| match error {
                CdpError::Crashed => crashed(),
                _ => ToolError::execution(format!(
                    "the browser could not {}: {error}",
                    describe(method)
                )),
            })
    }

    /// The backend node a reference of the latest snapshot points at.
    pub(super) fn node(&self, reference: &str) -> Result<i64, ToolError> {
        let reference = reference.trim().trim_start_matches("ref=");
        self.tab.lock().refs.get(reference).copied().ok_or_else(|| {
            ToolError::execution(format!(
                "`{reference}` is not a reference in this tab's latest snapshot; call browser_snapshot and use a [ref=…] it shows"
            ))
        })
    }

    /// Calls `method` on the element `reference` points at; a node gone from the page is said
    /// to be stale.
    pub(super) async fn on_node(
        &self,
        reference: &str,
        method: &str,
        mut params: Value,
    ) -> Result<Value, ToolError> {
        let node = self.node(reference)?;
        params["backendNodeId"] = json!(node);
        self.running
            .connection()
            .call(Some(&self.tab.session), method, params)
            .await
            .map_err(|error| match error {
                CdpError::Protocol(_) => stale(reference),
                CdpError::Crashed => crashed(),
                CdpError::Closed(_) | CdpError::Detached | CdpError::TooLarge => {
                    ToolError::execution(error.to_string())
                }
            })
    }

    /// Runs `function` (JavaScript, `this` the element) on the element `reference` points at,
    /// with `arguments`, and gives its value.
    pub(super) async fn run_on(
        &self,
        reference: &str,
        function: &str,
        arguments: Value,
    ) -> Result<Value, ToolError> {
        let object = self
            .on_node(reference, "DOM.resolveNode", json!({}))
            .await?;
        let Some(object) = object["object"]["objectId"].as_str() else {
            return Err(stale(reference));
        };
        let answer = self
            .call(
                "Runtime.callFunctionOn",
                json!({
                    "objectId": object,
                    "functionDeclaration": function,
                    "arguments": arguments,
                    "returnByValue": true,
                }),
            )
            .await?;
        if let Some(thrown) = answer.get("exceptionDetails") {
            return Err(ToolError::execution(format!(
                "the page threw: {}",
                thrown["exception"]["description"]
                    .as_str()
                    .or(thrown["text"].as_str())
                    .unwrap_or("an error")
            )));
        }
        Ok(answer["result"]["value"].clone())
    }

    /// The page's centre of the element `reference` points at, scrolled into view.
    pub(super) async fn centre(&self, reference: &str) -> Result<(f64, f64), ToolError> {
        let _ = self
            .on_node(reference, "DOM.scrollIntoViewIfNeeded", json!({}))
            .await;
        let quads = self
            .on_node(reference, "DOM.getContentQuads", json!({}))
            .await?;
        let Some(quad) = quads["quads"]
            .as_array()
            .and_then(|quads| quads.first())
            .and_then(Value::as_array)
        else {
            // A node the page removed has no box either.
            let connected = self
                .run_on(
                    reference,
                    "function() { return this.isConnected; }",
                    json!([]),
                )
                .await?;
            if connected == Value::Bool(false) {
                return Err(stale(reference));
            }
            return Err(ToolError::execution(format!(
                "the element `{reference}` is not visible on the page (it has no box); it cannot be clicked"
            )));
        };
        let points: Vec<f64> = quad.iter().filter_map(Value::as_f64).collect();
        if points.len() != 8 {
            return Err(stale(reference));
        }
        let x = (points[0] + points[2] + points[4] + points[6]) / 4.0;
        let y = (points[1] + points[3] + points[5] + points[7]) / 4.0;
        Ok((x, y))
    }

    /// Waits for a navigation that an action started, if one starts soon after it.
    pub(super) async fn settle(&mut self, before: Loading, limit: Duration) {
        let mut loading = self.tab.loading.clone();
        let began =
            tokio::time::timeout(SETTLE, loading.wait_for(|now| now.started > before.started))
                .await
                .is_ok();
        if !began {
            return;
        }
        let done = tokio::time::timeout(limit, loading.wait_for(|now| !now.busy))
            .await
            .is_ok();
        if !done {
            self.notes.push(format!(
                "the page it led to was still loading after {} s; the snapshot shows what had loaded",
                limit.as_secs_f64()
            ));
        }
    }

    /// The page's snapshot, with its tab, title and URL and what happened; the references in
    /// it replace the tab's earlier ones.
    pub(super) async fn snapshot(mut self) -> Result<ToolOutput, ToolError> {
        let snapshot = self.read_tree().await?;
        let info = self
            .running
            .connection()
            .call(
                None,
                "Target.getTargetInfo",
                json!({ "targetId": self.tab.target }),
            )
            .await
            .map_err(|error| ToolError::execution(error.to_string()))?;
        let (tabs, _) = self.running.tabs();
        let index = tabs
            .iter()
            .position(|tab| tab.target == self.tab.target)
            .unwrap_or_default();
        // The main document's HTTP status, where the page came over HTTP.
        let status = self
            .call(
                "Runtime.evaluate",
                json!({
                    "expression": "performance.getEntriesByType('navigation')[0]?.responseStatus ?? 0",
                    "returnByValue": true,
                }),
            )
            .await
            .ok()
            .and_then(|answer| answer["result"]["value"].as_u64())
            .filter(|status| *status > 0);
        let title = info["targetInfo"]["title"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let url = info["targetInfo"]["url"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        {
            let mut state = self.tab.lock();
            state.refs = snapshot.refs;
            self.notes.append(&mut state.notes);
        }
        self.notes = tally(std::mem::take(&mut self.notes));
        let mut text = format!("Tab {index} of {}: {title}\nURL: {url}\n", tabs.len());
        if let Some(status) = status.filter(|status| *status >= 400) {
            let _ = writeln!(text, "HTTP status: {status}");
        }
        for note in &self.notes {
            let _ = writeln!(text, "Note: {note}");
        }
        text.push('\n');
        text.push_str(&snapshot.text);
        Ok(ToolOutput::new(
            text,
            json!({
                "tab": index,
                "title": title,
                "url": url,
                "status": status,
                "notes": self.notes,
                "snapshot": snapshot.text,
            }),
        ))
    }
}

impl Page {
    /// The page's accessibility tree, rendered; for a page too large to read as one, its
    /// text instead, without references.
    async fn read_tree(&mut self) -> Result<snapshot::Snapshot, ToolError> {
        let elements = self
            .call(
                "Runtime.evaluate",
                json!({
                    "expression": "document.getElementsByTagName('*').length",
                    "returnByValue": true,
                }),
            )
            .await?["result"]["value"]
            .as_u64()
            .unwrap_or_default();
        if elements <= MAX_TREE_ELEMENTS {
            let tree = self
                .running
                .connection()
                .call(
                    Some(&self.tab.session),
                    "Accessibility.getFullAXTree",
                    json!({}),
                )
                .await;
            match tree {
                Ok(tree) => {
                    let nodes = tree["nodes"]
                        .as_array()
                        .map(Vec::as_slice)
                        .unwrap_or_default();
                    return Ok(snapshot::render(nodes));
                }
                Err(CdpError::TooLarge) => {}
                Err(CdpError::Crashed) => return Err(crashed()),
                Err(error) => {
                    return Err(ToolError::execution(format!(
                        "the browser could not read the page: {error}"
                    )));
                }
            }
        }
        self.notes.push(format!(
            "the page has {elements} elements, too many to read as an accessibility tree; \
             this is its text, and nothing on it has a reference (browser_screenshot shows it)"
        ));
        let text = self
            .call(
                "Runtime.evaluate",
                json!({
                    "expression": format!(
                        "((document.body && document.body.innerText) || '').slice(0, {})",
                        snapshot::MAX_TEXT
                    ),
                    "returnByValue": true,
                }),
            )
            .await?;
        Ok(snapshot::text_only(
            text["result"]["value"].as_str().unwrap_or_default(),
        ))
    }
}

/// `notes` in order, each said once, with how many times it happened when more than once.
pub(super) fn tally(notes: Vec<String>) -> Vec<String> {
    let mut counted: Vec<(String, usize)> = Vec::new();
    for note in notes {
        match counted.iter_mut().find(|(seen, _)| *seen == note) {
            Some((_, times)) => *times += 1,
            None => counted.push((note, 1)),
        }
    }
    counted
        .into_iter()
        .map(|(note, times)| {
            if times == 1 {
                note
            } else {
                format!("{note} ({times} times)")
            }
        })
        .collect()
}

fn crashed() -> ToolError {
    ToolError::execution(
        "the page in this tab crashed (its renderer died); open it again with browser_navigate",
    )
}

pub(super) fn stale(reference: &str) -> ToolError {
    ToolError::execution(format!(
        "the element `{reference}` is gone from the page (it changed since the snapshot); call browser_snapshot again"
    ))
}

/// A CDP method in words, for errors.
fn describe(method: &str) -> &'static str {
    match method {
        "Page.navigate" => "open the page",
        "Accessibility.getFullAXTree" => "read the page",
        "Page.captureScreenshot" => "take the screenshot",
        "Page.printToPDF" => "print the document",
        "IO.read" => "read the PDF it printed",
        "Runtime.evaluate" | "Runtime.callFunctionOn" => "run on the page",
        _ => "do it",
    }
}
