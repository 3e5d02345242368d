//! The built-in file tools cannot be crashed, hung or led out of their roots: ignore files
//! are read only when regular and never through a link, only regular files are read (a FIFO,
//! socket or device is refused, never waited on), reads are capped, every call has a time
//! limit that stops its work, writes never go through a link, and copied or moved links never
//! lead out.
#![cfg(target_os = "linux")]

use std::future::{Future, IntoFuture as _};
use std::os::unix::fs::{PermissionsExt as _, symlink};
use std::path::{Path, PathBuf};
use std::time::Duration;

use aleph_tools::ToolServerBuilder;
use aleph_tools::builtin::FileOps;
use aleph_tools::mcp::McpServer;
use aleph_tools::mcp::rmcp::ServiceExt as _;
use aleph_tools::mcp::rmcp::model::CallToolRequestParams;
use aleph_tools::prelude::*;
use serde_json::{Value, json};

/// How long any call may take before the test fails: far past what a working call needs,
/// and short of hanging CI when a fix regresses.
const BOUND: Duration = Duration::from_mins(1);

/// A temporary directory holding `root/` (the allowed directory) and `outside/` beside it,
/// both canonical.
struct Space {
    _dir: tempfile::TempDir,
    root: PathBuf,
    outside: PathBuf,
}

impl Space {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let (root, outside) = (base.join("root"), base.join("outside"));
        std::fs::create_dir_all(&root).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        Self {
            _dir: dir,
            root,
            outside,
        }
    }

    fn write(&self, rel: &str, content: impl AsRef<[u8]>) -> PathBuf {
        let path = self.root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, content).unwrap();
        path
    }

    fn server(&self, ops: FileOps) -> AlephToolServer {
        builder(&self.root, ops).build().unwrap()
    }
}

fn builder(root: &Path, ops: FileOps) -> ToolServerBuilder {
    AlephToolServer::builder()
        .with_builtin(ops)
        .with_working_dir(root)
        .with_allowed_paths([root])
        .with_confirmation_handler(|_: ConfirmationRequest| async { Confirmation::Approve })
}

/// Makes a FIFO at `path`.
fn fifo(path: &Path) -> PathBuf {
    nix::unistd::mkfifo(path, nix::sys::stat::Mode::S_IRWXU).unwrap();
    path.to_path_buf()
}

/// Opens and closes the write end of each FIFO when dropped, so a reader a regressed fix
/// left waiting on one ends, and the test's runtime can shut down instead of hanging.
struct Unblock(Vec<PathBuf>);

impl Drop for Unblock {
    fn drop(&mut self) {
        use std::os::unix::fs::OpenOptionsExt as _;
        for _ in 0..3 {
            for path in &self.0 {
                let _ = std::fs::OpenOptions::new()
                    .write(true)
                    .custom_flags(nix::fcntl::OFlag::O_NONBLOCK.bits())
                    .open(path);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// Runs a test's body on a runtime of its own, and leaves behind, instead of waiting for,
/// any blocking work a regressed fix leaves stuck (a read of `/dev/zero` or a FIFO), so a
/// regression fails the test instead of hanging it.
fn run(body: impl Future<Output = ()>) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        runtime.block_on(body);
    }));
    runtime.shutdown_timeout(Duration::from_secs(1));
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
}

/// `future`, or a failure naming `what` when it takes longer than [`BOUND`].
async fn bounded<T>(what: &str, future: impl Future<Output = T>) -> T {
    tokio::time::timeout(BOUND, future)
        .await
        .unwrap_or_else(|_| panic!("{what} did not answer within {} s", BOUND.as_secs()))
}

async fn call(server: &AlephToolServer, tool: &str, args: Value) -> ToolResult {
    bounded(
        &format!("{tool} {args}"),
        server.call(tool, args.clone()).into_future(),
    )
    .await
}

async fn ok(server: &AlephToolServer, tool: &str, args: Value) -> ToolResult {
    let result = call(server, tool, args.clone()).await;
    assert!(result.success, "{tool} {args}: {:?}", result.error);
    result
}

async fn fails(server: &AlephToolServer, tool: &str, args: Value) -> String {
    let result = call(server, tool, args.clone()).await;
    assert!(
        !result.success,
        "{tool} {args} succeeded: {}",
        result.output
    );
    result.error.unwrap()
}

/// The paths `file_list` lists.
fn listed(result: &ToolResult) -> Vec<String> {
    result.output["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| entry["path"].as_str().unwrap().to_owned())
        .collect()
}

/// The paths `file_search` found.
fn found(result: &ToolResult) -> Vec<String> {
    result.output["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|hit| hit["path"].as_str().unwrap().to_owned())
        .collect()
}

/// A `.gitignore` linked to `/dev/zero` once aborted the whole process ("memory allocation
/// of 4294967296 bytes failed"). It is not read: an ignore file is never read through a link.
#[test]
fn a_gitignore_linked_to_dev_zero_is_not_read() {
    run(async {
        let s = Space::new();
        s.write("a.txt", "a\n");
        s.write("sub/b.txt", "b\n");
        symlink("/dev/zero", s.root.join(".gitignore")).unwrap();
        symlink("/dev/zero", s.root.join("sub/.gitignore")).unwrap();
        let server = s.server(FileOps::new());
        let list = ok(&server, "file_list", json!({ "depth": 2 })).await;
        assert_eq!(
            listed(&list),
            [".gitignore", "a.txt", "sub", "sub/.gitignore", "sub/b.txt"]
        );
        let search = ok(&server, "file_search", json!({ "query": "^[ab]$" })).await;
        assert_eq!(found(&search), ["a.txt", "sub/b.txt"]);
        // Listing a directory below one with such a link reads the link's place too.
        let below = ok(&server, "file_list", json!({ "path": "sub" })).await;
        assert_eq!(listed(&below), ["sub/.gitignore", "sub/b.txt"]);
    });
}

/// A `.gitignore` that is a FIFO, or a link to one, once left the call waiting for a writer
/// for ever (and its thread with it). It is left out, at once.
#[test]
fn a_gitignore_that_is_a_fifo_or_links_to_one_is_not_waited_on() {
    run(async {
        let s = Space::new();
        s.write("a.txt", "a\n");
        s.write("sub/b.txt", "b\n");
        let _unblock = Unblock(vec![
            fifo(&s.outside.join("pipe")),
            fifo(&s.root.join("sub/.gitignore")),
        ]);
        symlink(s.outside.join("pipe"), s.root.join(".gitignore")).unwrap();
        let server = s.server(FileOps::new());
        let list = ok(&server, "file_list", json!({ "depth": 2 })).await;
        assert_eq!(
            listed(&list),
            [".gitignore", "a.txt", "sub", "sub/.gitignore", "sub/b.txt"]
        );
        let search = ok(&server, "file_search", json!({ "query": "^[ab]$" })).await;
        assert_eq!(found(&search), ["a.txt", "sub/b.txt"]);
        let below = ok(
            &server,
            "file_search",
            json!({ "glob": "*", "path": "sub" }),
        )
        .await;
        assert_eq!(found(&below), ["sub/b.txt"]);
    });
}

/// A `.gitignore` linked to a file outside once had its patterns applied, so which names
/// vanished told what the outside file holds. Linked ignore files are not read, whether they
/// lead outside or not (as git does); regular ones still apply.
#[test]
fn a_gitignore_linked_outside_hides_nothing() {
    run(async {
        let s = Space::new();
        std::fs::write(s.outside.join("patterns"), "secret*\n").unwrap();
        s.write("secret.txt", "one\n");
        s.write("sub/secret_two.txt", "two\n");
        s.write("inner/hidden.txt", "three\n");
        s.write("inner_patterns", "hidden*\n");
        s.write("plain/.gitignore", "*.log\n");
        s.write("plain/kept.txt", "kept\n");
        s.write("plain/dropped.log", "dropped\n");
        symlink(s.outside.join("patterns"), s.root.join(".gitignore")).unwrap();
        symlink("../../outside/patterns", s.root.join("sub/.gitignore")).unwrap();
        symlink("../inner_patterns", s.root.join("inner/.gitignore")).unwrap();
        let server = s.server(FileOps::new());
        let list = ok(&server, "file_list", json!({ "depth": 2 })).await;
        let names = listed(&list);
        for name in [
            "secret.txt",
            "sub/secret_two.txt",
            "inner/hidden.txt",
            "plain/kept.txt",
        ] {
            assert!(names.iter().any(|n| n == name), "{name} hidden: {names:?}");
        }
        assert!(!names.iter().any(|n| n == "plain/dropped.log"), "{names:?}");
        let search = ok(&server, "file_search", json!({ "glob": "**/secret*" })).await;
        assert_eq!(found(&search), ["secret.txt", "sub/secret_two.txt"]);
        let below = ok(&server, "file_list", json!({ "path": "sub" })).await;
        assert_eq!(listed(&below), ["sub/.gitignore", "sub/secret_two.txt"]);
    });
}

/// `file_read` of a FIFO once waited for a writer for ever; of a socket it failed with "No
/// such device or address"; of a device (here `/dev/zero`, through a link inside the root,
/// with `/dev` allowed) it read the device. Each is refused, saying what the path is.
#[test]
fn only_regular_files_are_read() {
    run(async {
        let s = Space::new();
        let _unblock = Unblock(vec![fifo(&s.root.join("pipe"))]);
        let _listener = std::os::unix::net::UnixListener::bind(s.root.join("sock")).unwrap();
        symlink("/dev/zero", s.root.join("zero")).unwrap();
        std::fs::create_dir_all(s.root.join("dir")).unwrap();
        symlink("../pipe", s.root.join("dir/pipe_link")).unwrap();
        let server = builder(&s.root, FileOps::new())
            .with_allowed_paths([s.root.as_path(), Path::new("/dev")])
            .build()
            .unwrap();
        for (path, kind) in [
            ("pipe", "a FIFO (named pipe)"),
            ("dir/pipe_link", "a FIFO (named pipe)"),
            ("sock", "a socket"),
            ("zero", "a character device"),
        ] {
            let read = fails(&server, "file_read", json!({ "path": path })).await;
            assert!(
                read.contains(&format!(
                    "is {kind}, not a regular file; file_read reads regular files only"
                )),
                "{path}: {read}"
            );
            let edit = fails(
                &server,
                "file_edit",
                json!({ "path": path, "old_text": "a", "new_text": "b" }),
            )
            .await;
            assert!(edit.contains(kind), "{path}: {edit}");
        }
        let copy = fails(
            &server,
            "file_copy",
            json!({ "from": "pipe", "to": "copied" }),
        )
        .await;
        assert!(copy.contains("a FIFO (named pipe)"), "{copy}");
        assert!(!s.root.join("copied").exists());
        // A FIFO is no directory to list or search either, and is not waited on.
        let list = fails(&server, "file_list", json!({ "path": "pipe" })).await;
        assert!(list.contains("not a directory"), "{list}");
        let search = fails(
            &server,
            "file_search",
            json!({ "path": "pipe", "query": "x" }),
        )
        .await;
        assert!(search.contains("not a directory"), "{search}");
        // The search walks past them.
        s.write("text.txt", "a line\n");
        let search = ok(&server, "file_search", json!({ "query": "line" })).await;
        assert_eq!(found(&search), ["text.txt"]);
    });
}

/// What the tools read is capped, and the caps say what they are and how to read a part: a
/// read stops at its limit and says where to read on; `file_edit` refuses a file over its
/// limit without reading it (a sparse file of 64 MiB once was read whole into memory); an
/// ignore file over 1 MiB is left out.
#[test]
fn reads_are_capped_and_say_how_to_read_a_part() {
    run(async {
        let s = Space::new();
        let lines = (1..=500).fold(String::new(), |mut all, i| {
            use std::fmt::Write as _;
            let _ = writeln!(all, "line {i:04}");
            all
        });
        s.write("long.txt", &lines);
        let sparse = s.write("sparse.txt", "needle\n");
        std::fs::OpenOptions::new()
            .write(true)
            .open(&sparse)
            .unwrap()
            .set_len(64 << 20)
            .unwrap();
        let mut ignore = "*.txt\n".to_owned();
        ignore.push_str(&"#".repeat(2 << 20));
        s.write("big/.gitignore", ignore);
        s.write("big/shown.txt", "x\n");
        let server = s.server(FileOps::new().max_read_bytes(1000).max_write_bytes(1 << 20));
        let read = ok(&server, "file_read", json!({ "path": "long.txt" })).await;
        assert!(read.output["content"].as_str().unwrap().len() <= 1000);
        let text = read.model_text();
        assert!(
            text.contains("past the 1000-byte limit of one read")
                && text.contains("read on with start_line = 101")
                && text.contains("line_count"),
            "{text}"
        );
        let edit = fails(
            &server,
            "file_edit",
            json!({ "path": "sparse.txt", "old_text": "needle", "new_text": "pin" }),
        )
        .await;
        assert!(
            edit.contains(&format!("`sparse.txt` is {} bytes", 64 << 20))
                && edit.contains("at most 1048576 bytes")
                && edit.contains("file_read (start_line and line_count)"),
            "{edit}"
        );
        let list = ok(&server, "file_list", json!({ "path": "big" })).await;
        assert_eq!(listed(&list), ["big/.gitignore", "big/shown.txt"]);
        // An edit is judged by the size it would make before it is made: 100,000 newlines
        // each replaced by 100 KB would be 10 GB, built in memory.
        s.write("lines.txt", "\n".repeat(100_000));
        let edit = fails(
            &server,
            "file_edit",
            json!({ "path": "lines.txt", "old_text": "\n", "new_text": "x".repeat(100_000), "replace_all": true }),
        )
        .await;
        assert!(
            edit.contains("a file of at most 1048576 bytes") && edit.contains("10000000000 bytes"),
            "{edit}"
        );
    });
}

/// The bytes this process has read so far (`rchar` of `/proc/self/io`).
fn bytes_read() -> u64 {
    std::fs::read_to_string("/proc/self/io")
        .unwrap()
        .lines()
        .find_map(|line| line.strip_prefix("rchar:"))
        .and_then(|n| n.trim().parse().ok())
        .unwrap()
}

/// Answers at once.
#[tool(register = false)]
fn ping() -> String {
    "pong".to_owned()
}

/// Every file tool has a time limit: a read that would scan 256 GiB (a sparse file whose
/// first line never ends) ends with a Timeout at the limit, its reading stops, and the server
/// answers the next calls. Before, file tools had no limit at all.
#[test]
fn a_call_past_its_time_limit_times_out_and_stops() {
    run(async {
        let s = Space::new();
        let huge = s.write("huge.txt", "a".repeat(8192));
        std::fs::OpenOptions::new()
            .write(true)
            .open(&huge)
            .unwrap()
            .set_len(256 << 30)
            .unwrap();
        s.write("small.txt", "small\n");
        let limit = Duration::from_secs(3);
        let server = builder(&s.root, FileOps::new().time_limit(limit))
            .with_tool(PingTool)
            .build()
            .unwrap();
        let slow = call(
            &server,
            "file_read",
            json!({ "path": "huge.txt", "start_line": 2 }),
        )
        .await;
        assert_eq!(slow.error_kind, Some(ToolErrorKind::Timeout), "{slow:?}");
        assert!(
            slow.error
                .as_deref()
                .unwrap()
                .contains("did not finish within"),
            "{slow:?}"
        );
        assert_eq!(ok(&server, "ping", json!({})).await.output, "pong");
        let small = ok(&server, "file_read", json!({ "path": "small.txt" })).await;
        assert_eq!(small.output["content"], "small\n");
        // The abandoned read stops: the process soon reads no more than a trickle (a read left
        // running goes on at gigabytes a second).
        let settled = async {
            loop {
                let before = bytes_read();
                tokio::time::sleep(Duration::from_millis(200)).await;
                if bytes_read() - before < 512 << 20 {
                    break;
                }
            }
        };
        bounded("the abandoned read's end", settled).await;
    });
}

/// `file_write` to a dangling link once replaced the link with a `0777` file. A write never
/// goes through a link: a dangling one (leading outside, inside, or naming a directory) is
/// refused and left as it was, nothing is made where it points, and new files get the usual
/// permissions (no execute bits) while replaced ones keep theirs.
#[test]
fn writes_never_go_through_a_link() {
    run(async {
        let s = Space::new();
        symlink("../outside/new.txt", s.root.join("out.txt")).unwrap();
        symlink("missing.txt", s.root.join("in.txt")).unwrap();
        symlink(s.outside.join("newdir"), s.root.join("dir_link")).unwrap();
        let server = s.server(FileOps::new());
        for path in ["out.txt", "in.txt", "dir_link/x.txt"] {
            let error = fails(
                &server,
                "file_write",
                json!({ "path": path, "content": "pwned" }),
            )
            .await;
            assert!(!error.is_empty(), "{path}");
        }
        let error = fails(
            &server,
            "file_write",
            json!({ "path": "out.txt", "content": "pwned" }),
        )
        .await;
        assert!(
            error.contains("is a symbolic link to `../outside/new.txt` that leads to nothing"),
            "{error}"
        );
        for link in ["out.txt", "in.txt", "dir_link"] {
            let meta = std::fs::symlink_metadata(s.root.join(link)).unwrap();
            assert!(meta.is_symlink(), "{link} was replaced");
        }
        assert!(!s.root.join("missing.txt").exists());
        assert_eq!(std::fs::read_dir(&s.outside).unwrap().count(), 0);
        ok(
            &server,
            "file_write",
            json!({ "path": "fresh.txt", "content": "fresh" }),
        )
        .await;
        let mode = std::fs::metadata(s.root.join("fresh.txt"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o111, 0, "a new file is executable: {mode:o}");
        let private = s.write("private.txt", "before");
        std::fs::set_permissions(&private, std::fs::Permissions::from_mode(0o600)).unwrap();
        ok(
            &server,
            "file_write",
            json!({ "path": "private.txt", "content": "after" }),
        )
        .await;
        let mode = std::fs::metadata(&private).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    });
}

/// The links of a tree, each with what it holds, by path below `dir`.
fn links_below(dir: &Path) -> Vec<(String, String)> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(current) = pending.pop() {
        for entry in std::fs::read_dir(&current).unwrap() {
            let path = entry.unwrap().path();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            if meta.is_symlink() {
                let target = std::fs::read_link(&path).unwrap();
                let rel = path.strip_prefix(dir).unwrap();
                found.push((rel.display().to_string(), target.display().to_string()));
            } else if meta.is_dir() {
                pending.push(path);
            }
        }
    }
    found.sort();
    found
}

/// `file_copy` of a directory once copied relative links as they were written, so
/// `../../..`, harmless where it was, led outside from the copy. A link is copied only when
/// it leads inside from its new place; the others (and a FIFO) are left out and named.
/// Moving a link is judged the same way.
#[test]
fn copied_and_moved_links_never_lead_out() {
    run(async {
        let s = Space::new();
        s.write("a/b/src/file.txt", "x\n");
        s.write("a/b/sibling.txt", "s\n");
        std::fs::create_dir_all(s.root.join("a/b/src/sub")).unwrap();
        let src = s.root.join("a/b/src");
        symlink("../../..", src.join("up")).unwrap();
        symlink("../sibling.txt", src.join("sib")).unwrap();
        symlink(s.root.join("a/b/sibling.txt"), src.join("abs_in")).unwrap();
        symlink(&s.outside, src.join("abs_out")).unwrap();
        symlink("sub/../../..", src.join("climb")).unwrap();
        symlink("../../../../..", src.join("sub/deeper")).unwrap();
        let _unblock = Unblock(vec![fifo(&src.join("pipe"))]);
        let server = s.server(FileOps::new());
        let copied = ok(
            &server,
            "file_copy",
            json!({ "from": "a/b/src", "to": "top" }),
        )
        .await;
        let done = copied.output["done"].as_str().unwrap();
        assert!(done.contains("left out 5"), "{done}");
        assert!(
            done.contains(
                "`a/b/src/up` (a symbolic link: from its new place it would lead outside the allowed directories)"
            ),
            "{done}"
        );
        assert!(done.contains("(a FIFO (named pipe))"), "{done}");
        assert_eq!(
            links_below(&s.root.join("top")),
            [
                (
                    "abs_in".to_owned(),
                    s.root.join("a/b/sibling.txt").display().to_string()
                ),
                ("sib".to_owned(), "../sibling.txt".to_owned()),
            ]
        );
        assert_eq!(
            std::fs::read_to_string(s.root.join("top/file.txt")).unwrap(),
            "x\n"
        );
        assert!(s.root.join("top/sub").is_dir());
        // A link moved where it would lead out stays where it was.
        let moved = fails(
            &server,
            "file_move",
            json!({ "from": "a/b/src/up", "to": "up" }),
        )
        .await;
        assert!(
            moved.contains(
                "moved to `up`, from its new place it would lead outside the allowed directories"
            ),
            "{moved}"
        );
        assert!(std::fs::symlink_metadata(src.join("up")).is_ok());
        ok(
            &server,
            "file_move",
            json!({ "from": "a/b/src/abs_in", "to": "abs_in" }),
        )
        .await;
        assert_eq!(
            std::fs::read_to_string(s.root.join("abs_in")).unwrap(),
            "s\n"
        );
        // A directory moved with a relative link inside that would lead out from there
        // stays where it was; one whose links stay inside moves.
        let moved = fails(
            &server,
            "file_move",
            json!({ "from": "a/b/src", "to": "src" }),
        )
        .await;
        assert!(
            moved.contains("holds the symbolic link") && moved.contains("would lead outside"),
            "{moved}"
        );
        assert!(src.is_dir() && !s.root.join("src").exists());
        s.write("c/d/inner/file.txt", "i\n");
        symlink("file.txt", s.root.join("c/d/inner/same")).unwrap();
        ok(
            &server,
            "file_move",
            json!({ "from": "c/d/inner", "to": "inner" }),
        )
        .await;
        assert_eq!(
            std::fs::read_to_string(s.root.join("inner/same")).unwrap(),
            "i\n"
        );
    });
}

/// Through the official MCP client: a `.gitignore` linked to `/dev/zero` and a FIFO read
/// leave the server serving, each call answered.
#[test]
fn over_mcp_the_server_keeps_serving() {
    run(async {
        let s = Space::new();
        s.write("a.txt", "a\n");
        symlink("/dev/zero", s.root.join(".gitignore")).unwrap();
        let _unblock = Unblock(vec![fifo(&s.root.join("pipe"))]);
        let tools = s.server(FileOps::new());
        let (client, ours) = tokio::io::duplex(64 * 1024);
        let (read, write) = tokio::io::split(ours);
        tokio::spawn(McpServer::new(&tools).serve(read, write));
        let client = ().serve(tokio::io::split(client)).await.unwrap();
        let mcp_call = |name: &'static str, args: Value| {
            let client = &client;
            async move {
                let params = CallToolRequestParams::new(name)
                    .with_arguments(args.as_object().unwrap().clone());
                let result = bounded(name, client.call_tool(params)).await.unwrap();
                serde_json::to_value(result).unwrap()
            }
        };
        let list = mcp_call("file_list", json!({})).await;
        assert_ne!(list["isError"], true, "{list}");
        assert!(list.to_string().contains("a.txt"), "{list}");
        let fifo_read = mcp_call("file_read", json!({ "path": "pipe" })).await;
        assert_eq!(fifo_read["isError"], true, "{fifo_read}");
        assert!(fifo_read.to_string().contains("FIFO"), "{fifo_read}");
        let read = mcp_call("file_read", json!({ "path": "a.txt" })).await;
        assert_ne!(read["isError"], true, "{read}");
        client.cancel().await.unwrap();
    });
}
