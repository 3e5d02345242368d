//! Arbitrary `SKILL.md` text, read the way a skills directory is read: every input is a skill
//! or an error naming the file, never a panic; a skill renders with every argument given and
//! with none, and one without arguments renders as its body.
#![no_main]

use std::path::Path;
use std::sync::OnceLock;

use aleph_tools::builtin::Skill;
use libfuzzer_sys::fuzz_target;
use serde_json::{Map, Value};

fn skill_dir() -> &'static Path {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| tempfile::tempdir().expect("a temporary directory"))
        .path()
}

fuzz_target!(|data: &[u8]| {
    let dir = skill_dir();
    std::fs::write(dir.join("SKILL.md"), data).expect("write the skill");
    match Skill::read(dir) {
        Ok(skill) => {
            let all: Map<String, Value> = skill
                .arguments()
                .iter()
                .map(|argument| (argument.name.clone(), Value::from("\u{1f980}")))
                .collect();
            let _ = skill.render(&all);
            let bare = skill.render(&Map::new());
            if skill.arguments().is_empty() {
                assert_eq!(bare, skill.body(), "no arguments, nothing replaced");
            }
        }
        Err(err) => assert!(err.to_string().contains("SKILL.md"), "{err}"),
    }
});
