//! An archive's entries judged before anything is written: names, kinds, links followed
//! among the entries as the system would follow them, and the caps.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

use super::super::manifest::MANIFEST_FILES;
use super::super::tree::{MAX_DEPTH, MAX_ENTRIES};
use super::{MAX_UNPACKED, too_large, too_many};

/// How many links may be followed in resolving one link (the system's own limit).
const MAX_HOPS: usize = 40;

/// What one entry is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Kind {
    Dir,
    File {
        size: u64,
        executable: bool,
    },
    Symlink(PathBuf),
    /// A hard link to an earlier file of the archive, by its name there; made as a copy.
    HardLink(PathBuf),
}

/// The entries of an archive, judged, in archive order.
#[derive(Default)]
pub(super) struct Plan {
    pub(super) entries: Vec<(PathBuf, Kind)>,
    /// Every name, to refuse duplicates and entries under a file or a link.
    pub(super) kinds: BTreeMap<PathBuf, Kind>,
    total: u64,
}

impl Plan {
    /// Admits the entry named `raw` (as written in the archive): `Ok(false)` when there is
    /// nothing to make (the top directory, a directory named again).
    pub(super) fn admit(&mut self, raw: &Path, kind: Kind) -> Result<bool, String> {
        let named = || format!("its entry `{}`", raw.display());
        let path = relative(raw).map_err(|why| format!("{} {why}", named()))?;
        if path.as_os_str().is_empty() {
            return if kind == Kind::Dir {
                Ok(false)
            } else {
                Err(format!("{} names no file", named()))
            };
        }
        if self.entries.len() >= MAX_ENTRIES {
            return Err(too_many());
        }
        if path.components().count() > MAX_DEPTH {
            return Err(format!(
                "{} nests more than {MAX_DEPTH} directories deep, deeper than a plugin may",
                named()
            ));
        }
        for ancestor in path.ancestors().skip(1) {
            match self.kinds.get(ancestor) {
                Some(Kind::Symlink(_)) => {
                    return Err(format!(
                        "{} would be written through the link `{}`",
                        named(),
                        ancestor.display()
                    ));
                }
                Some(Kind::File { .. } | Kind::HardLink(_)) => {
                    return Err(format!(
                        "{} lies under `{}`, which is a file",
                        named(),
                        ancestor.display()
                    ));
                }
                Some(Kind::Dir) | None => {}
            }
        }
        match (self.kinds.get(&path), &kind) {
            (Some(Kind::Dir), Kind::Dir) => return Ok(false),
            (Some(_), _) => return Err(format!("{} appears twice", named())),
            (None, _) => {}
        }
        let (kind, size) = match kind {
            Kind::File { size, .. } => (kind, size),
            Kind::HardLink(target) => {
                let found = relative(&target)
                    .ok()
                    .and_then(|name| match self.kinds.get(&name) {
                        Some(Kind::File { size, .. }) => Some((name, *size)),
                        _ => None,
                    });
                let Some((name, size)) = found else {
                    return Err(format!(
                        "{} is a hard link to `{}`, which is not a file before it in the archive; a hard link may only name one of the archive's own files",
                        named(),
                        target.display()
                    ));
                };
                (Kind::HardLink(name), size)
            }
            Kind::Dir | Kind::Symlink(_) => (kind, 0),
        };
        self.total = self.total.saturating_add(size);
        if self.total > MAX_UNPACKED {
            return Err(too_large());
        }
        self.kinds.insert(path.clone(), kind.clone());
        self.entries.push((path, kind));
        Ok(true)
    }

    /// Checks, once every entry is known, that each link leads inside the plugin's directory
    /// (the archive's top, or its single top-level directory), following the archive's
    /// links as the system would.
    pub(super) fn check_links(&self) -> Result<(), String> {
        let root = self.plugin_root();
        for (path, kind) in &self.entries {
            let Kind::Symlink(target) = kind else {
                continue;
            };
            let from = path.parent().unwrap_or(Path::new(""));
            let inside = self
                .resolve(from, target)
                .is_some_and(|resolved| resolved.starts_with(&root));
            if !inside {
                return Err(format!(
                    "its entry `{}` is a link to `{}`, which leads outside the plugin's directory; put what it points to in the archive instead",
                    path.display(),
                    target.display()
                ));
            }
        }
        Ok(())
    }

    /// Where the plugin's directory is among the entries: the top, unless every entry is in
    /// one top-level directory and no manifest is at the top.
    fn plugin_root(&self) -> PathBuf {
        let manifest_on_top = MANIFEST_FILES
            .iter()
            .any(|name| self.kinds.contains_key(Path::new(name)));
        let mut tops = self
            .entries
            .iter()
            .filter_map(|(path, _)| path.components().next());
        match tops.next() {
            Some(first) if !manifest_on_top && tops.all(|other| other == first) => {
                PathBuf::from(first.as_os_str())
            }
            _ => PathBuf::new(),
        }
    }

    /// `target` read from the directory `from` (relative to the archive's top), the
    /// archive's links followed; `None` when it is absolute or climbs above the top.
    fn resolve(&self, from: &Path, target: &Path) -> Option<PathBuf> {
        let mut at: Vec<OsString> = from.iter().map(ToOwned::to_owned).collect();
        let mut queue = parts(target)?;
        queue.reverse();
        let mut hops = 0;
        while let Some(part) = queue.pop() {
            match part {
                None => {
                    at.pop()?;
                }
                Some(name) => {
                    at.push(name);
                    let here: PathBuf = at.iter().collect();
                    if let Some(Kind::Symlink(next)) = self.kinds.get(&here) {
                        hops += 1;
                        if hops > MAX_HOPS {
                            // A loop: the system refuses to follow it.
                            return Some(here);
                        }
                        at.pop();
                        let mut next = parts(next)?;
                        next.reverse();
                        queue.extend(next);
                    }
                }
            }
        }
        Some(at.iter().collect())
    }
}

/// A relative path's parts: `Some(name)`, or `None` for `..`; `None` overall when absolute.
fn parts(path: &Path) -> Option<Vec<Option<OsString>>> {
    let mut out = Vec::new();
    for part in path.components() {
        match part {
            Component::Prefix(_) | Component::RootDir => return None,
            Component::CurDir => {}
            Component::ParentDir => out.push(None),
            Component::Normal(name) => out.push(Some(name.to_owned())),
        }
    }
    Some(out)
}

/// An entry's name as a relative path without `.`, or why it cannot be one.
fn relative(raw: &Path) -> Result<PathBuf, &'static str> {
    let mut clean = PathBuf::new();
    for part in raw.components() {
        match part {
            Component::Prefix(_) | Component::RootDir => {
                return Err("has an absolute path; an archive's names must be relative");
            }
            Component::ParentDir => {
                return Err("climbs with `..`; an archive's names must stay inside it");
            }
            Component::CurDir => {}
            Component::Normal(name) => clean.push(name),
        }
    }
    Ok(clean)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(entries: &[(&str, Kind)]) -> Result<Plan, String> {
        let mut plan = Plan::default();
        for (name, kind) in entries {
            plan.admit(Path::new(name), kind.clone())?;
        }
        plan.check_links()?;
        Ok(plan)
    }

    fn file() -> Kind {
        Kind::File {
            size: 1,
            executable: false,
        }
    }

    fn link(to: &str) -> Kind {
        Kind::Symlink(PathBuf::from(to))
    }

    #[test]
    fn names_must_stay_inside() {
        for (name, why) in [
            ("/etc/x", "absolute path"),
            ("p/../../x", "`..`"),
            ("../x", "`..`"),
        ] {
            let error = plan(&[(name, file())]).err().unwrap();
            assert!(error.contains(why), "{name}: {error}");
        }
        assert!(plan(&[("./p/x", file())]).is_ok());
    }

    #[test]
    fn links_are_judged_where_they_lead() {
        for to in ["/", "../../..", "/etc/passwd", "..", "a/../.."] {
            let error = plan(&[("p/aleph_plugin.toml", file()), ("p/l", link(to))])
                .err()
                .unwrap();
            assert!(error.contains("leads outside"), "{to}: {error}");
        }
        // Inside: by name, and through the archive's own links.
        assert!(
            plan(&[
                ("p/data/f", file()),
                ("p/alias", link("data/f")),
                ("p/data/up", link("..")),
                ("p/later", link("data/not-yet")),
            ])
            .is_ok()
        );
        // `up` leads to the plugin's top; `up/..` beside the plugin.
        let error = plan(&[
            ("p/data/up", link("..")),
            ("p/data/x", link("up/../../secret")),
        ])
        .err()
        .unwrap();
        assert!(error.contains("`p/data/x`"), "{error}");
        // In a wrapped archive, the plugin's directory is the top-level one.
        let error = plan(&[("p/data/x", link("../.."))]).err().unwrap();
        assert!(error.contains("leads outside"), "{error}");
        // Loops lead nowhere and are harmless.
        assert!(plan(&[("p/a", link("b")), ("p/b", link("a"))]).is_ok());
    }

    #[test]
    fn entries_through_links_duplicates_and_hard_links() {
        let error = plan(&[("p/l", link("d")), ("p/l/x", file())])
            .err()
            .unwrap();
        assert!(error.contains("through the link `p/l`"), "{error}");
        let error = plan(&[("p/x", file()), ("p/x", file())]).err().unwrap();
        assert!(error.contains("appears twice"), "{error}");
        assert!(plan(&[("p/d", Kind::Dir), ("p/d", Kind::Dir)]).is_ok());
        for to in ["/etc/passwd", "p/missing", "../x"] {
            let error = plan(&[("p/x", file()), ("p/h", Kind::HardLink(to.into()))])
                .err()
                .unwrap();
            assert!(error.contains("hard link"), "{to}: {error}");
        }
        assert!(plan(&[("p/x", file()), ("p/h", Kind::HardLink("./p/x".into()))]).is_ok());
    }
}
