//! Markdown skills through the server: `SKILL.md` files read from a real directory, served as
//! tools of category `Skill`, refused with the file and the fix when they are bad, and
//! reloaded as the files change while calls run.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use aleph_tools::builtin::{MetaTools, SkillError, Skills};
use aleph_tools::prelude::*;
use aleph_tools::{RegistryError, ToolErrorKind};
use aleph_tools_tests::eventually;
use serde_json::json;

const RELEASE_NOTES: &str = "---
name: release-notes
description: Draft release notes for a version.
tags: [writing]
arguments:
  - name: version
    description: The version being released.
  - name: audience
    default: developers
  - name: extra
    required: false
---

Notes for {{version}}, written for {{ audience }}.{{extra}}
Keep `${{ github.ref }}` and {{ other }} as they are.
";

fn write_skill(root: &Path, dir: &str, text: &str) {
    std::fs::create_dir_all(root.join(dir)).unwrap();
    // Written whole under another name, then renamed, so the watcher never reads half a file.
    let temp = root.join(dir).join(".SKILL.md.tmp");
    std::fs::write(&temp, text).unwrap();
    std::fs::rename(temp, root.join(dir).join("SKILL.md")).unwrap();
}

fn skill(description: &str, body: &str) -> String {
    format!("---\ndescription: {description}\n---\n{body}\n")
}

fn build(skills: Skills) -> Result<AlephToolServer, RegistryError> {
    AlephToolServer::builder().with_builtin(skills).build()
}

async fn text(server: &AlephToolServer, name: &str) -> String {
    let result = server.call(name, json!({})).await;
    assert!(result.success, "{name}: {:?}", result.error);
    result.output.as_str().unwrap().to_owned()
}

/// Waits until the skill `name` answers `expected` (a reload is read after the debounce).
async fn until_text(server: &AlephToolServer, name: &str, expected: &str) {
    let mut last = None;
    for _ in 0..400 {
        let result = server.call(name, json!({})).await;
        if result.output == expected {
            return;
        }
        last = Some(result);
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("`{name}` never answered {expected:?}; last: {last:?}");
}

#[tokio::test]
async fn a_skill_is_a_tool_that_returns_its_text_with_the_arguments_filled_in() {
    let dir = tempfile::tempdir().unwrap();
    write_skill(dir.path(), "notes", RELEASE_NOTES);
    write_skill(
        dir.path(),
        "haiku",
        &skill("Write a haiku.", "Five, seven, five."),
    );
    std::fs::create_dir(dir.path().join("assets")).unwrap();
    std::fs::write(dir.path().join("README.md"), "not a skill").unwrap();
    write_skill(dir.path(), ".hidden", &skill("Hidden.", "never served"));

    let server = AlephToolServer::builder()
        .with_builtin(Skills::new(dir.path()))
        .with_builtin(MetaTools::default())
        .build()
        .unwrap();
    let skills: Vec<String> = server
        .tools()
        .definitions()
        .iter()
        .filter(|t| t.category == ToolCategory::Skill)
        .map(|t| t.name.clone())
        .collect();
    assert_eq!(skills, ["haiku", "release-notes"]);

    let definition = server.tools().get("release-notes").unwrap();
    assert_eq!(definition.description, "Draft release notes for a version.");
    assert_eq!(definition.tags, ["writing"]);
    assert_eq!(definition.annotations.read_only, Some(true));
    assert_eq!(definition.parameters["required"], json!(["version"]));
    assert_eq!(
        definition.parameters["properties"]["version"]["description"],
        "The version being released."
    );

    let result = server
        .call("release-notes", json!({ "version": "2.4.0" }))
        .await;
    assert!(result.success, "{:?}", result.error);
    assert_eq!(
        result.output,
        "Notes for 2.4.0, written for developers.\nKeep `${{ github.ref }}` and {{ other }} as they are.\n"
    );
    let result = server
        .call(
            "release-notes",
            json!({ "version": "3.0", "audience": "operators", "extra": " Be brief." }),
        )
        .await;
    assert!(
        result
            .model_text()
            .starts_with("Notes for 3.0, written for operators. Be brief.\n"),
        "{}",
        result.model_text()
    );
    assert_eq!(text(&server, "haiku").await, "Five, seven, five.\n");

    // The meta tools list skills by their category.
    let listed = server
        .call("list_tools", json!({ "category": "skill" }))
        .await;
    assert!(listed.success, "{:?}", listed.error);
    let names: Vec<&str> = listed.output["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["haiku", "release-notes"]);
}

#[tokio::test]
async fn arguments_are_checked_like_any_tool() {
    let dir = tempfile::tempdir().unwrap();
    write_skill(dir.path(), "notes", RELEASE_NOTES);
    let server = build(Skills::new(dir.path()).hot_reload(false)).unwrap();
    for (args, expected) in [
        (json!({}), "version"),
        (json!({ "version": 2 }), "string"),
        (json!({ "version": "1", "verison": "1" }), "verison"),
        (json!("2.4.0"), "object"),
    ] {
        let result = server.call("release-notes", args.clone()).await;
        assert!(!result.success, "{args}");
        let error = result.error.as_deref().unwrap();
        assert_eq!(
            result.error_kind,
            Some(ToolErrorKind::InvalidArgs),
            "{args}: {error}"
        );
        assert!(error.contains(expected), "{args}: {error}");
    }
}

/// A bad skill: what it is, how to write it, what the error must say.
type Case<'a> = (&'a str, &'a dyn Fn(&Path), &'a str);

#[test]
fn bad_skills_are_skipped_naming_the_file_and_the_fix_and_the_others_served() {
    let cases: [Case<'_>; 7] = [
        (
            "no description",
            &|root| write_skill(root, "a", "---\nname: a\n---\nbody"),
            "no `description:`",
        ),
        (
            "no front matter",
            &|root| write_skill(root, "a", "# Just Markdown"),
            "does not start with front matter",
        ),
        (
            "bad YAML, reported at the file's line",
            &|root| write_skill(root, "a", "---\nname: a\ndescription: [unclosed\n---\n"),
            "line 3",
        ),
        (
            "not UTF-8",
            &|root| {
                std::fs::create_dir(root.join("a")).unwrap();
                std::fs::write(root.join("a/SKILL.md"), b"---\ndescription: caf\xe9\n---\n")
                    .unwrap();
            },
            "not UTF-8",
        ),
        (
            "over 1 MiB",
            &|root| {
                let body = "x".repeat(1024 * 1024);
                write_skill(root, "a", &skill("Big.", &body));
            },
            "at most 1 MiB",
        ),
        (
            "a name no tool can have",
            &|root| write_skill(root, "has space", &skill("A.", "b")),
            "cannot name a tool",
        ),
        (
            "two skills, one name",
            &|root| {
                write_skill(root, "one", "---\nname: same\ndescription: A.\n---\n");
                write_skill(root, "two", "---\nname: same\ndescription: B.\n---\n");
            },
            "two skills are named `same`",
        ),
    ];
    for (case, make, expected) in cases {
        let dir = tempfile::tempdir().unwrap();
        make(dir.path());
        write_skill(dir.path(), "fine", &skill("A good neighbour.", "fine"));
        let server = build(Skills::new(dir.path()).hot_reload(false))
            .unwrap_or_else(|e| panic!("{case}: one bad skill stops the others: {e}"));
        assert!(server.contains("fine"), "{case}");
        assert!(!server.contains("a"), "{case}");
        let scan = Skills::new(dir.path()).scan().unwrap();
        assert_eq!(scan.skipped.len(), 1, "{case}: {:?}", scan.skipped);
        let message = scan.skipped[0].to_string();
        assert!(message.contains(expected), "{case}: {message}");
        assert!(message.contains("SKILL.md"), "{case}: {message}");
        assert!(
            Skills::new(dir.path())
                .load()
                .unwrap()
                .iter()
                .any(|s| s.name() == "fine"),
            "{case}"
        );
    }

    let missing = tempfile::tempdir().unwrap().path().join("nowhere");
    let error = AlephToolServer::builder()
        .with_builtin(Skills::new(&missing))
        .build()
        .unwrap_err();
    assert!(
        matches!(&error, RegistryError::Skill(SkillError::Read { path, .. }) if *path == missing),
        "{error:?}"
    );

    // A skill whose name another tool has is a duplicate, as for any tool.
    let dir = tempfile::tempdir().unwrap();
    write_skill(dir.path(), "list_tools", &skill("Clash.", "b"));
    let error = AlephToolServer::builder()
        .with_builtin(MetaTools::default())
        .with_builtin(Skills::new(dir.path()).hot_reload(false))
        .build()
        .unwrap_err();
    assert!(
        matches!(&error, RegistryError::DuplicateTool { name } if name == "list_tools"),
        "{error:?}"
    );
}

#[tokio::test]
async fn edits_additions_removals_and_renames_are_served_as_they_happen() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write_skill(root, "greet", &skill("Greet.", "Hello, version one."));
    let server = AlephToolServer::builder()
        .with_builtin(Skills::new(root).debounce(Duration::from_millis(50)))
        .build()
        .unwrap();
    assert_eq!(text(&server, "greet").await, "Hello, version one.\n");

    write_skill(root, "greet", &skill("Greet.", "Hello, version two."));
    until_text(&server, "greet", "Hello, version two.\n").await;

    write_skill(root, "farewell", &skill("Say goodbye.", "Goodbye."));
    eventually("the new skill is served", || server.contains("farewell")).await;
    assert_eq!(text(&server, "farewell").await, "Goodbye.\n");

    // A broken edit keeps the previous version; a later good edit of another skill shows
    // the watcher has read past it.
    write_skill(root, "greet", "---\nname: greet\n---\nno description");
    write_skill(root, "farewell", &skill("Say goodbye.", "Goodbye, again."));
    until_text(&server, "farewell", "Goodbye, again.\n").await;
    assert_eq!(text(&server, "greet").await, "Hello, version two.\n");

    // Renaming a skill withdraws the old name.
    write_skill(
        root,
        "greet",
        "---\nname: welcome\ndescription: Welcome.\n---\nWelcome.",
    );
    eventually("the renamed skill is served", || {
        server.contains("welcome") && !server.contains("greet")
    })
    .await;

    // A skill taking a name another skill has waits; the first keeps the name.
    write_skill(
        root,
        "copy",
        "---\nname: welcome\ndescription: Copy.\n---\nCopy.",
    );
    write_skill(root, "zz-canary", &skill("Canary.", "Tweet."));
    eventually("the canary is served", || server.contains("zz-canary")).await;
    assert_eq!(text(&server, "welcome").await, "Welcome.");

    std::fs::remove_dir_all(root.join("farewell")).unwrap();
    eventually("the removed skill is withdrawn", || {
        !server.contains("farewell")
    })
    .await;
    std::fs::remove_file(root.join("greet/SKILL.md")).unwrap();
    // The copy was waiting for the name, and has it now.
    until_text(&server, "welcome", "Copy.").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn calls_during_reloads_see_one_whole_version() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    write_skill(&root, "count", &skill("Count.", "version 0"));
    let server = AlephToolServer::builder()
        .with_builtin(Skills::new(&root).debounce(Duration::from_millis(10)))
        .build()
        .unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            for i in 1..=60 {
                write_skill(&root, "count", &skill("Count.", &format!("version {i}")));
                std::thread::sleep(Duration::from_millis(15));
            }
            stop.store(true, Ordering::SeqCst);
        })
    };
    let mut seen = std::collections::BTreeSet::new();
    let mut calls = 0;
    while !stop.load(Ordering::SeqCst) {
        let result = server.call("count", json!({})).await;
        assert!(result.success, "{:?}", result.error);
        let text = result.output.as_str().unwrap();
        let number: u32 = text
            .strip_prefix("version ")
            .and_then(|n| n.trim_end().parse().ok())
            .unwrap_or_else(|| panic!("a torn read: {text:?}"));
        seen.insert(number);
        calls += 1;
        tokio::task::yield_now().await;
    }
    writer.join().unwrap();
    until_text(&server, "count", "version 60\n").await;
    assert!(calls > 60, "{calls} calls");
    assert!(seen.len() > 1, "only saw {seen:?}");
}

#[tokio::test]
async fn without_hot_reload_nothing_changes_and_dropping_the_server_stops_the_watch() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write_skill(root, "fixed", &skill("Fixed.", "as built"));
    let server = build(Skills::new(root).hot_reload(false)).unwrap();
    write_skill(root, "fixed", &skill("Fixed.", "edited"));
    write_skill(root, "late", &skill("Late.", "late"));
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(text(&server, "fixed").await, "as built\n");
    assert!(!server.contains("late"));

    // A watching server that is dropped lets go of its watch: the skills directory can be
    // changed and removed with no reload left to run.
    let watching = build(Skills::new(root).debounce(Duration::from_millis(10))).unwrap();
    let weak_changes = watching.watch_tools();
    drop(watching);
    write_skill(root, "after", &skill("After.", "after"));
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        weak_changes.has_changed().is_err(),
        "the server is still alive"
    );
    drop(dir);
}

#[tokio::test]
async fn what_changes_before_build_is_served_and_a_touch_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write_skill(root, "early", &skill("Early.", "read by with_builtin"));
    let builder = AlephToolServer::builder()
        .with_builtin(Skills::new(root).debounce(Duration::from_millis(50)));
    // Changed after the skills were read, before the watch starts.
    write_skill(root, "early", &skill("Early.", "changed before build"));
    write_skill(root, "added", &skill("Added.", "added before build"));
    let server = builder.build().unwrap();
    assert_eq!(text(&server, "early").await, "changed before build\n");
    assert_eq!(text(&server, "added").await, "added before build\n");

    // Rewriting a skill with the same text is no change for clients.
    let changes = server.watch_tools();
    let before = *changes.borrow();
    write_skill(root, "early", &skill("Early.", "changed before build"));
    write_skill(root, "zz-canary", &skill("Canary.", "tweet"));
    eventually("the canary is served", || server.contains("zz-canary")).await;
    assert_eq!(
        *changes.borrow() - before,
        1,
        "only the canary changed the tools"
    );
}
