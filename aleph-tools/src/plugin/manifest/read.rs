//! Reading a manifest from a plugin's directory in any of the three formats, and placing a
//! key's problem at its line and column in TOML.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::permissions::inside;
use super::{MANIFEST_FILES, ManifestError, ManifestProblem, PluginManifest, SchemaSource};

/// A manifest read from disk, with where it came from.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct LoadedManifest {
    /// The manifest.
    pub manifest: PluginManifest,
    /// The plugin's directory.
    pub dir: PathBuf,
    /// The file it was read from.
    pub file: PathBuf,
}

impl LoadedManifest {
    /// A path of the manifest's, relative to the plugin's directory, made absolute.
    pub fn resolve(&self, relative: &Path) -> PathBuf {
        self.dir.join(relative)
    }

    /// The entry file, when the plugin has one.
    pub fn entry(&self) -> Option<PathBuf> {
        self.manifest
            .plugin
            .entry
            .as_deref()
            .map(|e| self.resolve(e))
    }

    /// Reads the text file `relative` (to the plugin's directory): a regular file only (a
    /// named pipe would never end), of at most 4 MiB.
    ///
    /// # Errors
    ///
    /// A message naming the file when it cannot be read, is not a regular file, or is larger.
    pub(in crate::plugin) fn read_text(&self, relative: &Path) -> Result<String, String> {
        let full = self.resolve(relative);
        match read_small(&full) {
            Ok(Some(text)) => Ok(text),
            Ok(None) => Err(format!(
                "cannot read `{}`: it does not exist",
                full.display()
            )),
            Err(why) => Err(format!("cannot read `{}`: {why}", full.display())),
        }
    }

    /// Reads a schema written inline or in a file.
    ///
    /// # Errors
    ///
    /// A message naming the file when it cannot be read or is not JSON.
    pub fn read_schema(&self, source: &SchemaSource) -> Result<Value, String> {
        match source {
            SchemaSource::Inline(schema) => Ok(schema.clone()),
            SchemaSource::File(path) => {
                let relative = inside(path).ok_or_else(|| {
                    format!(
                        "`{}` is outside the plugin's directory; name a file inside it",
                        path.display()
                    )
                })?;
                let full = self.dir.join(relative);
                let text = self.read_text(path)?;
                serde_json::from_str(&text)
                    .map_err(|e| format!("`{}` is not JSON: {e}", full.display()))
            }
        }
    }
}

impl PluginManifest {
    /// Reads the manifest of the plugin in `dir`: `aleph_plugin.toml`, else
    /// `aleph_plugin.json`, else the `alephPlugin` section of `package.json` (where `plugin.id`
    /// and `plugin.version` default to the package's `name` and `version`), then checks it.
    ///
    /// # Errors
    ///
    /// [`ManifestError`] naming the file and, for each problem, the key and what to fix
    /// (with line and column for TOML).
    pub fn read_dir(dir: &Path) -> Result<LoadedManifest, ManifestError> {
        let dir = dir.to_path_buf();
        for name in MANIFEST_FILES {
            let file = dir.join(name);
            let text = match read_small(&file) {
                Ok(Some(text)) => text,
                Ok(None) => continue,
                Err(why) => {
                    return Err(ManifestError::single(
                        &file,
                        "",
                        format!("cannot read: {why}"),
                    ));
                }
            };
            let manifest = match name {
                "aleph_plugin.toml" => Self::from_toml(&text).map_err(|mut e| {
                    e.file.clone_from(&file);
                    e
                })?,
                "aleph_plugin.json" => Self::from_json(&text)
                    .map_err(|message| ManifestError::single(&file, "", message))?,
                _ => match Self::from_package_json(&text)
                    .map_err(|message| ManifestError::single(&file, "", message))?
                {
                    Some(manifest) => manifest,
                    None => continue,
                },
            };
            let loaded = LoadedManifest {
                manifest,
                dir: dir.clone(),
                file,
            };
            loaded.check(&text)?;
            return Ok(loaded);
        }
        Err(ManifestError::single(
            &dir,
            "",
            "no manifest: add `aleph_plugin.toml` (or `aleph_plugin.json`, or an `alephPlugin` section in `package.json`)",
        ))
    }

    /// Parses TOML manifest text. Only the shape is checked here; [`read_dir`](Self::read_dir)
    /// also checks the rules and the files the manifest names.
    ///
    /// # Errors
    ///
    /// [`ManifestError`] with the key and the line and column.
    pub fn from_toml(text: &str) -> Result<Self, ManifestError> {
        toml::from_str(text).map_err(|e| {
            let position = e.span().map(|span| line_column(text, span.start));
            ManifestError {
                file: PathBuf::from("aleph_plugin.toml"),
                problems: vec![ManifestProblem {
                    key: String::new(),
                    position,
                    message: e.message().trim_end().to_owned(),
                }],
            }
        })
    }

    /// Parses JSON manifest text; see [`from_toml`](Self::from_toml).
    ///
    /// # Errors
    ///
    /// What is wrong, with its line and column.
    pub fn from_json(text: &str) -> Result<Self, String> {
        serde_json::from_str(text).map_err(|e| e.to_string())
    }

    /// Reads `package.json` text: `Ok(None)` when it has no `alephPlugin` section.
    ///
    /// # Errors
    ///
    /// What is wrong with the section.
    pub fn from_package_json(text: &str) -> Result<Option<Self>, String> {
        let mut package: Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
        let Some(mut section) = package.get_mut("alephPlugin").map(Value::take) else {
            return Ok(None);
        };
        if let Some(info) = section.get_mut("plugin").and_then(Value::as_object_mut) {
            for (key, from) in [("id", "name"), ("version", "version")] {
                if !info.contains_key(key)
                    && let Some(value) = package.get(from)
                {
                    info.insert(key.to_owned(), value.clone());
                }
            }
        }
        serde_json::from_value(section)
            .map(Some)
            .map_err(|e| format!("in `alephPlugin`: {e}"))
    }
}

/// The most a manifest or schema file may hold.
const MAX_FILE: u64 = 4 * 1024 * 1024;

/// The text of `file`, `None` when it does not exist, else why it cannot be read. Only a
/// regular file is read (a named pipe would never end, a device never stop), and at most
/// [`MAX_FILE`] bytes.
pub(in crate::plugin) fn read_small(file: &Path) -> Result<Option<String>, String> {
    use std::io::Read as _;
    let opened = match crate::util::regular_file::open_regular(file) {
        Ok(opened) => opened,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e.to_string()),
    };
    let size = opened.metadata().map_err(|e| e.to_string())?.len();
    if size > MAX_FILE {
        return Err(format!(
            "it is {size} bytes, over the {} MiB a plugin's text file may be",
            MAX_FILE >> 20
        ));
    }
    let mut text = String::new();
    opened
        .take(MAX_FILE)
        .read_to_string(&mut text)
        .map_err(|e| e.to_string())?;
    Ok(Some(text))
}

pub(super) fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

/// Where `key` (`tools[1].name`) sits in TOML `text`.
pub(super) fn toml_position(text: &str, key: &str) -> Option<(usize, usize)> {
    use toml::de::{DeTable, DeValue};
    let root = DeTable::parse(text).ok()?;
    let mut span = root.span();
    let mut table = Some(root.get_ref());
    for part in key.split('.') {
        let (name, index) = match part.split_once('[') {
            Some((name, rest)) => (name, rest.trim_end_matches(']').parse::<usize>().ok()),
            None => (part, None),
        };
        // A key that is missing is placed at the table that should hold it.
        let Some((_, found)) =
            table.and_then(|table| table.iter().find(|(k, _)| k.get_ref().as_ref() == name))
        else {
            break;
        };
        let mut value = found;
        if let Some(index) = index {
            let DeValue::Array(items) = found.get_ref() else {
                break;
            };
            let Some(item) = items.get(index) else { break };
            value = item;
        }
        span = value.span();
        table = match value.get_ref() {
            DeValue::Table(inner) => Some(inner),
            _ => None,
        };
    }
    Some(line_column(text, span.start))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_placed_in_toml() {
        let text = "[plugin]\nid = \"x\"\n\n[[tools]]\nname = \"a\"\n\n[[tools]]\nname = \"b b\"\n";
        assert_eq!(toml_position(text, "plugin.id"), Some((2, 6)));
        assert_eq!(toml_position(text, "tools[1].name"), Some((8, 8)));
        // Missing keys are placed at the nearest table that exists.
        assert_eq!(toml_position(text, "plugin.entry"), Some((1, 1)));
        assert!(toml_position(text, "tools[7].name").is_some());
    }
}
