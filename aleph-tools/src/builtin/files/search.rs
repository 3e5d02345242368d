//! `file_search`: files by glob, lines by regular expression, below a directory walked as
//! a developer sees it (see [`Walk`]).

use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use serde::Serialize;

use super::FileOps;
use super::job::{self, Stop};
use super::open::{Follow, open_regular};
use super::read::sniff;
use super::walk::Walk;
use crate::builtin::workspace::{Place, locate};
use crate::context::{State, ToolContext};
use crate::error::{ArgumentProblem, ToolError};
use crate::tool;

/// A line that matched.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub(crate) struct Hit {
    /// The file, as later calls should write it.
    path: String,
    /// The line's number, counting from 1 (absent when only names were searched).
    #[serde(skip_serializing_if = "Option::is_none")]
    line: Option<usize>,
    /// The line's text, cut to 300 characters (absent when only names were searched).
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<String>,
}

/// What `file_search` found.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub(crate) struct Hits {
    /// Files, or lines, in path order.
    hits: Vec<Hit>,
    /// Whether more were left out at the limit.
    truncated: bool,
}

/// Find files by name and lines by content below a directory.
///
/// `glob` matches paths below `path` (`**/*.rs`, `src/*.toml`); `query` is a regular
/// expression matched against each line of text files. Give either or both. Files ignored by
/// `.gitignore`, binary files and very large files are skipped.
#[tool(
    crate = crate,
    register = false,
    read_only,
    idempotent,
    callers = [human, code_execution]
)]
pub(crate) async fn file_search(
    /// Glob over paths below `path`, such as `**/*.md`
    glob: Option<String>,
    /// Regular expression to find in lines, such as `fn \w+_test`
    query: Option<String>,
    /// The directory to search in
    #[arg(default = ".".to_owned())]
    path: String,
    /// Whether `query` tells capitals from small letters
    #[arg(default = true)]
    case_sensitive: bool,
    limits: State<FileOps>,
    ctx: &ToolContext,
) -> Result<Hits, ToolError> {
    let tool = ctx.tool_name().unwrap_or("file_search").to_owned();
    if glob.is_none() && query.is_none() {
        return Err(ToolError::invalid_args(
            tool,
            vec![ArgumentProblem::new("", "`glob`, `query` or both").received("neither")],
        ));
    }
    let glob = glob
        .map(|g| {
            globset::GlobBuilder::new(&g)
                .literal_separator(true)
                .build()
                .map(|glob| glob.compile_matcher())
                .map_err(|e| {
                    ToolError::invalid_args(
                        &tool,
                        vec![
                            ArgumentProblem::new("/glob", "a glob such as `**/*.rs`")
                                .received(format!("`{g}`: {}", e.kind())),
                        ],
                    )
                })
        })
        .transpose()?;
    let query = query
        .map(|q| {
            regex::RegexBuilder::new(&q)
                .case_insensitive(!case_sensitive)
                .size_limit(1 << 20)
                .build()
                .map_err(|e| {
                    ToolError::invalid_args(
                        &tool,
                        vec![
                            ArgumentProblem::new("/query", "a regular expression")
                                .received(format!("`{q}`: {}", last_line(&e.to_string()))),
                        ],
                    )
                })
        })
        .transpose()?;
    let time_limit = limits.time_limit;
    job::run(ctx, time_limit, move |ctx, stop| {
        let place = locate(ctx, &path)?;
        let walk = Walk::new(ctx, &place, None, stop).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotADirectory => ToolError::execution(format!(
                "`{}` is a file, not a directory; search its directory, or read it with file_read",
                place.shown
            )),
            _ => place.error(&e),
        })?;
        let mut hits = Vec::new();
        let mut truncated = false;
        'files: for found in walk {
            if !found.meta.is_file() {
                continue;
            }
            if let Some(glob) = &glob {
                let below = found.rel.strip_prefix(&place.rel).unwrap_or(&found.rel);
                if !glob.is_match(below) {
                    continue;
                }
            }
            let Some(query) = &query else {
                if hits.len() == limits.max_entries {
                    truncated = true;
                    break;
                }
                hits.push(Hit {
                    path: found.shown,
                    line: None,
                    text: None,
                });
                continue;
            };
            if found.meta.len() > limits.max_search_file_bytes {
                continue;
            }
            let Some(lines) = text_lines(&place, &found.rel, limits.max_search_file_bytes, stop)
            else {
                continue;
            };
            for (index, line) in lines.enumerate() {
                if query.is_match(&line) {
                    if hits.len() == limits.max_entries {
                        truncated = true;
                        break 'files;
                    }
                    hits.push(Hit {
                        path: found.shown.clone(),
                        line: Some(index + 1),
                        text: Some(cut(&line, 300)),
                    });
                }
            }
        }
        stop.check()?;
        Ok(Hits { hits, truncated })
    })
    .await
}

/// The lines of a text file opened through the place's root, at most `max` bytes of them,
/// or `None` for a binary file, one that is not a regular file (whatever was swapped in
/// since the walk saw it) or one that cannot be opened. The lines end early once `stop` is
/// requested.
fn text_lines<'a>(
    place: &Place,
    rel: &Path,
    max: u64,
    stop: &'a Stop,
) -> Option<impl Iterator<Item = String> + 'a> {
    let (file, meta) = open_regular(&place.root, rel, Follow::No).ok()?;
    if meta.len() > max {
        return None;
    }
    let mut reader = BufReader::new(file.take(max));
    let head = reader.fill_buf().ok()?;
    let head = &head[..head.len().min(8192)];
    if sniff(head).is_some() {
        return None;
    }
    Some(
        reader
            .split(b'\n')
            .map_while(Result::ok)
            .take_while(|_| !stop.requested())
            .map(|line| {
                String::from_utf8(line)
                    .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
            }),
    )
}

/// The last line of a multi-line error message: the one that says what is wrong.
fn last_line(text: &str) -> &str {
    text.lines().last().unwrap_or(text).trim()
}

/// `text` cut to `max` characters, with `…` when cut.
fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.trim_end_matches('\r').to_owned(),
    }
}
