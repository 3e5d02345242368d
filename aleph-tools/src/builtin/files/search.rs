//! Walking a directory the way a developer sees it (`.gitignore` honoured, `.git` left out),
//! and `file_search`: files by glob, lines by regular expression.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use cap_std::fs::Metadata;
use serde::Serialize;

use super::FileOps;
use super::read::sniff;
use crate::builtin::workspace::{Place, locate, shown};
use crate::context::{State, ToolContext};
use crate::error::{ArgumentProblem, ToolError};
use crate::tool;

/// An entry found by a [`Walk`].
pub(super) struct Found {
    /// The path below the walk's root directory.
    pub rel: PathBuf,
    /// The path as the model should write it.
    pub shown: String,
    /// The entry's own metadata (a symbolic link is not followed).
    pub meta: Metadata,
}

/// The entries below a place, in file-name order within each directory, checked again
/// through the place's root as they are found: an entry that a swapped-in symbolic link
/// puts outside is skipped.
pub(super) struct Walk<'a> {
    inner: ignore::Walk,
    place: &'a Place,
    ctx: &'a ToolContext,
}

impl<'a> Walk<'a> {
    pub fn new(ctx: &'a ToolContext, place: &'a Place, depth: Option<usize>) -> Self {
        let mut builder = ignore::WalkBuilder::new(&place.full);
        builder
            .max_depth(depth)
            .follow_links(false)
            .hidden(false)
            .parents(false)
            .git_global(false)
            .require_git(false)
            .sort_by_file_name(Ord::cmp)
            .filter_entry(|entry| entry.file_name() != ".git");
        // `.gitignore` files between the allowed directory and the place apply too; none
        // above the allowed directory is read.
        let root_path = place
            .full
            .ancestors()
            .nth(place.rel.components().count())
            .unwrap_or(&place.full);
        let mut dir = place.full.parent();
        while let Some(current) = dir {
            if !current.starts_with(root_path) {
                break;
            }
            let ignore_file = current.join(".gitignore");
            if ignore_file.is_file() {
                let _ = builder.add_ignore(ignore_file);
            }
            dir = current.parent();
        }
        Self {
            inner: builder.build(),
            place,
            ctx,
        }
    }
}

impl Iterator for Walk<'_> {
    type Item = Found;

    fn next(&mut self) -> Option<Found> {
        loop {
            let entry = self.inner.next()?.ok()?;
            if entry.depth() == 0 {
                continue;
            }
            let Ok(below) = entry.path().strip_prefix(&self.place.full) else {
                continue;
            };
            let rel = if self.place.is_root() {
                below.to_path_buf()
            } else {
                self.place.rel.join(below)
            };
            let Ok(meta) = self.place.root.symlink_metadata(&rel) else {
                continue;
            };
            return Some(Found {
                shown: shown(self.ctx, entry.path()),
                rel,
                meta,
            });
        }
    }
}

/// `file`, `dir` or `symlink`.
pub(super) fn entry_kind(meta: &Metadata) -> &'static str {
    if meta.is_symlink() {
        "symlink"
    } else if meta.is_dir() {
        "dir"
    } else {
        "file"
    }
}

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
#[tool(crate = crate, register = false, read_only, idempotent)]
pub(crate) fn file_search(
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
    let place = locate(ctx, &path)?;
    let mut hits = Vec::new();
    let mut truncated = false;
    'files: for found in Walk::new(ctx, &place, None) {
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
        let Some(lines) = text_lines(&place, &found.rel) else {
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
    Ok(Hits { hits, truncated })
}

/// The lines of a text file opened through the place's root, or `None` for a binary file or
/// one that cannot be opened.
fn text_lines(place: &Place, rel: &Path) -> Option<impl Iterator<Item = String>> {
    let file = place.root.open(rel).ok()?.into_std();
    let mut reader = BufReader::new(file);
    let head = reader.fill_buf().ok()?;
    let head = &head[..head.len().min(8192)];
    if sniff(head).is_some() {
        return None;
    }
    Some(reader.split(b'\n').map_while(Result::ok).map(|line| {
        String::from_utf8(line)
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
    }))
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
