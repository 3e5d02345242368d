//! The browser tools: a headless Chromium driven over the Chrome `DevTools` Protocol, in the
//! OS sandbox, every request it makes held to the host rules.

mod cdp;
mod guard;
mod launch;
mod page;
mod pages;
mod pdf;
mod rules;
mod snapshot;
mod tabs;
mod tools;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use super::Builtin;
use crate::context::ToolContext;
use crate::error::ToolError;
use crate::sandbox::Sandbox;
use crate::server::RegistryError;
use crate::server::ToolServerBuilder;
use crate::util::hosts::HostRule;
use rules::Rules;
use tabs::Running;

/// The browser tools and their settings, served by
/// [`with_builtin`](ToolServerBuilder::with_builtin).
///
/// The tools drive a headless Chromium (Debian's `chromium`, or any Chrome or Chromium named
/// with [`program`](Self::program)), started at the first call and again if it dies, and
/// closed with the server:
///
/// - `browser_navigate` opens a URL and answers with the page's snapshot;
/// - `browser_snapshot` gives the page's accessibility tree as compact text, one line per
///   element, each element a call can act on marked with a reference (`[ref=e12]`);
/// - `browser_click`, `browser_type` and `browser_select` act on an element by its
///   reference and answer with the new snapshot;
/// - `browser_screenshot` gives a PNG of the viewport, the whole page or one element;
/// - `browser_tabs` lists, opens, closes and switches tabs;
/// - `browser_wait_for` waits for a text to appear or go, or for some seconds;
/// - `pdf_generate` renders a document (Markdown, HTML or plain text) on a page in a browser
///   context of its own, apart from the tabs and other documents, and prints it to a PDF
///   file inside the call's allowed directories (its working directory when none are set),
///   with the paper size and margins asked for; it answers with the file's path and its
///   number of pages. An existing file is replaced only when the call says `overwrite`.
///
/// Every request a page makes (the page, its frames, scripts, images, redirects, popups and
/// workers) is held until it is checked against the host rules, the same as `web_fetch`'s:
/// hosts allowed with `connect:` rules (any public host by default), private, loopback and
/// link-local addresses refused unless a rule names them or
/// [`allow_private_addresses`](Self::allow_private_addresses) is set, and only `http` and
/// `https` (with `about:`, `data:` and `blob:`, which load nothing). By default the browser
/// also runs in the OS [`Sandbox`]: it reads the system's files and writes its own profile
/// only, and reaches the network through the sandbox's proxy alone, which resolves each
/// name itself and connects only to addresses the same rules allow, so a name that changes
/// its answer between the check and the connection gains nothing. Downloads are refused
/// unless [`downloads`](Self::downloads) names a directory. JavaScript dialogs are
/// dismissed, and popups past [`max_tabs`](Self::max_tabs) closed.
///
/// ```
/// use aleph_tools::builtin::Browser;
/// use aleph_tools::prelude::*;
///
/// let server = AlephToolServer::builder()
///     .with_builtin(
///         Browser::new()
///             .allow_hosts(["connect:*.example.com"])
///             .max_tabs(4),
///     )
///     .build()?;
/// assert!(server.contains("browser_navigate") && server.contains("pdf_generate"));
/// # Ok::<(), aleph_tools::RegistryError>(())
/// ```
#[derive(Debug, Clone)]
pub struct Browser {
    hosts: Vec<String>,
    allow_private: bool,
    program: Option<PathBuf>,
    sandbox: Sandbox,
    viewport: (u32, u32),
    load_timeout: Duration,
    max_tabs: usize,
    downloads: Option<PathBuf>,
    per_caller: bool,
    max_browsers: usize,
}

impl Default for Browser {
    fn default() -> Self {
        Self {
            hosts: vec!["connect:*".to_owned()],
            allow_private: false,
            program: None,
            sandbox: Sandbox::new()
                .processes(1024)
                .memory_mb(8192)
                .cpu_time(Duration::from_hours(24))
                .open_files(4096)
                .file_size_mb(512),
            viewport: (1280, 800),
            load_timeout: Duration::from_secs(30),
            max_tabs: 8,
            downloads: None,
            per_caller: false,
            max_browsers: 8,
        }
    }
}

impl Browser {
    /// Any public host; one browser for the server, sandboxed; a 1280×800 viewport; 30 s
    /// for a page to load; 8 tabs.
    pub fn new() -> Self {
        Self::default()
    }

    /// Only these hosts, in the plugin permission syntax: `connect:example.com`,
    /// `connect:*.example.com`, `connect:127.0.0.1` (an address named is reached even when
    /// private), `connect:*` (any public host, the default). A rule that cannot be read is
    /// reported by [`build`](ToolServerBuilder::build).
    #[must_use]
    pub fn allow_hosts(mut self, rules: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.hosts = rules.into_iter().map(Into::into).collect();
        self
    }

    /// Lets pages reach loopback, private and link-local addresses through every allowed
    /// host. Off by default. With it on, a sandboxed browser gets the host's network (the
    /// proxy admits no private address) and requests are checked by interception alone.
    #[must_use]
    pub fn allow_private_addresses(mut self, allow: bool) -> Self {
        self.allow_private = allow;
        self
    }

    /// The browser program (a path, or a name looked up on the `PATH`); by default the first
    /// of Debian's `/usr/lib/chromium/chromium`, `chromium`, `chromium-browser`,
    /// `google-chrome-stable`, `google-chrome` and `chrome` found.
    #[must_use]
    pub fn program(mut self, program: impl Into<PathBuf>) -> Self {
        self.program = Some(program.into());
        self
    }

    /// The sandbox the browser runs in. The default is [`Sandbox::new`] with room for a
    /// browser (1,024 processes and threads, 8 GiB per process, 4,096 open files); the
    /// browser is also given its profile directory and `/etc/fonts`, and its network is the
    /// host rules. [`Sandbox::none`] runs it with the host's rights: requests are then
    /// checked by interception only, names resolved at the check.
    #[must_use]
    pub fn sandbox(mut self, sandbox: Sandbox) -> Self {
        self.sandbox = sandbox;
        self
    }

    /// The viewport's size in CSS pixels.
    #[must_use]
    pub fn viewport(mut self, width: u32, height: u32) -> Self {
        self.viewport = (width.clamp(100, 7680), height.clamp(100, 7680));
        self
    }

    /// How long a page may take to load before the call says so; for `pdf_generate`, how
    /// long a document may take to load (it is printed as it stands then) and then to print.
    #[must_use]
    pub fn load_timeout(mut self, timeout: Duration) -> Self {
        self.load_timeout = timeout;
        self
    }

    /// The most tabs open at once; a popup past it is closed as it opens.
    #[must_use]
    pub fn max_tabs(mut self, tabs: usize) -> Self {
        self.max_tabs = tabs.max(1);
        self
    }

    /// Lets pages download files into `dir` (which the sandbox lets the browser write);
    /// downloads are refused otherwise.
    #[must_use]
    pub fn downloads(mut self, dir: impl Into<PathBuf>) -> Self {
        self.downloads = Some(dir.into());
        self
    }

    /// Gives each caller (each [`Identity`](crate::Identity), anonymous calls sharing one)
    /// a browser of its own, so no caller sees another's pages and cookies; at most
    /// `max_browsers` run at once.
    #[must_use]
    pub fn per_caller(mut self, max_browsers: usize) -> Self {
        self.per_caller = true;
        self.max_browsers = max_browsers.max(1);
        self
    }
}

impl Builtin for Browser {
    fn add_to(self, builder: ToolServerBuilder) -> ToolServerBuilder {
        match Browsers::new(self) {
            Ok(browsers) => pdf::add_to(tools::add_to(builder.with_state(browsers))),
            Err(problem) => builder.with_problem(problem),
        }
    }
}

/// How many documents `pdf_generate` renders at once; more calls wait their turn.
const PRINTING_AT_ONCE: usize = 4;

/// The browsers a server runs: one, or one per caller.
pub(crate) struct Browsers {
    settings: Browser,
    rules: Arc<Rules>,
    running: tokio::sync::Mutex<HashMap<String, Arc<Running>>>,
    /// Turns for `pdf_generate`: documents rendered at once.
    printing: tokio::sync::Semaphore,
}

impl Browsers {
    fn new(settings: Browser) -> Result<Self, RegistryError> {
        let invalid = |reason: String| RegistryError::InvalidSetting {
            setting: "Browser".to_owned(),
            reason,
        };
        let hosts = settings
            .hosts
            .iter()
            .map(|rule| crate::util::hosts::parse_rule(rule))
            .collect::<Result<Vec<_>, _>>()
            .map_err(invalid)?;
        let rule = HostRule::new(hosts).allowing_private(settings.allow_private);
        // Without the sandbox's proxy, nothing else checks where a name leads.
        let resolve = !settings.sandbox.is_enabled() || settings.allow_private;
        Ok(Self {
            rules: Arc::new(Rules::new(rule, resolve)),
            settings,
            running: tokio::sync::Mutex::new(HashMap::new()),
            printing: tokio::sync::Semaphore::new(PRINTING_AT_ONCE),
        })
    }

    /// The caller's browser, started if it is not running; with a note when it had died and
    /// was started again.
    async fn get(&self, ctx: &ToolContext) -> Result<(Arc<Running>, Option<String>), ToolError> {
        let key = if self.settings.per_caller {
            ctx.identity()
                .map(|identity| identity.subject().to_owned())
                .unwrap_or_default()
        } else {
            String::new()
        };
        let mut running = self.running.lock().await;
        let mut note = None;
        if let Some(browser) = running.get(&key) {
            if !browser.connection().is_closed() {
                return Ok((Arc::clone(browser), None));
            }
            let tail = browser.process.tail();
            note = Some(if tail.is_empty() {
                "the browser had stopped and was started again; its tabs are gone".to_owned()
            } else {
                format!(
                    "the browser had stopped and was started again; its tabs are gone (its last words: {})",
                    tail.lines().last().unwrap_or_default()
                )
            });
            running.remove(&key);
        }
        if running.len() >= self.settings.max_browsers {
            return Err(ToolError::execution(format!(
                "{} browsers are running, the limit; try again when a caller's browser is closed",
                self.settings.max_browsers
            )));
        }
        ctx.progress()
            .report(0.0, None, Some("starting the browser"));
        let (process, events) = launch::Process::start(&self.settings)
            .await
            .map_err(ToolError::execution)?;
        let browser = Running::new(
            process,
            events,
            Arc::clone(&self.rules),
            self.settings.max_tabs,
            self.settings.downloads.as_deref(),
        )
        .await
        .map_err(|error| ToolError::execution(format!("the browser did not start: {error}")))?;
        running.insert(key, Arc::clone(&browser));
        Ok((browser, note))
    }
}
