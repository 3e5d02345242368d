//! Markdown skills: a directory of skills, each a directory with a `SKILL.md`, served as tools
//! of category `Skill` and reloaded as their files change.

mod skill;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use skill::SKILL_FILE;
pub use skill::{Skill, SkillArgument};

use super::Builtin;
pub use crate::error::SkillError;
use crate::server::{AlephToolServer, ToolServerBuilder};
use crate::util::sync::lock;
use crate::util::watch::{is_hidden, watch_entries};

/// The Markdown skills in a directory, served by
/// [`with_builtin`](ToolServerBuilder::with_builtin).
///
/// Each directory directly under `dir` that holds a `SKILL.md` is a [`Skill`], served as a
/// tool of its name: calling it returns the skill's text with the arguments filled in. Other
/// files and directories (a skill's scripts and references, hidden directories) are left
/// alone.
///
/// A skill that cannot be used is skipped, with a `tracing` warning saying which file and
/// what to fix, and every other skill is served: one that cannot be read or is malformed,
/// one whose `SKILL.md` or directory is a link leading out of the skills directory (a link
/// inside it is fine), one whose name a skill before it (by directory name) has.
/// [`scan`](Self::scan) lists them. Only a skills directory that cannot be read fails
/// [`build`](ToolServerBuilder::build).
///
/// With hot reload (on by default) the directory is watched for the server's life: once its
/// files have been quiet for the debounce (300 ms), an edited skill is served anew, a new one
/// added, a removed one withdrawn. An edit that breaks a skill keeps its previous version
/// serving and logs why (a `tracing` warning); a skill that takes another skill's name waits
/// until that name is free.
///
/// ```
/// use aleph_tools::builtin::Skills;
/// use aleph_tools::prelude::*;
///
/// let dir = tempfile::tempdir()?;
/// std::fs::create_dir(dir.path().join("haiku"))?;
/// std::fs::write(
///     dir.path().join("haiku/SKILL.md"),
///     "---\ndescription: How to write a haiku about a topic.\n\
///      arguments:\n  - name: topic\n---\nWrite three lines about {{topic}}: 5, 7, 5 syllables.\n",
/// )?;
///
/// let server = AlephToolServer::builder()
///     .with_builtin(Skills::new(dir.path()).hot_reload(false))
///     .build()?;
/// assert_eq!(server.tools().get("haiku").unwrap().category, ToolCategory::Skill);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct Skills {
    dir: PathBuf,
    hot_reload: bool,
    debounce: Duration,
}

impl Skills {
    /// The skills in `dir`, with hot reload.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self {
            dir: dir.into(),
            hot_reload: true,
            debounce: Duration::from_millis(300),
        }
    }

    /// Whether the directory is watched and skills reloaded as they change (on by default).
    /// Without it the directory is read once, when the skills are given to the builder.
    #[must_use]
    pub fn hot_reload(mut self, enabled: bool) -> Self {
        self.hot_reload = enabled;
        self
    }

    /// How long the files must be quiet before a change is read (300 ms by default).
    #[must_use]
    pub fn debounce(mut self, debounce: Duration) -> Self {
        self.debounce = debounce;
        self
    }

    /// The directory the skills are read from.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Reads every skill in the directory that can be used, sorted by directory name; each
    /// one skipped is logged as a `tracing` warning (see [`scan`](Self::scan)).
    ///
    /// # Errors
    ///
    /// [`SkillError::Read`] when the directory itself cannot be read.
    pub fn load(&self) -> Result<Vec<Skill>, SkillError> {
        let scan = self.scan()?;
        for problem in &scan.skipped {
            tracing::warn!("{problem}; the skill is skipped");
        }
        Ok(scan.skills)
    }

    /// Reads every skill in the directory: those that can be served, sorted by directory
    /// name, and those skipped, each with why ([`SkillError::Read`], [`SkillError::Invalid`],
    /// [`SkillError::Outside`], [`SkillError::Duplicate`]). Logs nothing.
    ///
    /// # Errors
    ///
    /// [`SkillError::Read`] when the directory itself cannot be read.
    pub fn scan(&self) -> Result<SkillScan, SkillError> {
        let read = self.read_all()?;
        Ok(SkillScan {
            skills: read.skills.into_values().collect(),
            skipped: read.skipped.into_iter().map(|(_, error)| error).collect(),
        })
    }

    /// The directory made absolute, its skills by their directory, and the skill directories
    /// skipped with why.
    fn read_all(&self) -> Result<ReadAll, SkillError> {
        let root = std::fs::canonicalize(&self.dir).map_err(|e| SkillError::Read {
            path: self.dir.clone(),
            message: e.to_string(),
        })?;
        let found = entries(&root).map_err(|e| SkillError::Read {
            path: root.clone(),
            message: e.to_string(),
        })?;
        let mut skills: BTreeMap<PathBuf, Skill> = BTreeMap::new();
        let mut skipped = Vec::new();
        let mut names: BTreeMap<String, PathBuf> = BTreeMap::new();
        for dir in found {
            if !holds_skill(&dir) {
                continue;
            }
            match Skill::read_within(&dir, Some(&root)) {
                Ok(skill) => {
                    if let Some(first) = names.get(skill.name()) {
                        let error = SkillError::Duplicate {
                            name: skill.name().to_owned(),
                            first: first.clone(),
                            second: skill.path().to_path_buf(),
                        };
                        skipped.push((dir, error));
                        continue;
                    }
                    names.insert(skill.name().to_owned(), skill.path().to_path_buf());
                    skills.insert(dir, skill);
                }
                Err(error) => skipped.push((dir, error)),
            }
        }
        Ok(ReadAll {
            root,
            skills,
            skipped,
        })
    }
}

/// What [`Skills::scan`] found.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct SkillScan {
    /// The skills that can be served, sorted by directory name.
    pub skills: Vec<Skill>,
    /// The skills skipped, each with why and which file.
    pub skipped: Vec<SkillError>,
}

/// A skills directory read.
struct ReadAll {
    root: PathBuf,
    skills: BTreeMap<PathBuf, Skill>,
    skipped: Vec<(PathBuf, SkillError)>,
}

impl Builtin for Skills {
    fn add_to(self, builder: ToolServerBuilder) -> ToolServerBuilder {
        let ReadAll {
            root,
            skills,
            skipped,
        } = match self.read_all() {
            Ok(read) => read,
            Err(error) => return builder.with_problem(error.into()),
        };
        let mut waiting = BTreeSet::new();
        for (dir, problem) in skipped {
            if matches!(problem, SkillError::Duplicate { .. }) {
                tracing::warn!(
                    "{problem}; `{}` waits until the name is free",
                    dir.display()
                );
                waiting.insert(dir);
            } else {
                tracing::warn!("{problem}; the skill is skipped");
            }
        }
        let builder = skills.values().fold(builder, |builder, skill| {
            builder.with_dyn_tool(skill.clone().into_tool())
        });
        if !self.hot_reload {
            return builder;
        }
        let state = Arc::new(Mutex::new(Served { skills, waiting }));
        let debounce = self.debounce;
        builder.after_build(move |server| {
            let weak = server.downgrade();
            let on_change = Arc::clone(&state);
            let watcher = watch_entries(std::slice::from_ref(&root), debounce, move |dir, _| {
                if let Some(server) = weak.upgrade() {
                    sync(&server, &on_change, dir);
                }
            })
            .map_err(|e| SkillError::Watch {
                path: e.path,
                message: e.message,
            })?;
            server.attach(watcher);
            // What changed between the first read and the start of the watch.
            rescan(server, &state, &root);
            Ok(())
        })
    }
}

/// The skills a watched directory has served.
struct Served {
    /// The skill each skill directory serves.
    skills: BTreeMap<PathBuf, Skill>,
    /// Skill directories refused because another skill had their name: tried again when a
    /// name is given up.
    waiting: BTreeSet<PathBuf>,
}

/// Brings every skill directory, and every directory served, in line with the disk.
fn rescan(server: &AlephToolServer, skills: &Mutex<Served>, root: &Path) {
    let mut dirs: BTreeSet<PathBuf> = lock(skills).skills.keys().cloned().collect();
    match entries(root) {
        Ok(found) => dirs.extend(found),
        Err(error) => tracing::warn!("cannot read `{}`: {error}", root.display()),
    }
    for dir in dirs {
        sync(server, skills, &dir);
    }
}

/// Brings the skill in `dir` in line with the disk (served anew, added, or withdrawn), then
/// retries the skills waiting for a name that was given up.
fn sync(server: &AlephToolServer, skills: &Mutex<Served>, dir: &Path) {
    let mut state = lock(skills);
    if !sync_one(server, &mut state, dir) {
        return;
    }
    for waiting in std::mem::take(&mut state.waiting) {
        sync_one(server, &mut state, &waiting);
    }
}

/// Brings the skill in `dir` in line with the disk; `true` when a name was given up.
fn sync_one(server: &AlephToolServer, state: &mut Served, dir: &Path) -> bool {
    state.waiting.remove(dir);
    let old = state.skills.get(dir).map(|skill| skill.name().to_owned());
    if !holds_skill(dir) {
        let Some(name) = old else {
            return false;
        };
        server.remove(&name);
        state.skills.remove(dir);
        tracing::info!(skill = %name, "skill withdrawn: `{}` is gone", dir.display());
        return true;
    }
    let Some(root) = dir.parent() else {
        return false;
    };
    let skill = match Skill::read_within(dir, Some(root)) {
        Ok(skill) => skill,
        Err(error) => {
            tracing::warn!("{error}; the skill's previous version, if any, keeps serving");
            return false;
        }
    };
    if state.skills.get(dir) == Some(&skill) {
        // Touched, not changed: nothing to tell clients.
        return false;
    }
    if let Some(other) = state
        .skills
        .iter()
        .find(|(other, known)| other.as_path() != dir && known.name() == skill.name())
        .map(|(_, other)| other.path().to_path_buf())
    {
        let error = SkillError::Duplicate {
            name: skill.name().to_owned(),
            first: other,
            second: skill.path().to_path_buf(),
        };
        tracing::warn!("{error}; `{}` waits until the name is free", dir.display());
        state.waiting.insert(dir.to_path_buf());
        return false;
    }
    let name = skill.name().to_owned();
    match server.swap_tools(old.as_slice(), vec![Arc::new(skill.clone().into_tool())]) {
        Ok(()) => {
            tracing::info!(skill = %name, "skill served from `{}`", dir.display());
            state.skills.insert(dir.to_path_buf(), skill);
            old.is_some_and(|old| old != name)
        }
        Err(error) => {
            tracing::warn!("the skill in `{}` cannot be served: {error}", dir.display());
            false
        }
    }
}

/// Whether `dir` is a directory holding a `SKILL.md` (of any kind, even a link: whether it can
/// be used is [`Skill::read_within`]'s to say).
fn holds_skill(dir: &Path) -> bool {
    std::fs::metadata(dir).is_ok_and(|meta| meta.is_dir())
        && std::fs::symlink_metadata(dir.join(SKILL_FILE)).is_ok()
}

/// The entries of `root` that are not hidden: the places a skill may be.
fn entries(root: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(root)? {
        let entry = entry?;
        if !is_hidden(&entry.file_name()) {
            found.push(entry.path());
        }
    }
    Ok(found)
}
