//! The built-in file tools through the server: real files in a temporary directory, the
//! path-traversal corpus through every tool, and a directory swapped for a symbolic link
//! while calls run.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use aleph_tools::builtin::FileOps;
use aleph_tools::prelude::*;
use aleph_tools::{ConfirmationRequest, ToolErrorKind};
use aleph_tools_tests::Tree;
use serde_json::{Value, json};

fn files_server(space: &Tree, ops: FileOps) -> AlephToolServer {
    AlephToolServer::builder()
        .with_builtin(ops)
        .with_working_dir(&space.root)
        .with_allowed_paths([&space.root])
        .with_confirmation_handler(|_: ConfirmationRequest| async { Confirmation::Approve })
        .build()
        .unwrap()
}

async fn ok(server: &AlephToolServer, tool: &str, args: Value) -> ToolResult {
    let result = server.call(tool, args.clone()).await;
    assert!(result.success, "{tool} {args}: {:?}", result.error);
    result
}

async fn fails(server: &AlephToolServer, tool: &str, args: Value) -> String {
    let result = server.call(tool, args.clone()).await;
    assert!(
        !result.success,
        "{tool} {args} succeeded: {}",
        result.output
    );
    result.error.unwrap()
}

#[tokio::test]
async fn reading_lists_and_ranges() {
    let s = Tree::new();
    let server = files_server(&s, FileOps::new());
    let read = ok(&server, "file_read", json!({ "path": "docs/readme.md" })).await;
    assert_eq!(read.output["content"], "line one\nline two\nline three\n");
    assert_eq!(read.output["total_lines"], 3);
    assert_eq!(read.output["path"], "docs/readme.md");
    let range = ok(
        &server,
        "file_read",
        json!({ "path": "docs/readme.md", "start_line": 2, "line_count": 1 }),
    )
    .await;
    assert_eq!(range.output["content"], "line two\n");
    assert_eq!(range.output["next_start_line"], 3);
    assert!(
        range.model_text().contains("start_line = 3"),
        "{}",
        range.model_text()
    );
    let list = ok(&server, "file_list", json!({ "path": "docs" })).await;
    let names: Vec<&str> = list.output["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["path"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "docs/deep",
            "docs/readme.md",
            "docs/relative_out",
            "docs/secret_link",
            "docs/日本語 ファイル.txt"
        ]
    );
    let deep = ok(&server, "file_list", json!({ "depth": 3 })).await;
    assert!(deep.output["entries"].as_array().unwrap().len() >= 6);
}

#[tokio::test]
async fn reads_are_capped_and_resume_where_they_stopped() {
    let s = Tree::new();
    let lines: String = (1..=1000).fold(String::new(), |mut all, i| {
        use std::fmt::Write as _;
        let _ = writeln!(all, "line {i:04}");
        all
    });
    std::fs::write(s.root.join("long.txt"), &lines).unwrap();
    // One line of 100 KB of multi-byte characters.
    std::fs::write(s.root.join("wide.txt"), "é".repeat(50_000)).unwrap();
    let server = files_server(&s, FileOps::new().max_read_bytes(1000));
    let first = ok(&server, "file_read", json!({ "path": "long.txt" })).await;
    assert_eq!(first.output["end_line"], 100);
    assert_eq!(first.output["next_start_line"], 101);
    let mut all = first.output["content"].as_str().unwrap().to_owned();
    let mut next = first.output["next_start_line"].as_u64();
    while let Some(start) = next {
        let part = ok(
            &server,
            "file_read",
            json!({ "path": "long.txt", "start_line": start }),
        )
        .await;
        all.push_str(part.output["content"].as_str().unwrap());
        next = part.output["next_start_line"].as_u64();
    }
    assert_eq!(all, lines);
    let wide = ok(&server, "file_read", json!({ "path": "wide.txt" })).await;
    let content = wide.output["content"].as_str().unwrap();
    assert!(content.len() <= 1000 && content.chars().all(|c| c == 'é'));
    assert!(
        wide.model_text()
            .contains("longer than the 1000-byte limit"),
        "{}",
        wide.model_text()
    );
}

#[tokio::test]
async fn binary_files_and_directories_are_refused_with_a_reason() {
    let s = Tree::new();
    std::fs::write(s.root.join("image.bin"), [0x89, b'P', b'N', b'G', 0, 0, 1]).unwrap();
    std::fs::write(s.root.join("latin1.txt"), [b'c', b'a', b'f', 0xE9, b'\n']).unwrap();
    let server = files_server(&s, FileOps::new());
    let binary = fails(&server, "file_read", json!({ "path": "image.bin" })).await;
    assert!(
        binary.contains("binary file (7 bytes, it contains NUL bytes)"),
        "{binary}"
    );
    let latin = fails(&server, "file_read", json!({ "path": "latin1.txt" })).await;
    assert!(latin.contains("not UTF-8"), "{latin}");
    let dir = fails(&server, "file_read", json!({ "path": "docs" })).await;
    assert!(
        dir.contains("is a directory; list it with file_list"),
        "{dir}"
    );
    let missing = fails(&server, "file_read", json!({ "path": "nope.txt" })).await;
    assert!(missing.contains("`nope.txt` does not exist"), "{missing}");
    let wrong_type = fails(&server, "file_read", json!({ "path": 42 })).await;
    assert!(wrong_type.contains("/path"), "{wrong_type}");
}

#[tokio::test]
async fn writes_are_atomic_and_edits_need_a_unique_match() {
    let s = Tree::new();
    let server = files_server(&s, FileOps::new());
    ok(
        &server,
        "file_write",
        json!({ "path": "new/dir/notes.md", "content": "alpha\nbeta\nalpha\n" }),
    )
    .await;
    assert_eq!(
        std::fs::read_to_string(s.root.join("new/dir/notes.md")).unwrap(),
        "alpha\nbeta\nalpha\n"
    );
    let twice = fails(
        &server,
        "file_edit",
        json!({ "path": "new/dir/notes.md", "old_text": "alpha", "new_text": "gamma" }),
    )
    .await;
    assert!(twice.contains("appears 2 times"), "{twice}");
    let absent = fails(
        &server,
        "file_edit",
        json!({ "path": "new/dir/notes.md", "old_text": "delta", "new_text": "x" }),
    )
    .await;
    assert!(absent.contains("does not appear"), "{absent}");
    let unique = ok(
        &server,
        "file_edit",
        json!({ "path": "new/dir/notes.md", "old_text": "beta\nalpha", "new_text": "beta\nomega" }),
    )
    .await;
    assert_eq!(unique.output["done"], "replaced 1 occurrence");
    ok(
        &server,
        "file_edit",
        json!({ "path": "new/dir/notes.md", "old_text": "a", "new_text": "A", "replace_all": true }),
    )
    .await;
    assert_eq!(
        std::fs::read_to_string(s.root.join("new/dir/notes.md")).unwrap(),
        "AlphA\nbetA\nomegA\n"
    );
    // No temporary file is left beside it.
    let left: Vec<_> = std::fs::read_dir(s.root.join("new/dir"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, ["notes.md"]);
}

#[tokio::test]
async fn concurrent_writes_leave_one_whole_file() {
    let s = Tree::new();
    let server = files_server(&s, FileOps::new());
    let writers = (0..32).map(|i| {
        let server = server.clone();
        tokio::spawn(async move {
            let content = format!("{i}").repeat(10_000);
            server
                .call(
                    "file_write",
                    json!({ "path": "race.txt", "content": content }),
                )
                .await
        })
    });
    for writer in writers {
        assert!(writer.await.unwrap().success);
    }
    let text = std::fs::read_to_string(s.root.join("race.txt")).unwrap();
    let first = text.chars().next().unwrap();
    assert!(text.len() >= 10_000);
    let unit = text.len() / 10_000;
    assert_eq!(
        text,
        text[..unit].repeat(10_000),
        "a torn write: starts with {first}"
    );
    // No temporary file is left beside it.
    let mut left: Vec<String> = std::fs::read_dir(&s.root)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, ["docs", "link_in", "link_out", "race.txt"]);
}

#[tokio::test]
async fn moving_copying_deleting_and_creating() {
    let s = Tree::new();
    let server = files_server(&s, FileOps::new());
    ok(&server, "file_mkdir", json!({ "path": "a/b/c" })).await;
    ok(&server, "file_mkdir", json!({ "path": "a/b/c" })).await;
    let over_a_file = fails(&server, "file_mkdir", json!({ "path": "docs/readme.md" })).await;
    assert!(over_a_file.contains("docs/readme.md"), "{over_a_file}");
    ok(
        &server,
        "file_copy",
        json!({ "from": "docs", "to": "a/docs_copy" }),
    )
    .await;
    assert_eq!(
        std::fs::read_to_string(s.root.join("a/docs_copy/readme.md")).unwrap(),
        "line one\nline two\nline three\n"
    );
    let exists = fails(
        &server,
        "file_copy",
        json!({ "from": "docs/readme.md", "to": "a/docs_copy/readme.md" }),
    )
    .await;
    assert!(
        exists.contains("exists already; set `overwrite: true`"),
        "{exists}"
    );
    let into_itself = fails(
        &server,
        "file_copy",
        json!({ "from": "a", "to": "a/b/inner" }),
    )
    .await;
    assert!(
        into_itself.contains("cannot be copied into itself"),
        "{into_itself}"
    );
    ok(
        &server,
        "file_move",
        json!({ "from": "a/docs_copy/readme.md", "to": "moved.md" }),
    )
    .await;
    assert!(s.root.join("moved.md").is_file());
    assert!(!s.root.join("a/docs_copy/readme.md").exists());
    let not_empty = fails(&server, "file_delete", json!({ "path": "a" })).await;
    assert!(
        not_empty.contains("not empty; pass `recursive: true`"),
        "{not_empty}"
    );
    ok(
        &server,
        "file_delete",
        json!({ "path": "a", "recursive": true }),
    )
    .await;
    assert!(!s.root.join("a").exists());
    let root = fails(
        &server,
        "file_delete",
        json!({ "path": ".", "recursive": true }),
    )
    .await;
    assert!(root.contains("allowed directory itself"), "{root}");
    // Deleting a link deletes the link, never what it points at.
    ok(&server, "file_delete", json!({ "path": "link_out" })).await;
    assert!(s.outside.join("secret.txt").is_file());
}

#[tokio::test]
async fn search_by_glob_and_content_honours_gitignore() {
    let s = Tree::new();
    std::fs::write(s.root.join(".gitignore"), "target/\n*.log\n").unwrap();
    std::fs::create_dir_all(s.root.join("target")).unwrap();
    std::fs::write(s.root.join("target/built.rs"), "fn hidden_test() {}\n").unwrap();
    std::fs::write(s.root.join("run.log"), "fn logged_test() {}\n").unwrap();
    std::fs::create_dir_all(s.root.join("src")).unwrap();
    std::fs::write(s.root.join("src/lib.rs"), "fn one() {}\nfn two_test() {}\n").unwrap();
    std::fs::write(s.root.join("src/main.rs"), "fn main() {}\n").unwrap();
    std::fs::create_dir_all(s.root.join(".git")).unwrap();
    std::fs::write(s.root.join(".git/config"), "fn git_test() {}\n").unwrap();
    let server = files_server(&s, FileOps::new());
    let by_glob = ok(&server, "file_search", json!({ "glob": "**/*.rs" })).await;
    assert_eq!(
        by_glob.output["hits"],
        json!([{ "path": "src/lib.rs" }, { "path": "src/main.rs" }])
    );
    let by_content = ok(&server, "file_search", json!({ "query": r"fn \w+_test" })).await;
    assert_eq!(
        by_content.output["hits"],
        json!([{ "path": "src/lib.rs", "line": 2, "text": "fn two_test() {}" }])
    );
    // A subdirectory still follows the root's .gitignore.
    std::fs::create_dir_all(s.root.join("src/target")).unwrap();
    std::fs::write(s.root.join("src/x.log"), "fn x_test() {}").unwrap();
    let below = ok(
        &server,
        "file_search",
        json!({ "query": "_test", "path": "src" }),
    )
    .await;
    assert_eq!(below.output["hits"].as_array().unwrap().len(), 1);
    let bad_regex = fails(&server, "file_search", json!({ "query": "fn (" })).await;
    assert!(bad_regex.contains("/query"), "{bad_regex}");
    let neither = fails(&server, "file_search", json!({})).await;
    assert!(neither.contains("`glob`, `query` or both"), "{neither}");
    // The limit.
    for i in 0..30 {
        std::fs::write(s.root.join(format!("many{i}.txt")), "x\n").unwrap();
    }
    let capped = files_server(&s, FileOps::new().max_entries(10));
    let hits = ok(&capped, "file_search", json!({ "glob": "many*.txt" })).await;
    assert_eq!(hits.output["hits"].as_array().unwrap().len(), 10);
    assert_eq!(hits.output["truncated"], true);
}

#[tokio::test]
async fn writing_and_deleting_need_confirmation_by_default() {
    let s = Tree::new();
    let server = AlephToolServer::builder()
        .with_builtin(FileOps::default())
        .with_working_dir(&s.root)
        .with_allowed_paths([&s.root])
        .build()
        .unwrap();
    for (tool, args) in [
        ("file_write", json!({ "path": "x.txt", "content": "x" })),
        ("file_delete", json!({ "path": "docs/readme.md" })),
    ] {
        let result = server.call(tool, args).await;
        assert_eq!(
            result.error_kind,
            Some(ToolErrorKind::PermissionDenied),
            "{tool}"
        );
    }
    assert!(!s.root.join("x.txt").exists());
    assert!(s.root.join("docs/readme.md").exists());
    let definitions: Vec<_> = server.tools().definitions();
    let annotations = |name: &str| {
        definitions
            .iter()
            .find(|d| d.name == name)
            .unwrap()
            .annotations
    };
    assert_eq!(annotations("file_read").read_only, Some(true));
    assert_eq!(annotations("file_delete").destructive, Some(true));
    assert_eq!(annotations("file_write").destructive, Some(true));
    let read_only = files_server(&s, FileOps::new().read_only());
    assert_eq!(
        read_only.tools().names(),
        ["file_list", "file_read", "file_search"]
    );
}

#[tokio::test]
async fn without_allowed_paths_the_working_directory_bounds_them() {
    let s = Tree::new();
    let server = AlephToolServer::builder()
        .with_builtin(FileOps::new().read_only())
        .with_working_dir(&s.root)
        .build()
        .unwrap();
    ok(&server, "file_read", json!({ "path": "docs/readme.md" })).await;
    let out = fails(
        &server,
        "file_read",
        json!({ "path": "../outside/secret.txt" }),
    )
    .await;
    assert!(out.contains("outside the allowed directories"), "{out}");
}

/// Every path of the traversal corpus, through every file tool, in every argument that
/// takes a path, each path on a fresh copy of the directories: nothing outside is read,
/// written, listed or deleted. Deleting a link that points out acts on the link itself,
/// inside, and is the one call allowed to succeed; moving one is refused, as the moved link
/// would still lead out.
#[tokio::test]
async fn the_traversal_corpus_escapes_through_no_tool() {
    let count = Tree::new().corpus().len();
    let calls = |p: &str| -> Vec<(&'static str, Value)> {
        vec![
            ("file_read", json!({ "path": p })),
            ("file_list", json!({ "path": p, "depth": 2 })),
            ("file_search", json!({ "path": p, "query": "secret" })),
            ("file_write", json!({ "path": p, "content": "pwned" })),
            (
                "file_edit",
                json!({ "path": p, "old_text": "secret", "new_text": "pwned" }),
            ),
            ("file_delete", json!({ "path": p, "recursive": true })),
            ("file_mkdir", json!({ "path": p })),
            ("file_copy", json!({ "from": p, "to": "copied" })),
            ("file_copy", json!({ "from": "docs/readme.md", "to": p })),
            ("file_move", json!({ "from": p, "to": "moved" })),
            ("file_move", json!({ "from": "docs/deep", "to": p })),
        ]
    };
    let mut refused = 0;
    for index in 0..count {
        for call in 0.. {
            // Each call on a fresh tree, so what one call did cannot hide what the next does.
            let s = Tree::new();
            let path = &s.corpus()[index];
            let Some((tool, args)) = calls(path).into_iter().nth(call) else {
                break;
            };
            let server = files_server(&s, FileOps::new());
            let on_a_link = tool == "file_delete"
                && std::fs::symlink_metadata(s.root.join(path)).is_ok_and(|m| m.is_symlink());
            let result = server.call(tool, args.clone()).await;
            if result.success {
                assert!(on_a_link, "{tool} {args} succeeded: {}", result.output);
            } else {
                refused += 1;
            }
            assert!(
                !result.model_text().contains("\"secret"),
                "{tool} {args}: {}",
                result.model_text()
            );
            assert_eq!(
                std::fs::read_to_string(s.outside.join("secret.txt")).unwrap(),
                "secret",
                "{tool} {args}"
            );
            assert_eq!(
                std::fs::read_dir(&s.outside).unwrap().count(),
                1,
                "{tool} {args}"
            );
        }
    }
    assert_eq!(
        refused,
        count * 11 - 2,
        "only deleting a link itself succeeds"
    );
}

/// A directory is swapped for a symbolic link to the outside over and over while the tools
/// read and write through it: the check happens before the swap, the use after; the
/// operations go through the allowed directory's handle, so none of them ever lands outside.
#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_directory_swapped_for_a_link_mid_call_leads_nowhere_outside() {
    let s = Tree::new();
    std::fs::create_dir_all(s.root.join("swap")).unwrap();
    std::fs::write(s.root.join("swap/secret.txt"), "inside").unwrap();
    std::fs::write(s.outside.join("secret.txt"), "secret").unwrap();
    let server = files_server(&s, FileOps::new());
    let stop = Arc::new(AtomicBool::new(false));
    let swapper = {
        let (root, outside, stop) = (s.root.clone(), s.outside.clone(), Arc::clone(&stop));
        std::thread::spawn(move || swap_until(&root, &outside, &stop))
    };
    let mut outside_reads = 0;
    for i in 0..3000 {
        let read = server
            .call("file_read", json!({ "path": "swap/secret.txt" }))
            .await;
        if read.success && read.output["content"] == "secret" {
            outside_reads += 1;
        }
        let _ = server
            .call(
                "file_write",
                json!({ "path": format!("swap/w{i}.txt"), "content": "x" }),
            )
            .await;
        let _ = server
            .call("file_delete", json!({ "path": "swap/secret.txt" }))
            .await;
    }
    stop.store(true, Ordering::Relaxed);
    let swaps = swapper.join().unwrap();
    assert!(swaps > 100, "the directory was swapped only {swaps} times");
    assert_eq!(outside_reads, 0, "file_read read through a swapped-in link");
    let outside: Vec<_> = std::fs::read_dir(&s.outside)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(outside, ["secret.txt"], "a write or delete landed outside");
    assert_eq!(
        std::fs::read_to_string(s.outside.join("secret.txt")).unwrap(),
        "secret"
    );
}

/// Exchanges `root/swap` (a directory) and a link to `outside` atomically, back and forth,
/// until told to stop: at every moment `root/swap` is one or the other. Returns the number
/// of exchanges.
#[cfg(target_os = "linux")]
fn swap_until(root: &Path, outside: &Path, stop: &AtomicBool) -> usize {
    use nix::fcntl::{RenameFlags, renameat2};
    let dir = std::fs::File::open(root).unwrap();
    std::os::unix::fs::symlink(outside, root.join("swap_link")).unwrap();
    let mut swaps = 0;
    while !stop.load(Ordering::Relaxed) {
        renameat2(
            &dir,
            "swap",
            &dir,
            "swap_link",
            RenameFlags::RENAME_EXCHANGE,
        )
        .unwrap();
        std::thread::yield_now();
        renameat2(
            &dir,
            "swap",
            &dir,
            "swap_link",
            RenameFlags::RENAME_EXCHANGE,
        )
        .unwrap();
        swaps += 1;
    }
    swaps
}
