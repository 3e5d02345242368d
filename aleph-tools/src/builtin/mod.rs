//! Tools that come with the library: files, code execution, code mode, web fetch, web
//! search and tools about the server's tools.
//!
//! Each is an ordinary `#[tool]`, served by giving its settings to the builder's
//! [`with_builtin`](crate::ToolServerBuilder::with_builtin):
//!
//! ```no_run
//! use aleph_tools::prelude::*;
//! use aleph_tools::builtin::{CodeExec, FileOps, MetaTools, SearxNg, WebFetch, WebSearch};
//!
//! let server = AlephToolServer::builder()
//!     .with_builtin(FileOps::default())          // file_list, file_read, file_write, …
//!     .with_builtin(CodeExec::new().bash_only()) // bash
//!     .with_builtin(CodeExec::new())             // code_exec: Python, JavaScript, shell
//!     .with_builtin(WebFetch::default())         // web_fetch
//!     .with_builtin(WebSearch::new(SearxNg::new("http://127.0.0.1:8888"))) // web_search
//!     .with_builtin(MetaTools::default())        // list_tools, get_tool_schema
//!     .with_allowed_paths(["/srv/workspace"])
//!     .build()?;
//! # Ok::<(), aleph_tools::RegistryError>(())
//! ```
//!
//! Every file they touch is bounded by the call's allowed directories (its working directory
//! when none are set), and every file call by a time limit (30 seconds) and read caps; every
//! fetch by host rules and size and time limits (30 seconds), every search by the backend's
//! time limit (15 seconds for [`SearxNg`]), every process by a time limit (30 seconds unless
//! the call asks for more, up to 10 minutes) and output caps. The meta tools answer from
//! memory. Settings are on [`FileOps`], [`CodeExec`], [`WebFetch`], [`WebSearch`] (with
//! [`SearxNg`]), [`MetaTools`] and [`Skills`]; a server-wide
//! [`with_default_timeout`](crate::ToolServerBuilder::with_default_timeout) shorter than a
//! tool's own limit applies too.
//!
//! `bash`, `code_exec` and code mode's scripts run in the OS
//! [sandbox](crate::sandbox::Sandbox) by default. [`CodeMode`] serves `code`: a script the
//! model writes in which each tool open to code is an async function.

#[cfg(feature = "browser")]
mod browser;
mod capture;
mod code;
mod exec;
mod fetch;
mod files;
mod meta;
mod search;
mod skills;
mod tool_search;
mod workspace;

#[cfg(feature = "browser")]
pub use browser::Browser;
pub use code::{CodeMode, ScriptLanguage};
pub use exec::{CodeExec, Language};
pub use fetch::WebFetch;
pub use files::FileOps;
pub use meta::MetaTools;
pub use search::{SearchBackend, SearchHit, SearchQuery, SearxNg, WebSearch};
pub use skills::{Skill, SkillArgument, SkillError, SkillScan, Skills};
pub use tool_search::{EmbedError, Embedder, ToolSearch};
#[cfg(feature = "embeddings")]
pub use tool_search::{MiniLm, MiniLmError};

use crate::server::ToolServerBuilder;

/// A set of built-in tools with its settings, added to a server by
/// [`with_builtin`](ToolServerBuilder::with_builtin).
pub trait Builtin {
    /// Adds the tools, and the state they read, to `builder`.
    fn add_to(self, builder: ToolServerBuilder) -> ToolServerBuilder;
}

impl ToolServerBuilder {
    /// Serves a set of built-in tools with its settings: [`FileOps`], [`CodeExec`] (or
    /// `CodeExec::new().bash_only()` for `bash`), [`WebFetch`], [`WebSearch`], [`MetaTools`],
    /// [`Skills`], [`CodeMode`], [`ToolSearch`], and with the feature `browser`,
    /// `Browser`. Each is the one way its tools join a server.
    pub fn with_builtin(self, tools: impl Builtin) -> Self {
        tools.add_to(self)
    }
}
