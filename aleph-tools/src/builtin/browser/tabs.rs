//! A running browser and its tabs: every page, frame and worker the browser makes is
//! attached paused, its requests intercepted, then let run; top-level pages become tabs.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::{Notify, mpsc, watch};

use super::cdp::{CdpError, Connection, Event};
use super::guard::guard;
use super::launch::Process;
use super::rules::Rules;

/// What the next answer says when a popup past the tab limit was closed as it opened.
const CLOSED_POPUP: &str = "a page opened a new tab past the tab limit; it was closed";

/// The address a document given to `pdf_generate` is loaded from: its page's request for
/// it is answered with the document. The `.invalid` name resolves nowhere, so no request
/// for it could reach a server.
pub(super) const DOCUMENT_URL: &str = "https://document.invalid/";

/// What the next answer says when a document being rendered opened a window.
const CLOSED_PRINT_POPUP: &str = "the document opened a new window; it was closed";

/// What a tab's main frame is doing: how many loads began and how many ended, and whether
/// one is under way (a load whose start came before the tab was followed may end unseen
/// to have begun, so the counts alone may not match).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Loading {
    pub(super) started: u64,
    pub(super) stopped: u64,
    pub(super) busy: bool,
}

/// One tab: a top-level page.
pub(super) struct Tab {
    pub(super) target: String,
    pub(super) session: String,
    pub(super) loading: watch::Receiver<Loading>,
    pub(super) state: Mutex<TabState>,
}

/// What a tab remembers between calls.
#[derive(Default)]
pub(super) struct TabState {
    /// The references of the latest snapshot: `e12` → the node's backend id.
    pub(super) refs: HashMap<String, i64>,
    /// The last request refused in this tab, and why.
    pub(super) refused: Option<(String, String)>,
    /// Things the tab did on its own that the next answer reports (a dialog dismissed, a
    /// popup closed).
    pub(super) notes: Vec<String>,
    /// The HTML the next request for [`DOCUMENT_URL`] is answered with.
    pub(super) document: Option<String>,
}

impl Tab {
    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, TabState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Why `url` was refused, when a request for it (or a redirect on the way) was.
    pub(super) fn refusal(&self) -> Option<(String, String)> {
        self.lock().refused.clone()
    }
}

/// The tabs, in the order they opened, and which one calls act on; and the pages rendering
/// documents, which are not tabs, each with its browser context.
#[derive(Default)]
struct TabList {
    tabs: Vec<Arc<Tab>>,
    current: Option<String>,
    printing: Vec<(String, Arc<Tab>)>,
    /// The browser contexts made to render documents in, one a call.
    print_contexts: Vec<String>,
}

/// A browser context a document is rendered in; dropped, it is disposed of with its pages.
pub(super) struct PrintContext {
    running: Arc<Running>,
    id: String,
}

impl Drop for PrintContext {
    fn drop(&mut self) {
        let pages: Vec<Arc<Tab>> = {
            let mut list = self.running.lock();
            list.print_contexts.retain(|context| *context != self.id);
            let (gone, kept) = std::mem::take(&mut list.printing)
                .into_iter()
                .partition(|(context, _)| *context == self.id);
            list.printing = kept;
            gone.into_iter().map(|(_, tab)| tab).collect()
        };
        for page in &pages {
            self.running.connection().unsubscribe(&page.session);
        }
        let running = Arc::clone(&self.running);
        let id = std::mem::take(&mut self.id);
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let disposed = running
                    .connection()
                    .call(
                        None,
                        "Target.disposeBrowserContext",
                        json!({ "browserContextId": id }),
                    )
                    .await;
                if let Err(error) = disposed {
                    tracing::debug!(%error, "a document's browser context was not disposed of");
                }
            });
        }
    }
}

/// A running browser.
pub(super) struct Running {
    pub(super) process: Process,
    pub(super) rules: Arc<Rules>,
    tabs: Mutex<TabList>,
    attached: Notify,
    max_tabs: usize,
}

impl Running {
    /// Takes over a browser just started: attaches to what it has and will open.
    pub(super) async fn new(
        process: Process,
        events: mpsc::UnboundedReceiver<Event>,
        rules: Arc<Rules>,
        max_tabs: usize,
        downloads: Option<&std::path::Path>,
    ) -> Result<Arc<Self>, CdpError> {
        let running = Arc::new(Self {
            process,
            rules,
            tabs: Mutex::new(TabList::default()),
            attached: Notify::new(),
            max_tabs,
        });
        tokio::spawn(browser_events(Arc::downgrade(&running), events));
        let connection = &running.process.connection;
        let download = match downloads {
            Some(dir) => json!({ "behavior": "allow", "downloadPath": dir }),
            None => json!({ "behavior": "deny" }),
        };
        connection
            .call(None, "Browser.setDownloadBehavior", download)
            .await?;
        connection
            .call(
                None,
                "Target.setAutoAttach",
                json!({ "autoAttach": true, "waitForDebuggerOnStart": true, "flatten": true }),
            )
            .await?;
        // The pages the browser opened at its start are tabs before any call acts.
        let targets = connection
            .call(None, "Target.getTargets", json!({}))
            .await?;
        let pages = targets["targetInfos"]
            .as_array()
            .map_or(0, |infos| {
                infos.iter().filter(|info| info["type"] == "page").count()
            })
            .min(running.max_tabs);
        let _ = tokio::time::timeout(Duration::from_secs(5), async {
            loop {
                let notified = running.attached.notified();
                if running.lock().tabs.len() >= pages {
                    return;
                }
                notified.await;
            }
        })
        .await;
        Ok(running)
    }

    pub(super) fn connection(&self) -> &Connection {
        &self.process.connection
    }

    /// The tabs, in order, and the index of the current one.
    pub(super) fn tabs(&self) -> (Vec<Arc<Tab>>, Option<usize>) {
        let list = self.lock();
        let current = list
            .current
            .as_ref()
            .and_then(|current| list.tabs.iter().position(|tab| &tab.target == current));
        (list.tabs.clone(), current)
    }

    /// The tab at `index`, or the current one; a new one when there is none.
    pub(super) async fn tab(&self, index: Option<usize>) -> Result<Arc<Tab>, String> {
        let (tabs, current) = self.tabs();
        match index {
            Some(index) => tabs.get(index).cloned().ok_or_else(|| {
                format!(
                    "there is no tab {index}; the browser has {} (0 to {}); call browser_tabs to list them",
                    tabs.len(),
                    tabs.len().saturating_sub(1)
                )
            }),
            None => match current.and_then(|current| tabs.get(current).cloned()) {
                Some(tab) => Ok(tab),
                None => self.open().await,
            },
        }
    }

    /// Opens a blank tab and makes it the current one.
    pub(super) async fn open(&self) -> Result<Arc<Tab>, String> {
        if self.lock().tabs.len() >= self.max_tabs {
            return Err(format!(
                "the browser has {} tabs open, its limit; close one with browser_tabs",
                self.max_tabs
            ));
        }
        let created = self
            .connection()
            .call(None, "Target.createTarget", json!({ "url": "about:blank" }))
            .await
            .map_err(|error| error.to_string())?;
        let target = created["targetId"].as_str().unwrap_or_default().to_owned();
        let found = self.attached_page(&target).await?;
        self.lock().current = Some(target);
        Ok(found)
    }

    /// Opens a blank page to render a document in: not a tab, in a browser context of its
    /// own (no cookies or storage shared with the tabs or other documents, downloads
    /// refused), which the [`PrintContext`] returned disposes of, its pages with it.
    pub(super) async fn print_page(self: &Arc<Self>) -> Result<(Arc<Tab>, PrintContext), String> {
        let made = self
            .connection()
            .call(
                None,
                "Target.createBrowserContext",
                json!({ "disposeOnDetach": true }),
            )
            .await
            .map_err(|error| error.to_string())?;
        let Some(id) = made["browserContextId"].as_str() else {
            return Err("the browser made no context to render in".to_owned());
        };
        let context = PrintContext {
            running: Arc::clone(self),
            id: id.to_owned(),
        };
        self.lock().print_contexts.push(context.id.clone());
        self.connection()
            .call(
                None,
                "Browser.setDownloadBehavior",
                json!({ "behavior": "deny", "browserContextId": context.id }),
            )
            .await
            .map_err(|error| error.to_string())?;
        let created = self
            .connection()
            .call(
                None,
                "Target.createTarget",
                json!({ "url": "about:blank", "browserContextId": context.id }),
            )
            .await
            .map_err(|error| error.to_string())?;
        let target = created["targetId"].as_str().unwrap_or_default();
        let page = self.attached_page(target).await?;
        Ok((page, context))
    }

    /// Waits for the page `target`, just created, to be attached and guarded.
    async fn attached_page(&self, target: &str) -> Result<Arc<Tab>, String> {
        tokio::time::timeout(Duration::from_secs(10), async {
            loop {
                let notified = self.attached.notified();
                if let Some(tab) = self.find(target) {
                    return tab;
                }
                notified.await;
            }
        })
        .await
        .map_err(|_| "the new page did not open within 10 s".to_owned())
    }

    /// Makes `tab` the current one.
    pub(super) async fn switch(&self, tab: &Tab) {
        self.lock().current = Some(tab.target.clone());
        let _ = self
            .connection()
            .call(
                None,
                "Target.activateTarget",
                json!({ "targetId": tab.target }),
            )
            .await;
    }

    /// Closes `tab`; the one before it becomes current.
    pub(super) async fn close(&self, tab: &Tab) -> Result<(), String> {
        self.connection()
            .call(
                None,
                "Target.closeTarget",
                json!({ "targetId": tab.target }),
            )
            .await
            .map_err(|error| error.to_string())?;
        self.forget(&tab.target);
        Ok(())
    }

    fn find(&self, target: &str) -> Option<Arc<Tab>> {
        let list = self.lock();
        list.tabs
            .iter()
            .chain(list.printing.iter().map(|(_, tab)| tab))
            .find(|tab| tab.target == target)
            .cloned()
    }

    fn forget(&self, target: &str) {
        let mut list = self.lock();
        if let Some(at) = list
            .printing
            .iter()
            .position(|(_, tab)| tab.target == target)
        {
            let (_, page) = list.printing.remove(at);
            self.connection().unsubscribe(&page.session);
            return;
        }
        let Some(at) = list.tabs.iter().position(|tab| tab.target == target) else {
            return;
        };
        let tab = list.tabs.remove(at);
        self.connection().unsubscribe(&tab.session);
        if list.current.as_deref() == Some(target) {
            list.current = list
                .tabs
                .get(at.saturating_sub(1))
                .map(|tab| tab.target.clone());
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, TabList> {
        self.tabs.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Follows the browser's own events: pages opened (by a call or by a page) and closed.
async fn browser_events(
    running: std::sync::Weak<Running>,
    mut events: mpsc::UnboundedReceiver<Event>,
) {
    while let Some(event) = events.recv().await {
        let Some(running) = running.upgrade() else {
            return;
        };
        match event.method.as_str() {
            "Target.attachedToTarget" => attach_page(&running, &event.params).await,
            "Target.detachedFromTarget" => {
                if let Some(target) = event.params["targetId"].as_str() {
                    running.forget(target);
                }
            }
            _ => {}
        }
    }
}

/// Takes a top-level target the browser attached to: a page becomes a tab (within the
/// limit), anything else is only guarded.
async fn attach_page(running: &Arc<Running>, params: &Value) {
    let info = &params["targetInfo"];
    let (Some(session), Some(target)) = (params["sessionId"].as_str(), info["targetId"].as_str())
    else {
        return;
    };
    let connection = &running.process.connection;
    if info["type"] != "page" {
        let events = connection.subscribe(session);
        guard(running, session, None, events).await;
        return;
    }
    let context = info["browserContextId"].as_str().unwrap_or_default();
    let printing = running
        .lock()
        .print_contexts
        .iter()
        .any(|made| made == context);
    // A document being rendered opens nothing (its context keeps the one page the call
    // made), and a tab past the limit is closed.
    let refused = {
        let list = running.lock();
        if printing {
            list.printing.iter().any(|(made, _)| made == context)
        } else {
            list.tabs.len() >= running.max_tabs
        }
    };
    if refused {
        let opener = info["openerId"]
            .as_str()
            .and_then(|opener| running.find(opener));
        if let Some(opener) = opener {
            let note = if printing {
                CLOSED_PRINT_POPUP
            } else {
                CLOSED_POPUP
            };
            opener.lock().notes.push(note.to_owned());
        }
        // Let run first: a popup held at its start holds its opener's script too.
        let _ = connection
            .call(Some(session), "Runtime.runIfWaitingForDebugger", json!({}))
            .await;
        let _ = connection
            .call(None, "Target.closeTarget", json!({ "targetId": target }))
            .await;
        return;
    }
    let events = connection.subscribe(session);
    let (loaded, loading) = watch::channel(Loading::default());
    let tab = Arc::new(Tab {
        target: target.to_owned(),
        session: session.to_owned(),
        loading,
        state: Mutex::new(TabState::default()),
    });
    {
        let mut list = running.lock();
        if printing {
            list.printing.push((context.to_owned(), Arc::clone(&tab)));
        } else {
            list.tabs.push(Arc::clone(&tab));
            if list.current.is_none() {
                list.current = Some(target.to_owned());
            }
        }
    }
    guard(running, session, Some((tab, loaded)), events).await;
    running.attached.notify_waiters();
}
