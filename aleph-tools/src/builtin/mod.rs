//! Tools that come with the library: files, code execution, code mode, web fetch, web
//! search and tools about the server's tools.
//!
//! Each is an ordinary `#[tool]`, served by naming it on the builder:
//!
//! ```no_run
//! use aleph_tools::prelude::*;
//! use aleph_tools::builtin::SearxNg;
//!
//! let server = AlephToolServer::builder()
//!     .with_file_ops()     // file_list, file_read, file_write, file_edit, file_move, …
//!     .with_bash()         // bash
//!     .with_code_exec()    // code_exec: Python, JavaScript, shell
//!     .with_web_fetch()    // web_fetch
//!     .with_search(SearxNg::new("http://127.0.0.1:8888"))  // web_search
//!     .with_meta_tools()   // list_tools, get_tool_schema
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
//! memory. Settings are on [`FileOps`], [`CodeExec`], [`WebFetch`] and [`SearxNg`], given with
//! [`with_builtin`](crate::ToolServerBuilder::with_builtin); a server-wide
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
pub use search::{SearchBackend, SearchHit, SearchQuery, SearxNg};
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
    /// Serves a set of built-in tools with its settings: [`FileOps`], [`CodeExec`],
    /// [`WebFetch`], [`SearxNg`] (or any [`SearchBackend`] through [`with_search`](Self::with_search)),
    /// [`MetaTools`].
    pub fn with_builtin(self, tools: impl Builtin) -> Self {
        tools.add_to(self)
    }

    /// Serves the file tools with their default limits: `file_list`, `file_read`,
    /// `file_search`, `file_write`, `file_edit`, `file_move`, `file_copy`, `file_delete`,
    /// `file_mkdir`. See [`FileOps`].
    pub fn with_file_ops(self) -> Self {
        self.with_builtin(FileOps::default())
    }

    /// Serves `bash`: a shell command run in a fresh directory, with a time limit and output
    /// caps. See [`CodeExec`]; not a sandbox.
    pub fn with_bash(self) -> Self {
        self.with_builtin(CodeExec::default().bash_only())
    }

    /// Serves `code_exec`: Python, JavaScript (Node.js) or shell code run in a fresh
    /// directory, with a time limit and output caps. See [`CodeExec`]; not a sandbox.
    pub fn with_code_exec(self) -> Self {
        self.with_builtin(CodeExec::default())
    }

    /// Serves `web_fetch` with its defaults: any public host, no private or loopback
    /// addresses, 5 MiB and 30 seconds per fetch. See [`WebFetch`].
    pub fn with_web_fetch(self) -> Self {
        self.with_builtin(WebFetch::default())
    }

    /// Serves `web_search`, answered by `backend` (such as [`SearxNg`]).
    pub fn with_search(self, backend: impl SearchBackend) -> Self {
        search::add_to(self, backend)
    }

    /// Serves `list_tools` and `get_tool_schema`: the model can look up the server's tools
    /// (as the filter offers them) and any tool's schema. See [`MetaTools`].
    pub fn with_meta_tools(self) -> Self {
        self.with_builtin(MetaTools::default())
    }
}
