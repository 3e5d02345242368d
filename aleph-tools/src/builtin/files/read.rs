//! The tools that look: `file_list` and `file_read`.

use std::fmt::Write as _;
use std::io::{self, BufRead, BufReader, Read, Seek};

use serde::Serialize;

use super::FileOps;
use super::job::{self, Stop};
use super::open::{Follow, open_regular};
use super::walk::{Walk, entry_kind};
use crate::builtin::workspace::locate;
use crate::context::{State, ToolContext};
use crate::error::ToolError;
use crate::result::ToolOutput;
use crate::tool;

/// How many leading bytes decide whether a file is text.
const SNIFF_BYTES: usize = 8192;

/// One entry of a listing.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub(crate) struct Entry {
    /// The path, as later calls should write it.
    path: String,
    /// `file`, `dir`, `symlink` or `other` (a FIFO, socket or device).
    kind: &'static str,
    /// The size in bytes, for files.
    #[serde(skip_serializing_if = "Option::is_none")]
    size: Option<u64>,
}

/// A listing.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub(crate) struct Listing {
    /// The entries, sorted by path within each directory.
    entries: Vec<Entry>,
    /// Whether more entries were left out at the limit.
    truncated: bool,
}

/// List the files and directories in a directory.
///
/// Entries ignored by `.gitignore` and the `.git` directory are left out. `depth` 1 lists the
/// directory itself; more goes down into subdirectories.
#[tool(
    crate = crate,
    register = false,
    read_only,
    idempotent,
    callers = [human, code_execution]
)]
pub(crate) async fn file_list(
    /// The directory to list, relative to the working directory or absolute
    #[arg(default = ".".to_owned())]
    path: String,
    /// How many levels to go down (1 to 8)
    #[arg(default = 1)]
    #[schemars(range(min = 1, max = 8))]
    depth: usize,
    limits: State<FileOps>,
    ctx: &ToolContext,
) -> Result<Listing, ToolError> {
    job::run(ctx, limits.time_limit, move |ctx, stop| {
        let place = locate(ctx, &path)?;
        let meta = place
            .root
            .metadata(&place.rel)
            .map_err(|e| place.error(&e))?;
        if !meta.is_dir() {
            return Err(ToolError::execution(format!(
                "`{}` is a file, not a directory; read it with file_read",
                place.shown
            )));
        }
        let mut entries = Vec::new();
        let mut truncated = false;
        let walk =
            Walk::new(ctx, &place, Some(depth.clamp(1, 8)), stop).map_err(|e| place.error(&e))?;
        for found in walk {
            if entries.len() == limits.max_entries {
                truncated = true;
                break;
            }
            let kind = entry_kind(&found.meta);
            entries.push(Entry {
                path: found.shown,
                kind,
                size: (kind == "file").then(|| found.meta.len()),
            });
        }
        stop.check()?;
        Ok(Listing { entries, truncated })
    })
    .await
}

/// What `file_read` read.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub(crate) struct Excerpt {
    /// The file, as later calls should write it.
    path: String,
    /// The first line returned, counting from 1.
    start_line: usize,
    /// The last line returned (0 when none was).
    end_line: usize,
    /// The number of lines in the file, when the read reached its end.
    #[serde(skip_serializing_if = "Option::is_none")]
    total_lines: Option<usize>,
    /// Where to continue reading, when the read stopped before the end.
    #[serde(skip_serializing_if = "Option::is_none")]
    next_start_line: Option<usize>,
    /// The text read.
    content: String,
}

/// Read a text file, whole or a range of its lines.
///
/// Long files are returned in parts: when the result has `next_start_line`, call again with
/// `start_line` set to it. Binary files are refused.
#[tool(
    crate = crate,
    register = false,
    read_only,
    idempotent,
    callers = [human, code_execution]
)]
pub(crate) async fn file_read(
    /// The file to read, relative to the working directory or absolute
    path: String,
    /// The first line to return, counting from 1
    #[arg(default = 1)]
    #[schemars(range(min = 1))]
    start_line: usize,
    /// How many lines to return; all that fit when left out
    #[schemars(range(min = 1))]
    line_count: Option<usize>,
    limits: State<FileOps>,
    ctx: &ToolContext,
) -> Result<ToolOutput, ToolError> {
    job::run(ctx, limits.time_limit, move |ctx, stop| {
        read(
            ctx,
            &path,
            start_line,
            line_count,
            limits.max_read_bytes,
            stop,
        )
    })
    .await
}

/// `file_read`'s work.
fn read(
    ctx: &ToolContext,
    path: &str,
    start_line: usize,
    line_count: Option<usize>,
    max: usize,
    stop: &Stop,
) -> Result<ToolOutput, ToolError> {
    let place = locate(ctx, path)?;
    let tool = ctx.tool_name().unwrap_or("file_read");
    let (mut file, meta) =
        open_regular(&place.root, &place.rel, Follow::Yes).map_err(|e| e.at(&place.shown, tool))?;
    if let Some(why) = binary(&mut file).map_err(|e| place.error(&e))? {
        return Err(ToolError::execution(format!(
            "`{}` is a binary file ({} bytes, {why}); file_read reads text only",
            place.shown,
            meta.len()
        )));
    }
    let start = start_line.max(1);
    let lines = read_lines(file, start, line_count, max, stop).map_err(|e| place.error(&e))?;
    stop.check()?;
    let mut text = lines.content.clone();
    if let Some(next) = lines.next_start_line {
        let why = if lines.cut_line {
            format!(
                "line {} is longer than the {max}-byte limit of one read and was cut",
                lines.end_line
            )
        } else if lines.full {
            format!(
                "the file goes on past the {max}-byte limit of one read ({} bytes in all)",
                meta.len()
            )
        } else {
            "the file goes on".to_owned()
        };
        let _ = write!(
            text,
            "\n[{why}: read on with start_line = {next}, or pick lines with start_line and line_count]"
        );
    } else if lines.end_line < start {
        text = format!(
            "[`{}` has {} lines; there is nothing from line {start}]",
            place.shown,
            lines.total.unwrap_or_default()
        );
    }
    let excerpt = Excerpt {
        path: place.shown,
        start_line: start,
        end_line: lines.end_line,
        total_lines: lines.total,
        next_start_line: lines.next_start_line,
        content: lines.content,
    };
    let data = serde_json::to_value(&excerpt).map_err(ToolError::execution)?;
    Ok(ToolOutput::new(text, data))
}

/// Why a file is not text, from its first bytes (`None` when it is text); the file is left
/// at its start.
fn binary(file: &mut std::fs::File) -> io::Result<Option<&'static str>> {
    let mut head = Vec::with_capacity(SNIFF_BYTES);
    file.by_ref()
        .take(SNIFF_BYTES as u64)
        .read_to_end(&mut head)?;
    file.rewind()?;
    Ok(sniff(&head))
}

/// Why bytes read from a file's start are not text, or `None`.
pub(super) fn sniff(head: &[u8]) -> Option<&'static str> {
    if head.contains(&0) {
        return Some("it contains NUL bytes");
    }
    match std::str::from_utf8(head) {
        Ok(_) => None,
        // Cut in the middle of a character at the sniff boundary: still text.
        Err(err) if err.error_len().is_none() => None,
        Err(_) => Some("it is not UTF-8 text"),
    }
}

/// Lines read from a file.
struct Lines {
    content: String,
    end_line: usize,
    total: Option<usize>,
    next_start_line: Option<usize>,
    /// The first line returned was longer than the limit and was cut.
    cut_line: bool,
    /// The read stopped at the limit.
    full: bool,
}

/// Reads lines `start..start + count` (to the end when `count` is `None`) within `max` bytes,
/// never holding more than `max` bytes however long a line is. Whole lines are kept when
/// any fit; a first line longer than `max` is cut at a character boundary.
fn read_lines(
    file: std::fs::File,
    start: usize,
    count: Option<usize>,
    max: usize,
    stop: &Stop,
) -> io::Result<Lines> {
    let mut reader = BufReader::with_capacity(64 * 1024, file);
    let mut out: Vec<u8> = Vec::new();
    let mut line = 1usize;
    let mut in_line = false; // bytes of the current line were read
    let mut stopped_at: Option<usize> = None;
    let mut cut_line = false;
    let mut full = false;
    let last = count.map(|c| start.saturating_add(c));
    loop {
        if stop.requested() {
            return Err(io::Error::other("stopped: the call ended"));
        }
        if last == Some(line) {
            stopped_at = Some(line);
            break;
        }
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            break;
        }
        let (len, ends_line) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (buf.len(), false),
        };
        if line >= start {
            let room = max - out.len();
            if len > room {
                full = true;
                // The line does not fit: keep the whole lines read so far, or cut this one
                // when it is the first.
                if let Some(end) = out.iter().rposition(|&b| b == b'\n') {
                    out.truncate(end + 1);
                    stopped_at = Some(line);
                } else {
                    out.extend_from_slice(&buf[..room]);
                    cut_line = true;
                    stopped_at = Some(line + 1);
                }
                break;
            }
            out.extend_from_slice(&buf[..len]);
        }
        reader.consume(len);
        in_line = !ends_line;
        if ends_line {
            line += 1;
        }
    }
    // A read that stopped exactly at the end of the file has nothing left to read.
    if stopped_at.is_some() && at_end(&mut reader, cut_line) {
        stopped_at = None;
    }
    // After a full read `line` is one past the last line, unless the file ends without a
    // newline, in which case the unterminated last line counts too.
    let total = if in_line { line } else { line - 1 };
    let end_line = stopped_at.map_or(total, |next| next - 1);
    let end_line = if end_line < start { 0 } else { end_line };
    Ok(Lines {
        content: text_of(out),
        end_line,
        total: stopped_at.is_none().then_some(total),
        next_start_line: stopped_at,
        cut_line,
        full,
    })
}

/// Whether the reader has nothing more (a cut line always has more).
fn at_end(reader: &mut BufReader<std::fs::File>, cut_line: bool) -> bool {
    !cut_line && reader.fill_buf().is_ok_and(<[u8]>::is_empty)
}

/// Bytes as text: cut before a character the limit split, other invalid bytes replaced.
fn text_of(mut bytes: Vec<u8>) -> String {
    if let Err(err) = std::str::from_utf8(&bytes)
        && err.error_len().is_none()
    {
        bytes.truncate(err.valid_up_to());
    }
    match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(err) => String::from_utf8_lossy(err.as_bytes()).into_owned(),
    }
}
