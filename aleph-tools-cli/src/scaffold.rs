//! `aleph-tools plugins new`: writes a new plugin's directory, a Node.js program on
//! `@aleph/plugin-sdk` or a Rust crate built to WebAssembly, that installs or builds and then
//! loads as written.
//!
//! The templates are the files under `src/scaffold/`, with `{{id}}`, `{{package}}` and
//! `{{sdk_version}}` filled in.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use clap::{Args, ValueEnum};

/// The version of `@aleph/plugin-sdk` a new Node.js plugin depends on (as `^` this): the
/// version in `sdk/node/package.json`, which a test holds this to.
pub const SDK_VERSION: &str = "0.1.0";

/// The longest plugin id the manifest accepts.
const MAX_ID: usize = 64;

/// `plugins new`.
#[derive(Args)]
pub struct New {
    /// The plugin's id: a lowercase letter, then up to 63 of `a-z 0-9 - _ .`
    #[arg(value_name = "NAME", value_parser = plugin_id)]
    pub id: String,
    /// What the plugin is written in
    #[arg(long, value_enum)]
    pub kind: Kind,
    /// The plugin's directory, written into; it may exist if it is empty [default: ./NAME]
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Print what was written as JSON
    #[arg(long)]
    pub json: bool,
}

/// What a new plugin is written in.
#[derive(Clone, Copy, PartialEq, Eq, Debug, ValueEnum)]
pub enum Kind {
    /// JavaScript, with @aleph/plugin-sdk: a package.json, an ES module entry, the manifest
    Nodejs,
    /// Rust compiled to WebAssembly with extism-pdk: a cdylib crate, the manifest
    Wasm,
}

impl Kind {
    /// The manifest's name for the kind.
    fn name(self) -> &'static str {
        match self {
            Self::Nodejs => "nodejs",
            Self::Wasm => "wasm",
        }
    }

    /// The files a plugin of this kind starts with.
    fn templates(self) -> &'static [Template] {
        match self {
            Self::Nodejs => NODEJS,
            Self::Wasm => WASM,
        }
    }

    /// What to run in the plugin's directory before it loads.
    fn build_steps(self) -> &'static [&'static str] {
        match self {
            Self::Nodejs => &["npm install"],
            Self::Wasm => &[
                "rustup target add wasm32-unknown-unknown",
                "cargo build --release --target wasm32-unknown-unknown",
                "cp target/wasm32-unknown-unknown/release/plugin.wasm .",
            ],
        }
    }
}

/// One file of a new plugin: where it goes in the plugin's directory, and its text.
struct Template {
    path: &'static str,
    text: &'static str,
}

/// A Node.js plugin's files.
const NODEJS: &[Template] = &[
    Template {
        path: "aleph_plugin.toml",
        text: include_str!("scaffold/nodejs/aleph_plugin.toml"),
    },
    Template {
        path: "package.json",
        text: include_str!("scaffold/nodejs/package.json"),
    },
    Template {
        path: "index.js",
        text: include_str!("scaffold/nodejs/index.js"),
    },
    Template {
        path: "README.md",
        text: include_str!("scaffold/nodejs/README.md"),
    },
    Template {
        path: ".gitignore",
        text: include_str!("scaffold/nodejs/gitignore"),
    },
];

/// A WebAssembly plugin's files. (`Cargo.toml.in`: a `Cargo.toml` in this package's sources
/// would be a package of its own, left out of this one's.)
const WASM: &[Template] = &[
    Template {
        path: "aleph_plugin.toml",
        text: include_str!("scaffold/wasm/aleph_plugin.toml"),
    },
    Template {
        path: "Cargo.toml",
        text: include_str!("scaffold/wasm/Cargo.toml.in"),
    },
    Template {
        path: "src/lib.rs",
        text: include_str!("scaffold/wasm/lib.rs"),
    },
    Template {
        path: "README.md",
        text: include_str!("scaffold/wasm/README.md"),
    },
    Template {
        path: ".gitignore",
        text: include_str!("scaffold/wasm/gitignore"),
    },
];

/// Checks a plugin id as the manifest does: a lowercase letter, then up to 63 of
/// `a-z 0-9 - _ .`. The value parser of `NAME`, so a bad one is a usage error.
///
/// # Errors
///
/// What is wrong with it, and the rule.
pub fn plugin_id(text: &str) -> Result<String, String> {
    let rule = "a plugin id is a lowercase letter followed by up to 63 of `a-z 0-9 - _ .`, such as `my-plugin`";
    let mut chars = text.chars();
    if !chars.next().is_some_and(|c| c.is_ascii_lowercase()) {
        return Err(format!("it does not start with a lowercase letter; {rule}"));
    }
    if text.len() > MAX_ID {
        return Err(format!("it is {} characters long; {rule}", text.len()));
    }
    if let Some(bad) = chars
        .find(|&c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '-' | '_' | '.')))
    {
        return Err(format!("it has `{bad}`; {rule}"));
    }
    Ok(text.to_owned())
}

/// What `new` wrote.
struct Written {
    dir: PathBuf,
    files: Vec<&'static str>,
}

/// Writes the plugin `new` asks for and prints what was written and what to do next.
///
/// # Errors
///
/// When the directory is a file or holds anything, or a file cannot be written.
pub fn run(new: &New) -> anyhow::Result<()> {
    let dir = new.dir.clone().unwrap_or_else(|| PathBuf::from(&new.id));
    let written = write(&dir, &new.id, new.kind)?;
    let next = next_steps(&dir, new.kind);
    if new.json {
        let dir = written.dir.canonicalize().unwrap_or(written.dir);
        let report = serde_json::json!({
            "id": new.id,
            "kind": new.kind.name(),
            "dir": dir,
            "files": written.files,
            "next": next,
        });
        println!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(());
    }
    let mut text = format!(
        "wrote the {} plugin `{}` in `{}`:\n",
        new.kind.name(),
        new.id,
        written.dir.display()
    );
    for file in &written.files {
        let _ = writeln!(text, "  {file}");
    }
    text.push_str("next:\n");
    for step in &next {
        let _ = writeln!(text, "  {step}");
    }
    print!("{text}");
    Ok(())
}

/// Writes the templates of `kind` for the plugin `id` into `dir`, which must not exist or be
/// empty. Every file is created new, so nothing already there is overwritten; on failure
/// what was written is taken away again.
fn write(dir: &Path, id: &str, kind: Kind) -> anyhow::Result<Written> {
    match std::fs::read_dir(dir) {
        Ok(mut entries) => {
            if entries.next().is_some() {
                bail!(
                    "`{}` exists and is not empty; give a new directory with --dir, or empty this one",
                    dir.display()
                );
            }
        }
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
        Err(_) if dir.is_file() => {
            bail!(
                "`{}` is a file; give a new directory with --dir",
                dir.display()
            )
        }
        Err(error) => {
            return Err(error).with_context(|| format!("cannot read `{}`", dir.display()));
        }
    }
    let existed = dir.is_dir();
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create `{}`", dir.display()))?;
    let mut files = Vec::new();
    for template in kind.templates() {
        if let Err(error) = write_file(dir, template, id) {
            undo(dir, kind, &files, existed);
            return Err(error);
        }
        files.push(template.path);
    }
    Ok(Written {
        dir: dir.to_path_buf(),
        files,
    })
}

/// Writes one template, filled in, as a new file.
fn write_file(dir: &Path, template: &Template, id: &str) -> anyhow::Result<()> {
    let path = dir.join(template.path);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("cannot create `{}`", parent.display()))?;
    }
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)
        .with_context(|| format!("cannot create `{}`", path.display()))?;
    file.write_all(render(template.text, id).as_bytes())
        .with_context(|| format!("cannot write `{}`", path.display()))
}

/// Removes the `files` that `write` made, the directories it made for the templates of
/// `kind` (when empty), and `dir` when it made that too.
fn undo(dir: &Path, kind: Kind, files: &[&str], existed: bool) {
    for file in files {
        let _ = std::fs::remove_file(dir.join(file));
    }
    for template in kind.templates() {
        if let Some(parent) = Path::new(template.path).parent()
            && !parent.as_os_str().is_empty()
        {
            let _ = std::fs::remove_dir(dir.join(parent));
        }
    }
    if !existed {
        let _ = std::fs::remove_dir(dir);
    }
}

/// A template's text with the plugin's names in it.
fn render(template: &str, id: &str) -> String {
    template
        .replace("{{id}}", id)
        .replace("{{package}}", &id.replace('.', "-"))
        .replace("{{sdk_version}}", SDK_VERSION)
}

/// The commands that take a new plugin in `dir` to a call of its tool.
fn next_steps(dir: &Path, kind: Kind) -> Vec<String> {
    let mut steps = vec![format!("cd {}", shell_word(&dir.to_string_lossy()))];
    steps.extend(kind.build_steps().iter().map(|&step| step.to_owned()));
    steps.push("aleph-tools plugins check .".to_owned());
    steps.push(r#"aleph-tools --plugins .. tools call greet '{"name": "Ada"}'"#.to_owned());
    steps
}

/// `word` as one word for a POSIX shell: as it is when that is safe, else in single quotes.
fn shell_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/' | '+' | ':'));
    if plain {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_follow_the_manifests_rule() {
        for good in ["a", "my-plugin", "text-tools.v2_x", &"a".repeat(64)] {
            assert_eq!(plugin_id(good).as_deref(), Ok(good));
        }
        for (bad, why) in [
            ("", "does not start with a lowercase letter"),
            ("My-plugin", "does not start with a lowercase letter"),
            ("1x", "does not start with a lowercase letter"),
            ("my plugin", "it has ` `"),
            ("a/b", "it has `/`"),
            ("café", "it has `é`"),
            (&"a".repeat(65), "65 characters long"),
        ] {
            let error = plugin_id(bad).unwrap_err();
            assert!(error.contains(why), "{bad}: {error}");
        }
    }

    /// The ids accepted here are the ids a manifest accepts, by the library's own check.
    #[test]
    fn the_rule_is_the_libraries() {
        let root = tempfile::tempdir().unwrap();
        for id in [
            "a",
            "my-plugin",
            "x.y_z-9",
            "Upper",
            "9lives",
            "_x",
            "has space",
            "slash/y",
            "é",
            &"b".repeat(64),
            &"b".repeat(65),
        ] {
            let dir = root.path().join("plugin");
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(
                dir.join("aleph_plugin.toml"),
                format!("[plugin]\nid = {id:?}\nversion = \"1.0.0\"\nkind = \"static\"\n"),
            )
            .unwrap();
            let manifest_accepts = aleph_tools::plugin::PluginManifest::read_dir(&dir)
                .err()
                .is_none_or(|error| error.problems.iter().all(|p| p.key != "plugin.id"));
            assert_eq!(plugin_id(id).is_ok(), manifest_accepts, "{id}");
        }
    }

    #[test]
    fn templates_are_filled_in_everywhere() {
        // `{{name}}`, a placeholder; JSDoc's `{{ name: string }}` is not one.
        let placeholder = |text: &str| {
            text.match_indices("{{").any(|(at, _)| {
                let rest = &text[at + 2..];
                let name = rest.len()
                    - rest
                        .trim_start_matches(|c: char| c.is_ascii_lowercase() || c == '_')
                        .len();
                name > 0 && rest[name..].starts_with("}}")
            })
        };
        for kind in [Kind::Nodejs, Kind::Wasm] {
            for template in kind.templates() {
                assert!(
                    placeholder(template.text) || template.path == ".gitignore",
                    "{}",
                    template.path
                );
                let text = render(template.text, "my.plugin");
                assert!(!placeholder(&text), "{}: {text}", template.path);
            }
        }
        let cargo = render(WASM[1].text, "my.plugin");
        assert!(cargo.contains("name = \"my-plugin\""), "{cargo}");
        let package = render(NODEJS[1].text, "my.plugin");
        let package: serde_json::Value = serde_json::from_str(&package).unwrap();
        assert_eq!(
            package["dependencies"]["@aleph/plugin-sdk"],
            format!("^{SDK_VERSION}")
        );
    }

    #[test]
    fn the_sdk_version_is_the_sdks() {
        // The SDK is in the repository, not in this package: read at run time, and checked
        // only in a checkout.
        let repository = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let file = repository.join("sdk/node/package.json");
        let Ok(text) = std::fs::read_to_string(&file) else {
            assert!(
                !repository.join(".git").exists(),
                "{} is missing from the repository",
                file.display()
            );
            return;
        };
        let package: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            package["version"],
            SDK_VERSION,
            "set SDK_VERSION in aleph-tools-cli/src/scaffold.rs to the version in {}",
            file.display()
        );
    }

    #[test]
    fn directories_are_quoted_for_the_shell_when_needed() {
        assert_eq!(shell_word("plugins/my-plugin"), "plugins/my-plugin");
        assert_eq!(shell_word("my dir"), "'my dir'");
        assert_eq!(shell_word("it's"), r"'it'\''s'");
    }
}
