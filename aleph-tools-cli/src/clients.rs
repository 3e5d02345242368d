//! `install-client`: the entry that starts `aleph-tools serve --stdio`, written into an MCP
//! client's configuration file where that client reads it, with absolute paths, the rest of
//! the file (its other servers, its comments) kept as it was.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use clap::ValueEnum;
use jsonc_parser::ParseOptions;
use jsonc_parser::cst::{CstInputValue, CstRootNode};

/// The MCP clients `install-client` writes the configuration of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Client {
    /// Claude Desktop: `claude_desktop_config.json` in the user's configuration directory
    Claude,
    /// Claude Code: the user's `~/.claude.json`, or the project's `.mcp.json`
    ClaudeCode,
    /// Cursor: `~/.cursor/mcp.json`, or the project's `.cursor/mcp.json`
    Cursor,
    /// Visual Studio Code: the user's `mcp.json`, or the project's `.vscode/mcp.json`
    Vscode,
}

impl Client {
    fn title(self) -> &'static str {
        match self {
            Self::Claude => "Claude Desktop",
            Self::ClaudeCode => "Claude Code",
            Self::Cursor => "Cursor",
            Self::Vscode => "VS Code",
        }
    }

    /// The key the client reads its servers under.
    fn servers_key(self) -> &'static str {
        match self {
            Self::Vscode => "servers",
            Self::Claude | Self::ClaudeCode | Self::Cursor => "mcpServers",
        }
    }

    /// The file the client reads, for the user or for the project `project`.
    fn file(self, project: Option<&Path>) -> anyhow::Result<PathBuf> {
        Ok(match (self, project) {
            (Self::Claude, Some(_)) => bail!(
                "Claude Desktop reads one file for the user, not one per project: leave out --project"
            ),
            (Self::Claude, None) => app_config_dir()?.join("Claude/claude_desktop_config.json"),
            (Self::ClaudeCode, Some(project)) => project.join(".mcp.json"),
            // Claude Code's user scope: the servers under the top level's `mcpServers` are
            // started in every project.
            (Self::ClaudeCode, None) => home()?.join(".claude.json"),
            (Self::Cursor, Some(project)) => project.join(".cursor/mcp.json"),
            (Self::Cursor, None) => home()?.join(".cursor/mcp.json"),
            (Self::Vscode, Some(project)) => project.join(".vscode/mcp.json"),
            (Self::Vscode, None) => app_config_dir()?.join("Code/User/mcp.json"),
        })
    }

    /// The entry for a server started as `command args…`.
    fn entry(self, command: &str, args: &[String]) -> CstInputValue {
        let args = CstInputValue::Array(args.iter().cloned().map(CstInputValue::String).collect());
        let mut entry = Vec::new();
        if matches!(self, Self::Vscode | Self::ClaudeCode) {
            entry.push(("type".to_owned(), "stdio".into()));
        }
        entry.push(("command".to_owned(), command.into()));
        entry.push(("args".to_owned(), args));
        // Claude Desktop starts servers with a PATH of its own, without the user's
        // additions; the tools the server starts (node, python3) are found on this one.
        if self == Self::Claude
            && let Some(path) = std::env::var_os("PATH").and_then(|path| path.into_string().ok())
        {
            entry.push((
                "env".to_owned(),
                CstInputValue::Object(vec![("PATH".to_owned(), path.into())]),
            ));
        }
        CstInputValue::Object(entry)
    }
}

/// What `install-client` was asked.
pub struct Install {
    /// The client.
    pub client: Client,
    /// The server's name in the client.
    pub name: String,
    /// The project, for a project's file.
    pub project: Option<PathBuf>,
    /// Print the file as it would be written, and write nothing.
    pub print: bool,
    /// The arguments after `aleph-tools`: `serve --stdio` and the options that shape it.
    pub args: Vec<String>,
}

/// Writes (or prints) the client's file with the entry added, or replacing one of the same
/// name.
pub fn install(request: &Install) -> anyhow::Result<()> {
    if request.name.trim().is_empty() {
        bail!("--name is empty; give the name the client shows the server under");
    }
    let command = std::env::current_exe()
        .and_then(std::fs::canonicalize)
        .context("the path of this program cannot be read")?;
    let command = command
        .to_str()
        .context("the path of this program is not UTF-8, which the clients' files need")?
        .to_owned();
    let project = request
        .project
        .as_deref()
        .map(|project| {
            std::fs::canonicalize(project).with_context(|| {
                format!(
                    "--project `{}` is not a directory that exists",
                    project.display()
                )
            })
        })
        .transpose()?;
    let file = request.client.file(project.as_deref())?;
    let existing = match std::fs::read_to_string(&file) {
        Ok(text) => Some(text),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => None,
        Err(error) => {
            return Err(error).with_context(|| format!("`{}` cannot be read", file.display()));
        }
    };
    let entry = request.client.entry(&command, &request.args);
    let (text, replaced) = with_entry(
        existing.as_deref().unwrap_or("{}\n"),
        request.client.servers_key(),
        &request.name,
        entry,
    )
    .with_context(|| {
        format!(
            "`{}` is not a JSON object the entry can be added to; fix it, or add the entry by hand (--print shows it)",
            file.display()
        )
    })?;
    if request.print {
        print!("{text}");
        return Ok(());
    }
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("`{}` cannot be made", dir.display()))?;
    }
    write_whole(&file, &text)?;
    eprintln!(
        "{} `{}` in {} ({}): {command} {}",
        if replaced { "replaced" } else { "added" },
        request.name,
        request.client.title(),
        file.display(),
        request.args.join(" ")
    );
    if request.client == Client::Claude {
        eprintln!("restart Claude Desktop to start it");
    }
    Ok(())
}

/// `text` (JSON with comments) with `entry` under `servers_key`.`name`, and whether one was
/// there before.
fn with_entry(
    text: &str,
    servers_key: &str,
    name: &str,
    entry: CstInputValue,
) -> anyhow::Result<(String, bool)> {
    let root = CstRootNode::parse(text, &ParseOptions::default())
        .map_err(|error| anyhow::anyhow!("{error}"))?;
    let servers = root
        .object_value_or_create()
        .context("its top level is not an object")?
        .object_value_or_create(servers_key)
        .with_context(|| format!("its `{servers_key}` is not an object"))?;
    let replaced = if let Some(old) = servers.get(name) {
        old.set_value(entry);
        true
    } else {
        servers.append(name, entry);
        false
    };
    let mut text = root.to_string();
    if !text.ends_with('\n') {
        text.push('\n');
    }
    Ok((text, replaced))
}

/// Writes `text` to a temporary file beside `file`, then moves it into place.
fn write_whole(file: &Path, text: &str) -> anyhow::Result<()> {
    let mut temp = file.as_os_str().to_owned();
    temp.push(format!(".aleph-tools-{}.tmp", std::process::id()));
    let temp = PathBuf::from(temp);
    std::fs::write(&temp, text)
        .and_then(|()| std::fs::rename(&temp, file))
        .inspect_err(|_| {
            let _ = std::fs::remove_file(&temp);
        })
        .with_context(|| format!("`{}` cannot be written", file.display()))
}

fn home() -> anyhow::Result<PathBuf> {
    std::env::home_dir()
        .filter(|home| home.is_absolute())
        .context("the home directory is unknown (HOME is not set)")
}

/// Where applications keep their configuration: `~/Library/Application Support` on macOS,
/// `%APPDATA%` on Windows, `$XDG_CONFIG_HOME` (else `~/.config`) elsewhere.
fn app_config_dir() -> anyhow::Result<PathBuf> {
    if cfg!(target_os = "macos") {
        return Ok(home()?.join("Library/Application Support"));
    }
    if cfg!(windows) {
        return std::env::var_os("APPDATA")
            .map(PathBuf::from)
            .context("APPDATA is not set");
    }
    match std::env::var_os("XDG_CONFIG_HOME").map(PathBuf::from) {
        Some(dir) if dir.is_absolute() => Ok(dir),
        _ => Ok(home()?.join(".config")),
    }
}

/// Makes `path` absolute (against the working directory), for a client that starts the
/// server from a directory of its own.
pub fn absolute(path: &Path) -> anyhow::Result<OsString> {
    std::path::absolute(path)
        .map(PathBuf::into_os_string)
        .with_context(|| format!("`{}` cannot be made absolute", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_is_added_beside_what_the_file_holds_and_replaces_its_namesake() {
        let text = "{\n  // the user's own\n  \"theme\": \"dark\",\n  \"mcpServers\": {\n    \"other\": { \"command\": \"x\" }\n  }\n}\n";
        let entry = Client::Cursor.entry("/bin/aleph-tools", &["serve".into(), "--stdio".into()]);
        let (added, replaced) = with_entry(text, "mcpServers", "aleph", entry.clone()).unwrap();
        assert!(!replaced);
        assert!(added.contains("// the user's own"), "{added}");
        assert!(
            added.contains("\"other\": { \"command\": \"x\" }"),
            "{added}"
        );
        assert!(added.contains("\"/bin/aleph-tools\""), "{added}");
        let (again, replaced) = with_entry(&added, "mcpServers", "aleph", entry).unwrap();
        assert!(replaced);
        assert_eq!(again.matches("\"aleph\"").count(), 1, "{again}");
        let (fresh, _) =
            with_entry("{}", "servers", "aleph", Client::Vscode.entry("/a", &[])).unwrap();
        assert!(fresh.contains("\"type\": \"stdio\""), "{fresh}");
        for broken in ["[1, 2]", "{ \"servers\": 3 }", "{ nope"] {
            let entry = Client::Vscode.entry("/a", &[]);
            assert!(
                with_entry(broken, "servers", "aleph", entry).is_err(),
                "{broken}"
            );
        }
    }
}
