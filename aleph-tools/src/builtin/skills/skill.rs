//! One Markdown skill: a `SKILL.md` file read into its front matter and a body with
//! `{{argument}}` placeholders.

use std::fmt::Write as _;
use std::io::Read as _;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::SkillError;
use crate::context::ToolContext;
use crate::error::ToolError;
use crate::result::ToolOutput;
use crate::tool::{
    BoxFuture, RuntimeTool, ToolAnnotations, ToolCategory, ToolDefinition, ToolHandler,
};
use crate::util::names::is_valid_tool_name;

/// The file a skill directory holds.
pub(super) const SKILL_FILE: &str = "SKILL.md";

/// The largest `SKILL.md` read: a skill is instructions for a model, not a data file.
const MAX_SKILL_BYTES: u64 = 1024 * 1024;

/// A Markdown skill: instructions a model fetches by calling a tool, with arguments filled
/// into the text.
///
/// A skill is a directory holding a `SKILL.md` whose YAML front matter names and describes
/// it and declares its arguments; the body below it is what a call returns, each
/// `{{argument}}` replaced by the value given:
///
/// ```markdown
/// ---
/// name: release-notes
/// description: Draft release notes for a version from the merged changes.
/// arguments:
///   - name: version
///     description: The version being released, such as 2.4.0.
///   - name: audience
///     description: Who reads the notes.
///     default: developers
/// ---
/// Write the release notes for {{version}}, for {{ audience }}. ...
/// ```
///
/// `name` defaults to the directory's name; `description` is required. An argument is
/// required unless it has a `default` or says `required: false` (then it is empty when not
/// given). Only declared arguments are replaced: other `{{…}}` text, such as a template in a
/// code block, stays as written. `tags` is read; other keys (the Agent Skills format's
/// `license`, `allowed-tools`, `metadata`) are left to the tools that use them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    name: String,
    description: String,
    arguments: Vec<SkillArgument>,
    tags: Vec<String>,
    body: String,
    path: PathBuf,
    /// The body cut at its placeholders.
    pieces: Vec<Piece>,
}

/// An argument a [`Skill`] declares.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct SkillArgument {
    /// Its name, as the placeholder `{{name}}` and the tool's parameter.
    pub name: String,
    /// What to give, for the model.
    #[serde(default)]
    pub description: Option<String>,
    /// Whether a call must give it.
    #[serde(default)]
    pub required: Option<bool>,
    /// The value used when a call does not give it.
    #[serde(default)]
    pub default: Option<String>,
}

impl SkillArgument {
    /// Whether a call must give it: as `required` says, else when it has no default.
    pub fn is_required(&self) -> bool {
        self.required.unwrap_or(self.default.is_none())
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Text(Range<usize>),
    Argument(usize),
}

#[derive(Deserialize)]
struct FrontMatter {
    name: Option<String>,
    description: Option<String>,
    #[serde(default)]
    arguments: Vec<SkillArgument>,
    #[serde(default)]
    tags: Vec<String>,
}

impl Skill {
    /// Reads the skill in `dir` (its `SKILL.md`); its name defaults to the directory's.
    ///
    /// # Errors
    ///
    /// [`SkillError::Read`] when the file cannot be read; [`SkillError::Invalid`] when it is
    /// not a regular file, is over 1 MiB or not UTF-8, has no front matter or front matter
    /// that is not valid YAML, lacks a description, or has a name, argument or tag that
    /// cannot be used.
    pub fn read(dir: &Path) -> Result<Self, SkillError> {
        Self::read_within(dir, None)
    }

    /// Reads the skill in `dir`, which must lead inside `root` (canonical) when given: the
    /// file actually opened is judged, so a link swapped in after a check is caught too.
    pub(super) fn read_within(dir: &Path, root: Option<&Path>) -> Result<Self, SkillError> {
        let path = dir.join(SKILL_FILE);
        let invalid = |problem: String| SkillError::Invalid {
            path: path.clone(),
            problem,
        };
        let read_error = |e: std::io::Error| SkillError::Read {
            path: path.clone(),
            message: e.to_string(),
        };
        let not_a_file = || {
            invalid(
                "it is not a regular file (a directory, pipe or device); a skill's SKILL.md is a Markdown file".to_owned(),
            )
        };
        // Never waits on a named pipe swapped in, never opens a device.
        let file = match crate::util::regular_file::open_regular(&path) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::InvalidInput => return Err(not_a_file()),
            Err(e) => return Err(read_error(e)),
        };
        let meta = file.metadata().map_err(read_error)?;
        if let Some(root) = root {
            let real = opened_path(&file, &path).map_err(read_error)?;
            if !real.starts_with(root) {
                return Err(SkillError::Outside {
                    path: path.clone(),
                    target: real,
                });
            }
        }
        let size = meta.len();
        if size > MAX_SKILL_BYTES {
            return Err(invalid(format!(
                "it is {size} bytes; a skill is at most 1 MiB (move reference material into \
                 other files of the skill's directory)"
            )));
        }
        let mut bytes = Vec::new();
        file.take(MAX_SKILL_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(read_error)?;
        if bytes.len() as u64 > MAX_SKILL_BYTES {
            return Err(invalid(
                "it grew past 1 MiB as it was read; a skill is at most 1 MiB".to_owned(),
            ));
        }
        let text =
            String::from_utf8(bytes).map_err(|e| invalid(format!("it is not UTF-8 text ({e})")))?;
        let default_name = dir.file_name().map(|n| n.to_string_lossy().into_owned());
        Self::parse(&text, default_name, path.clone()).map_err(invalid)
    }

    fn parse(text: &str, default_name: Option<String>, path: PathBuf) -> Result<Self, String> {
        let (front, body) = split_front_matter(text)?;
        let front: FrontMatter = serde_saphyr::from_str(front)
            .map_err(|e| format!("its front matter is not valid: {e}"))?;
        let name = front.name.or(default_name).ok_or(
            "it has no `name:` in its front matter, and its directory gives none".to_owned(),
        )?;
        if !is_valid_tool_name(&name) {
            return Err(format!(
                "its name `{name}` cannot name a tool: use 1 to 64 characters of a-z, A-Z, \
                 0-9, `_` and `-`"
            ));
        }
        let description = front
            .description
            .map(|d| d.trim().to_owned())
            .filter(|d| !d.is_empty())
            .ok_or(
                "it has no `description:` in its front matter; the model picks a skill by it"
                    .to_owned(),
            )?;
        check_arguments(&front.arguments)?;
        if let Some(tag) = front.tags.iter().find(|t| t.trim().is_empty()) {
            return Err(format!("its tag `{tag}` is empty"));
        }
        let body = body.to_owned();
        let pieces = cut(&body, &front.arguments);
        Ok(Self {
            name,
            description,
            arguments: front.arguments,
            tags: front.tags,
            body,
            path,
            pieces,
        })
    }

    /// Its name, which is also its tool's.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// What it is for, from its front matter.
    pub fn description(&self) -> &str {
        &self.description
    }

    /// The arguments it declares, in order.
    pub fn arguments(&self) -> &[SkillArgument] {
        &self.arguments
    }

    /// Its tags, from its front matter.
    pub fn tags(&self) -> &[String] {
        &self.tags
    }

    /// The Markdown below the front matter, placeholders unfilled.
    pub fn body(&self) -> &str {
        &self.body
    }

    /// The `SKILL.md` it was read from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The body with each declared argument's placeholder replaced by its value in `args`,
    /// else its default, else nothing. A string is filled in as it is; any other JSON value
    /// as JSON text.
    pub fn render(&self, args: &Map<String, Value>) -> String {
        let mut out = String::with_capacity(self.body.len());
        for piece in &self.pieces {
            match piece {
                Piece::Text(range) => out.push_str(&self.body[range.clone()]),
                Piece::Argument(index) => {
                    let argument = &self.arguments[*index];
                    match args.get(&argument.name) {
                        Some(Value::String(value)) => out.push_str(value),
                        Some(Value::Null) | None => {
                            out.push_str(argument.default.as_deref().unwrap_or_default());
                        }
                        Some(other) => {
                            let _ = write!(out, "{other}");
                        }
                    }
                }
            }
        }
        out
    }

    /// The tool that serves it: category [`Skill`](ToolCategory::Skill), one string
    /// parameter per argument, read-only.
    pub(super) fn into_tool(self) -> RuntimeTool<SkillHandler> {
        let properties: Map<String, Value> = self
            .arguments
            .iter()
            .map(|argument| {
                let mut schema = json!({ "type": "string" });
                if let Some(description) = &argument.description {
                    schema["description"] = json!(description);
                }
                if let Some(default) = &argument.default {
                    schema["default"] = json!(default);
                }
                (argument.name.clone(), schema)
            })
            .collect();
        let required: Vec<&str> = self
            .arguments
            .iter()
            .filter(|a| a.is_required())
            .map(|a| a.name.as_str())
            .collect();
        let parameters = json!({
            "type": "object",
            "properties": properties,
            "required": required,
            "additionalProperties": false,
        });
        let annotations = ToolAnnotations {
            read_only: Some(true),
            idempotent: Some(true),
            open_world: Some(false),
            ..ToolAnnotations::default()
        };
        let definition = ToolDefinition::new(&self.name, &self.description, parameters)
            .with_category(ToolCategory::Skill)
            .with_annotations(annotations)
            .with_tags(self.tags.iter().cloned());
        RuntimeTool::new(
            definition,
            SkillHandler {
                skill: Arc::new(self),
            },
        )
    }
}

/// Answers a skill's calls with its rendered body.
pub(crate) struct SkillHandler {
    skill: Arc<Skill>,
}

impl ToolHandler for SkillHandler {
    fn call<'a>(
        &'a self,
        _definition: &'a ToolDefinition,
        args: Value,
        _ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        let text = match &args {
            Value::Object(args) => self.skill.render(args),
            _ => self.skill.render(&Map::new()),
        };
        Box::pin(std::future::ready(Ok(ToolOutput::text(text))))
    }
}

/// Where the file `file`, opened from `path`, really is: as the system names the open file
/// (Linux), else `path` with every link followed.
fn opened_path(file: &std::fs::File, path: &Path) -> std::io::Result<PathBuf> {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        if let Ok(real) = std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd())) {
            return Ok(real);
        }
    }
    let _ = file;
    std::fs::canonicalize(path)
}

/// Splits `text` into its front matter (from a first line `---` up to the next line `---`)
/// and the body after it, blank lines at the body's start dropped. The front matter keeps
/// its opening `---` (a YAML document start), so the YAML parser's line numbers are the
/// file's.
fn split_front_matter(text: &str) -> Result<(&str, &str), String> {
    const MISSING: &str = "it does not start with front matter: put a line `---`, then \
                           `name:` and `description:` lines, then a line `---` at its top";
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.split_inclusive('\n');
    let first = lines.next().ok_or(MISSING)?;
    if first.trim_end() != "---" {
        return Err(MISSING.to_owned());
    }
    let mut offset = first.len();
    for line in lines {
        if line.trim_end() == "---" {
            let front = &text[..offset];
            let body = text[offset + line.len()..].trim_start_matches(['\r', '\n']);
            return Ok((front, body));
        }
        offset += line.len();
    }
    Err("its front matter has no closing line `---`".to_owned())
}

fn check_arguments(arguments: &[SkillArgument]) -> Result<(), String> {
    for (index, argument) in arguments.iter().enumerate() {
        let name = &argument.name;
        let usable = name.len() <= 64
            && name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if !usable {
            return Err(format!(
                "its argument name `{name}` cannot be used: start with a letter or `_`, then \
                 up to 64 letters, digits, `_` and `-`"
            ));
        }
        if arguments[..index].iter().any(|a| a.name == *name) {
            return Err(format!("it declares the argument `{name}` twice"));
        }
        if argument.required == Some(true) && argument.default.is_some() {
            return Err(format!(
                "its argument `{name}` is `required: true` and has a default; drop one"
            ));
        }
    }
    Ok(())
}

/// Cuts `body` at each `{{ name }}` whose name is one of `arguments`.
fn cut(body: &str, arguments: &[SkillArgument]) -> Vec<Piece> {
    let mut pieces = Vec::new();
    let mut done = 0;
    let mut from = 0;
    while let Some(open) = body[from..].find("{{").map(|i| from + i) {
        let Some(close) = body[open + 2..].find("}}").map(|i| open + 2 + i) else {
            break;
        };
        let inner = body[open + 2..close].trim();
        match arguments.iter().position(|a| a.name == inner) {
            Some(index) => {
                if done < open {
                    pieces.push(Piece::Text(done..open));
                }
                pieces.push(Piece::Argument(index));
                done = close + 2;
                from = done;
            }
            None => from = open + 2,
        }
    }
    if done < body.len() {
        pieces.push(Piece::Text(done..body.len()));
    }
    pieces
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Skill, String> {
        Skill::parse(text, Some("dir-name".into()), PathBuf::from("SKILL.md"))
    }

    fn args(value: &Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn placeholders_are_filled_and_other_braces_kept() {
        let skill = parse(
            "---\ndescription: d\narguments:\n  - name: who\n  - name: tone\n    default: calm\n---\n\n\
             Hi {{who}}, {{ tone }} {{ unknown }} ${{ env.X }} {{who}}{{",
        )
        .unwrap();
        assert_eq!(skill.name(), "dir-name");
        assert_eq!(
            skill.render(&args(&json!({ "who": "Ada" }))),
            "Hi Ada, calm {{ unknown }} ${{ env.X }} Ada{{"
        );
        assert_eq!(
            skill.render(&args(&json!({ "who": 7, "tone": "dry" }))),
            "Hi 7, dry {{ unknown }} ${{ env.X }} 7{{"
        );
    }

    #[test]
    fn front_matter_is_required_and_closed() {
        for (text, expected) in [
            ("no front matter", "does not start with front matter"),
            ("", "does not start with front matter"),
            ("---\ndescription: d\n", "no closing line"),
            ("---\ndescription: [\n---\n", "front matter is not valid"),
            ("---\nname: x\n---\nbody", "no `description:`"),
            ("---\ndescription: '  '\n---\n", "no `description:`"),
            (
                "---\nname: a b\ndescription: d\n---\n",
                "cannot name a tool",
            ),
            (
                "---\ndescription: d\narguments:\n  - name: 1x\n---\n",
                "argument name `1x`",
            ),
            (
                "---\ndescription: d\narguments:\n  - name: a\n  - name: a\n---\n",
                "argument `a` twice",
            ),
            (
                "---\ndescription: d\narguments:\n  - name: a\n    requried: true\n---\n",
                "requried",
            ),
            (
                "---\ndescription: d\narguments:\n  - name: a\n    required: true\n    default: x\n---\n",
                "drop one",
            ),
            ("---\ndescription: d\ntags: ['']\n---\n", "tag `` is empty"),
        ] {
            let error = parse(text).unwrap_err();
            assert!(error.contains(expected), "{text:?}: {error}");
        }
    }

    #[test]
    fn crlf_and_bom_are_read() {
        let skill =
            parse("\u{feff}---\r\nname: n\r\ndescription: d\r\n---\r\n\r\nBody\r\n").unwrap();
        assert_eq!(skill.name(), "n");
        assert_eq!(skill.body(), "Body\r\n");
    }

    #[test]
    fn required_follows_the_default() {
        let skill = parse(
            "---\ndescription: d\narguments:\n  - name: a\n  - name: b\n    default: x\n  - name: c\n    required: false\n---\n",
        )
        .unwrap();
        let required: Vec<bool> = skill
            .arguments()
            .iter()
            .map(SkillArgument::is_required)
            .collect();
        assert_eq!(required, [true, false, false]);
        let definition = crate::tool::AlephToolDyn::definition(&skill.into_tool());
        assert_eq!(definition.parameters["required"], json!(["a"]));
        assert_eq!(
            definition.parameters["properties"]["b"]["default"],
            json!("x")
        );
        assert_eq!(definition.category, ToolCategory::Skill);
    }
}
