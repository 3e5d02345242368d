//! The sections of the config file that set up one part each: `[admin]`, `[browser]`,
//! `[code_mode]` and `[tool_search]`.

use std::path::PathBuf;
use std::time::Duration;

use aleph_tools::builtin::{Browser, CodeMode, MiniLm, ToolSearch};
use aleph_tools::plugin::{PluginAdmin, PluginManager};
use aleph_tools::sandbox::Sandbox;
use anyhow::Context as _;
use serde::Deserialize;

/// `[admin]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AdminSection {
    /// Serve the management methods (`plugins_install`, `services_start`, …) as tools to
    /// the client of `serve --stdio`.
    pub tools: bool,
    /// The hosts `plugins install URL` may download from, as `connect:` rules (any public
    /// host when left out).
    pub download_hosts: Option<Vec<String>>,
    /// The largest download, in MiB (64 when left out).
    pub max_download_mb: Option<u64>,
    /// A certificate authority (PEM file) to trust for downloads beside the system's,
    /// relative to the config file.
    pub ca_file: Option<PathBuf>,
}

impl AdminSection {
    /// The management API of `manager` as configured.
    pub fn admin(&self, manager: &PluginManager) -> anyhow::Result<PluginAdmin> {
        let mut admin = PluginAdmin::new(manager);
        if let Some(hosts) = &self.download_hosts {
            admin = admin.with_download_hosts(hosts.iter().cloned());
        }
        if let Some(mb) = self.max_download_mb {
            admin = admin.with_max_download(mb.saturating_mul(1 << 20));
        }
        if let Some(file) = &self.ca_file {
            let pem = std::fs::read(file)
                .with_context(|| format!("`admin.ca_file`: cannot read `{}`", file.display()))?;
            admin = admin.with_root_certificate(pem);
        }
        Ok(admin)
    }
}

/// `[browser]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BrowserSection {
    /// Serve the browser tools (`--browser` sets it too).
    pub enabled: bool,
    /// The hosts pages may reach, as `connect:` rules (any public host when left out).
    pub allow_hosts: Option<Vec<String>>,
    /// Let pages reach loopback, private and link-local addresses.
    pub allow_private_addresses: bool,
    /// The browser program (Chromium's headless shell, Chromium or Chrome found when left
    /// out).
    pub program: Option<PathBuf>,
    /// The most tabs open at once (8 when left out).
    pub max_tabs: Option<usize>,
    /// Seconds a page may take to load (30 when left out).
    pub load_timeout_secs: Option<u64>,
    /// Run the browser unconfined (set by `--no-sandbox`, not read from the file).
    #[serde(skip)]
    pub unconfined: bool,
}

impl BrowserSection {
    /// The browser tools as configured.
    pub fn browser(&self) -> Browser {
        let mut browser = Browser::new().allow_private_addresses(self.allow_private_addresses);
        if let Some(hosts) = &self.allow_hosts {
            browser = browser.allow_hosts(hosts.iter().cloned());
        }
        if let Some(program) = &self.program {
            browser = browser.program(program);
        }
        if let Some(tabs) = self.max_tabs {
            browser = browser.max_tabs(tabs);
        }
        if let Some(secs) = self.load_timeout_secs {
            browser = browser.load_timeout(Duration::from_secs(secs));
        }
        if self.unconfined {
            browser = browser.sandbox(Sandbox::none());
        }
        browser
    }
}

/// `[code_mode]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CodeModeSection {
    /// Serve `code` (`--code-mode` sets it too).
    pub enabled: bool,
    /// Tools open to code beside those whose definitions say so (names or globs).
    pub open: Vec<String>,
    /// Seconds a script may run when it asks for no other limit (30 when left out).
    pub timeout_secs: Option<u64>,
    /// How many tool calls one script may make (100 when left out).
    pub max_tool_calls: Option<usize>,
    /// Bytes of a script's output kept, and of JSON its returned value may take (64 KiB
    /// when left out).
    pub output_limit: Option<usize>,
}

impl CodeModeSection {
    /// Code mode as configured, confined by `sandbox`.
    pub fn code_mode(&self, sandbox: &Sandbox) -> CodeMode {
        let mut mode = CodeMode::new()
            .open(self.open.iter().cloned())
            .sandbox(sandbox.clone());
        if let Some(secs) = self.timeout_secs {
            mode = mode.default_timeout(Duration::from_secs(secs));
        }
        if let Some(calls) = self.max_tool_calls {
            mode = mode.max_tool_calls(calls);
        }
        if let Some(bytes) = self.output_limit {
            mode = mode.output_limit(bytes);
        }
        mode
    }
}

/// `[tool_search]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ToolSearchSection {
    /// Serve `tool_search` and `call_tool` (`--tool-search`, or any `--defer`, sets it too).
    pub enabled: bool,
    /// Tools deferred beside those marked `defer_loading` (names or globs).
    pub defer: Vec<String>,
    /// How many tools a search returns when the model does not say (5 when left out).
    pub max_results: Option<usize>,
    /// A sentence-transformers model directory (all-MiniLM-L6-v2) that ranks searches by
    /// meaning (`--search-model`); relative to the config file's directory.
    pub model: Option<PathBuf>,
}

impl ToolSearchSection {
    /// The tool search as configured.
    ///
    /// # Errors
    ///
    /// When the model cannot be loaded, saying which file and why.
    pub fn tool_search(&self) -> anyhow::Result<ToolSearch> {
        let mut search = ToolSearch::new().defer(self.defer.iter().cloned());
        if let Some(results) = self.max_results {
            search = search.max_results(results);
        }
        if let Some(dir) = &self.model {
            let model = MiniLm::load(dir).with_context(|| {
                format!(
                    "cannot load the tool search's model from `{}` (a sentence-transformers \
                     model directory: config.json, model.safetensors, tokenizer.json)",
                    dir.display()
                )
            })?;
            search = search.embedder(model);
        }
        Ok(search)
    }
}
