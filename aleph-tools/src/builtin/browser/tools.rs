//! The browser tools themselves.

use std::fmt::Write as _;
use std::time::Duration;

use base64::Engine as _;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::Browsers;
use super::page::Page;
use crate::context::{State, ToolContext};
use crate::error::ToolError;
use crate::result::ToolOutput;
use crate::server::ToolServerBuilder;
use crate::tool;

/// The tallest full-page screenshot taken, in CSS pixels.
const MAX_PAGE_HEIGHT: f64 = 16_384.0;

pub(super) fn add_to(builder: ToolServerBuilder) -> ToolServerBuilder {
    builder
        .with_tool(BrowserNavigateTool)
        .with_tool(BrowserSnapshotTool)
        .with_tool(BrowserClickTool)
        .with_tool(BrowserTypeTool)
        .with_tool(BrowserSelectTool)
        .with_tool(BrowserScreenshotTool)
        .with_tool(BrowserTabsTool)
        .with_tool(BrowserWaitForTool)
}

/// Open a web page in the browser and read it: answers with the page's accessibility
/// snapshot, in which each element you can act on has a reference (`[ref=e12]`) for
/// `browser_click`, `browser_type` and `browser_select`.
#[tool(crate = crate, register = false, open_world)]
pub(crate) async fn browser_navigate(
    /// The http or https URL to open
    url: String,
    /// The tab to open it in (from `browser_tabs`); the current tab by default
    tab: Option<usize>,
    browsers: State<Browsers>,
    ctx: ToolContext,
) -> Result<ToolOutput, ToolError> {
    browsers
        .rules
        .check_navigation(&url)
        .await
        .map_err(|why| ToolError::permission_denied("browser_navigate", why))?;
    let page = Page::to_navigate(&browsers, &ctx, tab).await?;
    let before = *page.tab.loading.borrow();
    page.tab.lock().refused = None;
    let answer = page.call("Page.navigate", json!({ "url": url })).await?;
    if let Some(error) = answer["errorText"].as_str() {
        return Err(match page.tab.refusal() {
            Some((refused, why)) if refused == url => {
                ToolError::permission_denied("browser_navigate", why)
            }
            Some((refused, why)) => ToolError::permission_denied(
                "browser_navigate",
                format!("it led to `{refused}`: {why}"),
            ),
            None => ToolError::execution(format!("`{url}` could not be opened: {error}")),
        });
    }
    if answer.get("loaderId").is_some() {
        let limit = browsers.settings.load_timeout;
        let mut loading = page.tab.loading.clone();
        let loaded = tokio::time::timeout(
            limit,
            loading.wait_for(|now| now.stopped > before.stopped && !now.busy),
        )
        .await;
        if loaded.is_err() {
            return Err(ToolError::execution(format!(
                "`{url}` did not finish loading within {} s; it stays open in its tab, and browser_snapshot shows what has loaded",
                limit.as_secs_f64()
            )));
        }
    }
    page.snapshot().await
}

/// Read the current page (or a tab's) as an accessibility snapshot: one line per element,
/// with a reference (`[ref=e12]`) on each element you can act on.
#[tool(crate = crate, register = false, read_only, open_world)]
pub(crate) async fn browser_snapshot(
    /// The tab to read (from `browser_tabs`); the current tab by default
    tab: Option<usize>,
    browsers: State<Browsers>,
    ctx: ToolContext,
) -> Result<ToolOutput, ToolError> {
    Page::open(&browsers, &ctx, tab).await?.snapshot().await
}

/// Click an element by its reference from the latest snapshot; answers with the page's new
/// snapshot (after the page it leads to has loaded).
#[tool(crate = crate, register = false, open_world)]
pub(crate) async fn browser_click(
    /// The element's reference, as the snapshot shows it (`e12`)
    element: String,
    /// The tab (from `browser_tabs`); the current tab by default
    tab: Option<usize>,
    browsers: State<Browsers>,
    ctx: ToolContext,
) -> Result<ToolOutput, ToolError> {
    let mut page = Page::open(&browsers, &ctx, tab).await?;
    let (x, y) = page.centre(&element).await?;
    let before = *page.tab.loading.borrow();
    for kind in ["mouseMoved", "mousePressed", "mouseReleased"] {
        page.call(
            "Input.dispatchMouseEvent",
            json!({ "type": kind, "x": x, "y": y, "button": "left", "clickCount": 1 }),
        )
        .await?;
    }
    page.settle(before, browsers.settings.load_timeout).await;
    page.snapshot().await
}

/// Type text into a text field by its reference from the latest snapshot, replacing what it
/// held; answers with the page's new snapshot.
#[tool(crate = crate, register = false, open_world)]
pub(crate) async fn browser_type(
    /// The field's reference, as the snapshot shows it (`e12`)
    element: String,
    /// The text to type
    text: String,
    /// Press Enter afterwards (to submit a form or a search)
    #[arg(default = false)]
    submit: bool,
    /// The tab (from `browser_tabs`); the current tab by default
    tab: Option<usize>,
    browsers: State<Browsers>,
    ctx: ToolContext,
) -> Result<ToolOutput, ToolError> {
    let mut page = Page::open(&browsers, &ctx, tab).await?;
    let editable = page
        .run_on(
            &element,
            "function() { if (this.isContentEditable) { this.textContent = ''; return true; } \
             if ('value' in this && !this.disabled && !this.readOnly) { this.value = ''; return true; } return false; }",
            json!([]),
        )
        .await?;
    if editable != Value::Bool(true) {
        return Err(ToolError::execution(format!(
            "the element `{element}` does not take text (it is not an enabled field); type into a textbox or searchbox"
        )));
    }
    page.on_node(&element, "DOM.focus", json!({})).await?;
    page.call("Input.insertText", json!({ "text": text }))
        .await?;
    let before = *page.tab.loading.borrow();
    if submit {
        for kind in ["keyDown", "keyUp"] {
            page.call(
                "Input.dispatchKeyEvent",
                json!({ "type": kind, "key": "Enter", "code": "Enter", "windowsVirtualKeyCode": 13, "text": "\r" }),
            )
            .await?;
        }
    }
    page.settle(before, browsers.settings.load_timeout).await;
    page.snapshot().await
}

/// Choose options of a dropdown (`<select>`) by its reference from the latest snapshot;
/// answers with the page's new snapshot.
#[tool(crate = crate, register = false, open_world)]
pub(crate) async fn browser_select(
    /// The dropdown's reference, as the snapshot shows it (`e12`)
    element: String,
    /// The options to choose, by their value or their label; more than one only where the
    /// dropdown allows several
    values: Vec<String>,
    /// The tab (from `browser_tabs`); the current tab by default
    tab: Option<usize>,
    browsers: State<Browsers>,
    ctx: ToolContext,
) -> Result<ToolOutput, ToolError> {
    let mut page = Page::open(&browsers, &ctx, tab).await?;
    let chosen = page
        .run_on(
            &element,
            "function(wanted) { \
               if (this.tagName !== 'SELECT') return { error: 'not a dropdown' }; \
               const options = [...this.options]; \
               const found = wanted.map(w => options.find(o => o.value === w || o.label.trim() === w.trim())); \
               const missing = wanted.filter((w, i) => !found[i]); \
               if (missing.length) return { error: 'no option ' + JSON.stringify(missing), options: options.map(o => o.label.trim()) }; \
               if (!this.multiple && found.length > 1) return { error: 'this dropdown takes one option' }; \
               for (const o of options) o.selected = found.includes(o); \
               this.dispatchEvent(new Event('input', { bubbles: true })); \
               this.dispatchEvent(new Event('change', { bubbles: true })); \
               return { chosen: found.map(o => o.label.trim()) }; }",
            json!([{ "value": values }]),
        )
        .await?;
    if let Some(error) = chosen["error"].as_str() {
        let mut message = format!("cannot choose {values:?} in `{element}`: {error}");
        if let Some(options) = chosen["options"].as_array() {
            let _ = write!(
                message,
                "; its options are {}",
                Value::Array(options.clone())
            );
        }
        return Err(ToolError::execution(message));
    }
    let before = *page.tab.loading.borrow();
    page.settle(before, browsers.settings.load_timeout).await;
    page.snapshot().await
}

/// Take a PNG screenshot of the page's viewport, the whole page, or one element.
#[tool(crate = crate, register = false, read_only, open_world)]
pub(crate) async fn browser_screenshot(
    /// An element's reference from the latest snapshot, to capture that element alone
    element: Option<String>,
    /// Capture the whole page, not only what the viewport shows
    #[arg(default = false)]
    full_page: bool,
    /// The tab (from `browser_tabs`); the current tab by default
    tab: Option<usize>,
    browsers: State<Browsers>,
    ctx: ToolContext,
) -> Result<ToolOutput, ToolError> {
    let page = Page::open(&browsers, &ctx, tab).await?;
    let mut params = json!({ "format": "png" });
    if let Some(element) = &element {
        let _ = page
            .on_node(element, "DOM.scrollIntoViewIfNeeded", json!({}))
            .await;
        let model = page.on_node(element, "DOM.getBoxModel", json!({})).await?;
        let border: Vec<f64> = model["model"]["border"]
            .as_array()
            .map(|points| points.iter().filter_map(Value::as_f64).collect())
            .unwrap_or_default();
        let width = model["model"]["width"].as_f64().unwrap_or_default();
        let height = model["model"]["height"].as_f64().unwrap_or_default();
        if border.len() != 8 || width < 1.0 || height < 1.0 {
            return Err(ToolError::execution(format!(
                "the element `{element}` has no size on the page"
            )));
        }
        let metrics = page.call("Page.getLayoutMetrics", json!({})).await?;
        let (left, top) = (
            metrics["cssVisualViewport"]["pageX"]
                .as_f64()
                .unwrap_or_default(),
            metrics["cssVisualViewport"]["pageY"]
                .as_f64()
                .unwrap_or_default(),
        );
        params["clip"] = json!({
            "x": border[0] + left, "y": border[1] + top,
            "width": width, "height": height.min(MAX_PAGE_HEIGHT), "scale": 1,
        });
        params["captureBeyondViewport"] = json!(true);
    } else if full_page {
        let metrics = page.call("Page.getLayoutMetrics", json!({})).await?;
        let size = &metrics["cssContentSize"];
        params["clip"] = json!({
            "x": 0, "y": 0,
            "width": size["width"].as_f64().unwrap_or(1.0).clamp(1.0, MAX_PAGE_HEIGHT),
            "height": size["height"].as_f64().unwrap_or(1.0).clamp(1.0, MAX_PAGE_HEIGHT),
            "scale": 1,
        });
        params["captureBeyondViewport"] = json!(true);
    }
    let shot = page.call("Page.captureScreenshot", params).await?;
    let data = shot["data"].as_str().unwrap_or_default();
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data)
        .map_err(|error| {
            ToolError::execution(format!("the browser's screenshot is not base64: {error}"))
        })?;
    let what = match (&element, full_page) {
        (Some(element), _) => format!("a screenshot of `{element}`"),
        (None, true) => "a screenshot of the whole page".to_owned(),
        (None, false) => "a screenshot of the viewport".to_owned(),
    };
    Ok(
        ToolOutput::text(format!("{what} ({} bytes, PNG)", bytes.len()))
            .with_image(bytes, "image/png"),
    )
}

/// What `browser_tabs` does.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum TabAction {
    /// List the tabs
    List,
    /// Open a tab (at `url`, or blank) and make it current
    Open,
    /// Close the tab `index`
    Close,
    /// Make the tab `index` current
    Switch,
}

/// List, open, close or switch the browser's tabs.
#[tool(crate = crate, register = false, open_world)]
pub(crate) async fn browser_tabs(
    /// What to do
    action: TabAction,
    /// The tab to close or switch to
    index: Option<usize>,
    /// For `open`: the http or https URL to open in the new tab
    url: Option<String>,
    browsers: State<Browsers>,
    ctx: ToolContext,
) -> Result<ToolOutput, ToolError> {
    let (running, restarted) = browsers.get(&ctx).await?;
    let needs_index = || {
        index.ok_or_else(|| {
            ToolError::invalid_args(
                "browser_tabs",
                [crate::error::ArgumentProblem::new(
                    "/index",
                    "the tab's index (from `list`)",
                )],
            )
        })
    };
    match action {
        TabAction::List => {}
        TabAction::Open => {
            if let Some(url) = &url {
                browsers
                    .rules
                    .check_navigation(url)
                    .await
                    .map_err(|why| ToolError::permission_denied("browser_tabs", why))?;
            }
            running.open().await.map_err(ToolError::execution)?;
            if let Some(url) = url {
                // The new tab is the current one.
                return browser_navigate(url, None, browsers, ctx).await;
            }
        }
        TabAction::Close => {
            let tab = running
                .tab(Some(needs_index()?))
                .await
                .map_err(ToolError::execution)?;
            running.close(&tab).await.map_err(ToolError::execution)?;
        }
        TabAction::Switch => {
            let tab = running
                .tab(Some(needs_index()?))
                .await
                .map_err(ToolError::execution)?;
            running.switch(&tab).await;
        }
    }
    let (tabs, current) = running.tabs();
    let mut text = String::new();
    if let Some(note) = &restarted {
        let _ = writeln!(text, "Note: {note}");
    }
    let mut list = Vec::new();
    for (index, tab) in tabs.iter().enumerate() {
        let info = running
            .connection()
            .call(
                None,
                "Target.getTargetInfo",
                json!({ "targetId": tab.target }),
            )
            .await
            .unwrap_or_default();
        let title = info["targetInfo"]["title"].as_str().unwrap_or_default();
        let url = info["targetInfo"]["url"].as_str().unwrap_or_default();
        let mark = if current == Some(index) {
            " (current)"
        } else {
            ""
        };
        let _ = writeln!(text, "{index}: {title} {url}{mark}");
        list.push(json!({ "index": index, "title": title, "url": url, "current": current == Some(index) }));
    }
    if tabs.is_empty() {
        text.push_str("no tabs are open\n");
    }
    Ok(ToolOutput::new(text, json!({ "tabs": list })))
}

/// Wait until a text appears on the page, or goes from it, or for some seconds.
#[tool(crate = crate, register = false, read_only, open_world)]
pub(crate) async fn browser_wait_for(
    /// Wait until this text is on the page
    text: Option<String>,
    /// Wait until this text is no longer on the page
    text_gone: Option<String>,
    /// With a text: the longest wait; alone: how long to wait (at most 60 seconds)
    #[arg(default = 10.0)]
    seconds: f64,
    /// The tab (from `browser_tabs`); the current tab by default
    tab: Option<usize>,
    browsers: State<Browsers>,
    ctx: ToolContext,
) -> Result<ToolOutput, ToolError> {
    if !seconds.is_finite() || seconds < 0.0 {
        return Err(ToolError::invalid_args(
            "browser_wait_for",
            [
                crate::error::ArgumentProblem::new("/seconds", "a number of seconds from 0 to 60")
                    .received(seconds.to_string()),
            ],
        ));
    }
    let limit = Duration::from_secs_f64(seconds.min(60.0));
    let page = Page::open(&browsers, &ctx, tab).await?;
    let (wanted, present) = match (&text, &text_gone) {
        (Some(text), None) => (text.clone(), true),
        (None, Some(text)) => (text.clone(), false),
        (None, None) => {
            tokio::time::sleep(limit).await;
            return page.snapshot().await;
        }
        (Some(_), Some(_)) => {
            return Err(ToolError::invalid_args(
                "browser_wait_for",
                [crate::error::ArgumentProblem::new(
                    "",
                    "`text` or `text_gone`, not both",
                )],
            ));
        }
    };
    let expression = format!(
        "((document.body && document.body.innerText) || '').includes({})",
        Value::from(wanted.as_str())
    );
    let outcome = tokio::time::timeout(limit, async {
        loop {
            let answer = page
                .call(
                    "Runtime.evaluate",
                    json!({ "expression": expression, "returnByValue": true }),
                )
                .await?;
            if answer["result"]["value"].as_bool() == Some(present) {
                return Ok::<_, ToolError>(());
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await;
    let Ok(result) = outcome else {
        let what = if present { "appear" } else { "go" };
        return Err(ToolError::execution(format!(
            "{wanted:?} did not {what} within {} s",
            limit.as_secs_f64()
        )));
    };
    result?;
    page.snapshot().await
}
