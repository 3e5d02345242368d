//! File operations: `file_list`, `file_read`, `file_write`, `file_edit`, `file_move`,
//! `file_copy`, `file_delete`, `file_mkdir` and `file_search`, each bounded by the call's
//! allowed directories and a time limit.

pub(super) mod atomic;
mod copy;
mod job;
mod manage;
mod open;
mod read;
mod search;
mod walk;

use std::time::Duration;

use serde::Serialize;

use super::Builtin;
use super::workspace::Place;
use crate::server::ToolServerBuilder;

/// The file tools and their limits, served by
/// [`with_builtin`](ToolServerBuilder::with_builtin).
///
/// Every path goes through the call's allowed directories
/// ([`with_allowed_paths`](ToolServerBuilder::with_allowed_paths)), or its working directory
/// when none are set: no path, `..` or symbolic link leads out, even one swapped in while a
/// call runs. Writes are atomic (a temporary file renamed into place). `file_write` and
/// `file_delete` need confirmation (a
/// [`ConfirmationHandler`](crate::ConfirmationHandler)) unless the filter says otherwise.
///
/// Only regular files are read: a FIFO, socket or device is refused (judged on the opened
/// handle), and so is an ignore file that is not a regular file or is reached through a
/// symbolic link. A write never goes through a link: writing to a path that is a dangling
/// link is refused. A copied directory keeps only the links that lead inside the allowed
/// directories from their new place. Each call ends within [`time_limit`](Self::time_limit)
/// (30 seconds unless set), its work stopped.
///
/// ```
/// use aleph_tools::builtin::FileOps;
/// use aleph_tools::prelude::*;
///
/// let server = AlephToolServer::builder()
///     .with_builtin(FileOps::new().read_only().max_read_bytes(64 * 1024))
///     .with_allowed_paths([std::env::temp_dir()])
///     .build()?;
/// assert!(server.contains("file_read"));
/// assert!(!server.contains("file_write"));
/// # Ok::<(), aleph_tools::RegistryError>(())
/// ```
#[derive(Debug, Clone)]
pub struct FileOps {
    pub(crate) max_read_bytes: usize,
    pub(crate) max_entries: usize,
    pub(crate) max_search_file_bytes: u64,
    pub(crate) max_write_bytes: usize,
    pub(crate) time_limit: Duration,
    read_only: bool,
}

impl Default for FileOps {
    fn default() -> Self {
        Self {
            max_read_bytes: 256 * 1024,
            max_entries: 1000,
            max_search_file_bytes: 2 * 1024 * 1024,
            max_write_bytes: 16 * 1024 * 1024,
            time_limit: Duration::from_secs(30),
            read_only: false,
        }
    }
}

impl FileOps {
    /// Every file tool, with limits of 256 KiB read per call, 1,000 entries listed or found,
    /// files over 2 MiB skipped by content search, 16 MiB per write (and per file
    /// `file_edit` changes), 30 seconds per call.
    pub fn new() -> Self {
        Self::default()
    }

    /// Serves only the tools that change nothing: `file_list`, `file_read`, `file_search`.
    #[must_use]
    pub fn read_only(mut self) -> Self {
        self.read_only = true;
        self
    }

    /// The most bytes `file_read` returns from one call; the model reads on from where it
    /// stopped with `start_line`.
    #[must_use]
    pub fn max_read_bytes(mut self, bytes: usize) -> Self {
        self.max_read_bytes = bytes.max(1);
        self
    }

    /// The most entries `file_list` lists and matches `file_search` returns.
    #[must_use]
    pub fn max_entries(mut self, entries: usize) -> Self {
        self.max_entries = entries.max(1);
        self
    }

    /// The largest file `file_write` and `file_edit` write, and the largest `file_edit`
    /// reads.
    #[must_use]
    pub fn max_write_bytes(mut self, bytes: usize) -> Self {
        self.max_write_bytes = bytes;
        self
    }

    /// How long one call of a file tool may run (30 seconds by default; at least a
    /// millisecond). Past it the call ends with [`ToolError::Timeout`](crate::ToolError::Timeout)
    /// and its work is stopped; a shorter
    /// [`with_default_timeout`](ToolServerBuilder::with_default_timeout) still applies.
    #[must_use]
    pub fn time_limit(mut self, limit: Duration) -> Self {
        self.time_limit = limit.max(Duration::from_millis(1));
        self
    }
}

impl Builtin for FileOps {
    fn add_to(self, builder: ToolServerBuilder) -> ToolServerBuilder {
        let read_only = self.read_only;
        let builder = builder
            .with_state(self)
            .with_tool(read::FileListTool)
            .with_tool(read::FileReadTool)
            .with_tool(search::FileSearchTool);
        if read_only {
            return builder;
        }
        builder
            .with_tool(manage::FileWriteTool)
            .with_tool(manage::FileEditTool)
            .with_tool(manage::FileMoveTool)
            .with_tool(manage::FileCopyTool)
            .with_tool(manage::FileDeleteTool)
            .with_tool(manage::FileMkdirTool)
    }
}

/// What a tool that changed a file reports.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub(crate) struct Changed {
    /// The path changed, as later calls should write it.
    path: String,
    /// What was done.
    done: String,
}

impl Changed {
    fn new(place: &Place, done: impl Into<String>) -> Self {
        Self {
            path: place.shown.clone(),
            done: done.into(),
        }
    }
}
