//! A plugin never escapes through links it ships (refused at load, reload and install), an
//! archive installs nothing hostile (links, hard links, absolute names, devices, modes,
//! bombs), and skills stay in their directory while one bad skill costs only itself.

use std::fs::File;
use std::io::{Read as _, Write as _};
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};

use aleph_tools::AlephToolServer;
use aleph_tools::builtin::{SkillError, Skills};
use aleph_tools::mcp::McpServer;
use aleph_tools::mcp::rmcp::service::RunningService;
use aleph_tools::mcp::rmcp::{RoleClient, ServiceExt};
use aleph_tools::plugin::{PluginManager, PluginStatus, PluginsConfig};
use aleph_tools_tests::{eventually, node_plugin};
use serde_json::json;

/// The plugin of the finding: granted only `write:./data`, its tool reads any path under
/// its directory.
const PEEK_MANIFEST: &str = "[plugin]\nid = \"peek\"\nversion = \"1.0.0\"\nkind = \"nodejs\"\nentry = \"index.js\"\n\n[permissions]\nfilesystem = [\"write:./data\"]\n\n[[tools]]\nname = \"peek\"\ndescription = \"Read a file of the plugin.\"\n";

const PEEK_SOURCE: &str = r#"
const fs = require("node:fs");
require("@aleph/plugin-sdk").createServer({
  name: "peek",
  tools: { peek: ({ path }) => fs.readFileSync(path, "utf8") },
}).start();
"#;

fn peek_plugin(root: &Path) -> PathBuf {
    let dir = node_plugin(root, "peek", PEEK_MANIFEST, PEEK_SOURCE);
    std::fs::create_dir_all(dir.join("data")).unwrap();
    std::fs::write(dir.join("data/note.txt"), "inside").unwrap();
    dir
}

fn manager(server: &AlephToolServer, root: &Path) -> PluginManager {
    PluginManager::new(server, PluginsConfig::with_search_paths([root]))
}

#[tokio::test(flavor = "multi_thread")]
async fn a_node_plugin_shipping_a_link_out_is_refused_at_load_naming_the_link() {
    let root = tempfile::tempdir().unwrap();
    let dir = peek_plugin(root.path());
    symlink("/", dir.join("data/rootlink")).unwrap();
    let server = AlephToolServer::new();
    let manager = manager(&server, root.path());

    let error = match manager.load(&dir) {
        Ok(_) => {
            let read = server
                .call("peek", json!({ "path": "data/rootlink/etc/passwd" }))
                .await;
            panic!("the plugin loaded, and read /etc/passwd: {read:?}");
        }
        Err(error) => error.to_string(),
    };
    assert!(error.contains("`data/rootlink` leads to `/`"), "{error}");
    assert!(error.contains("outside the plugin's directory"), "{error}");
    assert!(!server.contains("peek"));
    assert!(matches!(
        manager.list()[0].status,
        PluginStatus::Error(ref message) if message.contains("data/rootlink")
    ));
    // `load_all` refuses it the same way.
    let report = manager.load_all();
    assert_eq!(report.failed.len(), 1, "{:?}", report.failed);

    // A link out under `node_modules` says how packages are installed as copies.
    std::fs::remove_file(dir.join("data/rootlink")).unwrap();
    let outside = tempfile::tempdir().unwrap();
    symlink(outside.path(), dir.join("node_modules/linked-package")).unwrap();
    let error = manager.load(&dir).unwrap_err().to_string();
    assert!(error.contains("node_modules/linked-package"), "{error}");
    assert!(error.contains("--install-links"), "{error}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_link_added_between_loads_is_caught_at_reload_and_stops_the_running_version() {
    let root = tempfile::tempdir().unwrap();
    let dir = peek_plugin(root.path());
    let server = AlephToolServer::new();
    let manager = manager(&server, root.path());
    manager.load(&dir).unwrap();
    let read = server
        .call("peek", json!({ "path": "data/note.txt" }))
        .await;
    assert_eq!(read.output, json!("inside"), "{:?}", read.error);

    // A dangling link is judged where a write through it would land: beside the plugin.
    symlink("../../planted", dir.join("data/later")).unwrap();
    let error = manager.plugin("peek").reload().unwrap_err().to_string();
    assert!(error.contains("`data/later` leads to"), "{error}");
    assert!(error.contains("planted"), "{error}");
    // The running version works in the same directory: it stops rather than use the link.
    assert!(!server.contains("peek"));
    assert!(matches!(
        manager.plugin("peek").info().unwrap().status,
        PluginStatus::Error(_)
    ));

    std::fs::remove_file(dir.join("data/later")).unwrap();
    manager.plugin("peek").reload().unwrap();
    symlink("/", dir.join("data/rootlink")).unwrap();
    let error = manager.plugin("peek").reload().unwrap_err().to_string();
    assert!(error.contains("`data/rootlink` leads to `/`"), "{error}");
    assert!(!server.contains("peek"));
}

#[tokio::test(flavor = "multi_thread")]
async fn links_that_stay_inside_the_plugin_are_accepted() {
    let root = tempfile::tempdir().unwrap();
    let dir = peek_plugin(root.path());
    std::fs::create_dir_all(dir.join("assets")).unwrap();
    std::fs::write(dir.join("assets/readme.txt"), "an asset").unwrap();
    symlink("../assets", dir.join("data/assets")).unwrap();
    symlink(dir.join("data/note.txt"), dir.join("data/absolute-inside")).unwrap();
    symlink("not-there-yet", dir.join("data/dangling")).unwrap();
    std::fs::create_dir_all(dir.join("node_modules/.bin")).unwrap();
    symlink(
        "../@aleph/plugin-sdk/package.json",
        dir.join("node_modules/.bin/sdk"),
    )
    .unwrap();
    let server = AlephToolServer::new();
    let manager = manager(&server, root.path());
    manager.load(&dir).unwrap();
    let read = server
        .call("peek", json!({ "path": "data/assets/readme.txt" }))
        .await;
    assert_eq!(read.output, json!("an asset"), "{:?}", read.error);
    let read = server
        .call("peek", json!({ "path": "data/absolute-inside" }))
        .await;
    assert_eq!(read.output, json!("inside"), "{:?}", read.error);
}

// ----- archives -----

const STATIC_MANIFEST: &[u8] = b"[plugin]\nid = \"p\"\nversion = \"1.0.0\"\nkind = \"static\"\n";

type TarBuilder = tar::Builder<flate2::write::GzEncoder<File>>;

/// A `.tar.gz` at `path`: the plugin's manifest in `p/`, then what `add` appends.
fn tar_gz(path: &Path, add: impl FnOnce(&mut TarBuilder)) -> PathBuf {
    let file = File::create(path).unwrap();
    let mut builder = tar::Builder::new(flate2::write::GzEncoder::new(
        file,
        flate2::Compression::fast(),
    ));
    file_entry(&mut builder, "p/aleph_plugin.toml", STATIC_MANIFEST);
    add(&mut builder);
    builder.into_inner().unwrap().finish().unwrap();
    path.to_path_buf()
}

/// What a case appends to its archive.
type Append = dyn FnOnce(&mut TarBuilder);

fn file_entry(builder: &mut TarBuilder, name: &str, data: &[u8]) {
    let mut header = tar::Header::new_gnu();
    header.set_size(data.len() as u64);
    header.set_mode(0o644);
    builder.append_data(&mut header, name, data).unwrap();
}

fn link_entry(builder: &mut TarBuilder, kind: tar::EntryType, name: &str, target: &str) {
    let mut header = tar::Header::new_gnu();
    header.set_entry_type(kind);
    header.set_size(0);
    builder.append_link(&mut header, name, target).unwrap();
}

/// An entry whose name is written as is, past the tar writer's own checks.
fn raw_entry(builder: &mut TarBuilder, name: &str, kind: tar::EntryType, data: &[u8]) {
    let mut header = tar::Header::new_old();
    header.as_old_mut().name[..name.len()].copy_from_slice(name.as_bytes());
    header.set_entry_type(kind);
    header.set_size(data.len() as u64);
    header.set_mode(0o644);
    header.set_cksum();
    builder.append(&header, data).unwrap();
}

fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn tar_archives_with_links_out_hard_links_absolute_names_or_devices_install_nothing() {
    let sources = tempfile::tempdir().unwrap();
    let search = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let planted = outside.path().join("planted");
    let manager = manager(&AlephToolServer::new(), search.path());
    let cases: Vec<(&str, Box<Append>, String)> = vec![
        (
            "a symlink to /",
            Box::new(|b| link_entry(b, tar::EntryType::Symlink, "p/data/rootlink", "/")),
            "`p/data/rootlink` is a link to `/".into(),
        ),
        (
            "a symlink climbing out",
            Box::new(|b| link_entry(b, tar::EntryType::Symlink, "p/up", "../../..")),
            "`p/up` is a link to `../../..`".into(),
        ),
        (
            "a symlink out through a link inside",
            Box::new(|b| {
                link_entry(b, tar::EntryType::Symlink, "p/data/top", "..");
                link_entry(b, tar::EntryType::Symlink, "p/data/x", "top/../../secret");
            }),
            "`p/data/x` is a link".into(),
        ),
        (
            "a hard link to /etc/passwd",
            Box::new(|b| link_entry(b, tar::EntryType::Link, "p/passwd", "/etc/passwd")),
            "hard link to `/etc/passwd`".into(),
        ),
        (
            "an absolute name",
            Box::new({
                let planted = planted.clone();
                move |b| {
                    let mut header = tar::Header::new_gnu();
                    header.set_size(1);
                    header.set_mode(0o644);
                    header.set_path_absolute(&planted).unwrap();
                    header.set_cksum();
                    b.append(&header, &b"x"[..]).unwrap();
                }
            }),
            "absolute path".into(),
        ),
        (
            "a name climbing out",
            Box::new(|b| raw_entry(b, "p/../../escaped.txt", tar::EntryType::Regular, b"x")),
            "climbs with `..`".into(),
        ),
        (
            "a device",
            Box::new(|b| raw_entry(b, "p/mem", tar::EntryType::Char, b"")),
            "`p/mem` is a device file".into(),
        ),
        (
            "a file written through a link inside",
            Box::new(|b| {
                link_entry(b, tar::EntryType::Symlink, "p/alias", "data");
                file_entry(b, "p/alias/x", b"x");
            }),
            "through the link `p/alias`".into(),
        ),
    ];
    for (i, (case, add, expected)) in cases.into_iter().enumerate() {
        let archive = tar_gz(&sources.path().join(format!("{i}.tar.gz")), add);
        let error = manager.install(&archive).unwrap_err().to_string();
        assert!(error.contains(&expected), "{case}: {error}");
        assert!(
            names(search.path()).is_empty(),
            "{case}: {:?}",
            names(search.path())
        );
        assert!(!planted.exists(), "{case}");
        assert!(
            !search.path().parent().unwrap().join("escaped.txt").exists(),
            "{case}"
        );
    }

    // Links inside are kept, and the plugin installs.
    let archive = tar_gz(&sources.path().join("fine.tar.gz"), |b| {
        file_entry(b, "p/data/note.txt", b"note");
        link_entry(b, tar::EntryType::Symlink, "p/alias", "data/note.txt");
        link_entry(b, tar::EntryType::Link, "p/copy.txt", "p/data/note.txt");
    });
    manager.install(&archive).unwrap();
    let installed = search.path().join("p");
    assert_eq!(
        std::fs::read_to_string(installed.join("alias")).unwrap(),
        "note"
    );
    assert_eq!(
        std::fs::read_to_string(installed.join("copy.txt")).unwrap(),
        "note"
    );
    assert!(
        std::fs::symlink_metadata(installed.join("alias"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
}

#[test]
fn a_directory_install_holding_a_link_out_leaves_nothing_behind() {
    let sources = tempfile::tempdir().unwrap();
    let search = tempfile::tempdir().unwrap();
    let dir = sources.path().join("p");
    std::fs::create_dir_all(dir.join("data")).unwrap();
    std::fs::write(dir.join("aleph_plugin.toml"), STATIC_MANIFEST).unwrap();
    symlink("/etc", dir.join("data/etc")).unwrap();
    let manager = manager(&AlephToolServer::new(), search.path());
    let error = manager.install(&dir).unwrap_err().to_string();
    assert!(error.contains("`data/etc` leads to `/etc`"), "{error}");
    assert!(names(search.path()).is_empty());
}

fn zip_file(path: &Path, entries: &[(&str, u32, &[u8])]) -> PathBuf {
    let mut writer = zip::ZipWriter::new(File::create(path).unwrap());
    for (name, mode, data) in entries {
        let options = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Stored)
            .unix_permissions(*mode);
        if name.ends_with('/') {
            writer.add_directory(*name, options).unwrap();
        } else {
            writer.start_file(*name, options).unwrap();
            writer.write_all(data).unwrap();
        }
    }
    writer.finish().unwrap();
    path.to_path_buf()
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

#[test]
fn zip_modes_are_clamped_no_set_id_bits_and_nothing_writable_by_others() {
    let sources = tempfile::tempdir().unwrap();
    let search = tempfile::tempdir().unwrap();
    let archive = zip_file(
        &sources.path().join("modes.zip"),
        &[
            ("p/", 0o777, b""),
            ("p/aleph_plugin.toml", 0o666, STATIC_MANIFEST),
            ("p/run.sh", 0o4777, b"#!/bin/sh\n"),
            ("p/shared", 0o2666, b"x"),
            ("p/data/", 0o1777, b""),
            ("p/data/open", 0o777, b"y"),
        ],
    );
    let manager = manager(&AlephToolServer::new(), search.path());
    manager.install(&archive).unwrap();
    let dir = search.path().join("p");
    assert_eq!(mode(&dir.join("aleph_plugin.toml")), 0o644);
    assert_eq!(mode(&dir.join("run.sh")), 0o755, "the execute bit stays");
    assert_eq!(mode(&dir.join("shared")), 0o644);
    assert_eq!(mode(&dir.join("data/open")), 0o755);
    assert_eq!(mode(&dir.join("data")), 0o755);
}

#[test]
fn archives_with_more_entries_or_bytes_than_the_caps_are_refused_naming_the_cap() {
    let sources = tempfile::tempdir().unwrap();
    let search = tempfile::tempdir().unwrap();
    let manager = manager(&AlephToolServer::new(), search.path());

    // 200,000 entries were taken before; the cap is 50,000.
    let many: Vec<String> = (0..50_001).map(|i| format!("p/f{i}")).collect();
    let mut entries: Vec<(&str, u32, &[u8])> =
        vec![("p/aleph_plugin.toml", 0o644, STATIC_MANIFEST)];
    entries.extend(many.iter().map(|name| (name.as_str(), 0o644, &b""[..])));
    let archive = zip_file(&sources.path().join("many.zip"), &entries);
    let error = manager.install(&archive).unwrap_err().to_string();
    assert!(error.contains("more than 50000 entries"), "{error}");
    assert!(names(search.path()).is_empty());

    let archive = tar_gz(&sources.path().join("many.tar.gz"), |b| {
        for name in &many {
            file_entry(b, name, b"");
        }
    });
    let error = manager.install(&archive).unwrap_err().to_string();
    assert!(error.contains("more than 50000 entries"), "{error}");

    // A header that claims 2 GiB is refused before anything is read past it.
    let archive = tar_gz(&sources.path().join("big.tar.gz"), |b| {
        let mut header = tar::Header::new_gnu();
        header.set_size(2 << 30);
        header.set_mode(0o644);
        header.set_path("p/big").unwrap();
        header.set_cksum();
        b.append(&header, std::io::empty()).unwrap();
    });
    let error = manager.install(&archive).unwrap_err().to_string();
    assert!(error.contains("more than 1024 MB"), "{error}");

    // A long name of 16 MiB would be held in memory whole; it is cut off at the limit.
    let archive = tar_gz(&sources.path().join("longname.tar.gz"), |b| {
        let size = 16u64 << 20;
        let mut header = tar::Header::new_gnu();
        header.set_entry_type(tar::EntryType::GNULongName);
        header.set_size(size);
        header.as_gnu_mut().unwrap().name[..13].copy_from_slice(b"././@LongLink");
        header.set_cksum();
        b.append(&header, std::io::repeat(b'a').take(size)).unwrap();
        file_entry(b, "p/after", b"x");
    });
    let error = manager.install(&archive).unwrap_err().to_string();
    assert!(error.contains("more than 256 KiB"), "{error}");
    assert!(names(search.path()).is_empty());
}

// ----- skills -----

fn skill(description: &str, body: &str) -> String {
    format!("---\ndescription: {description}\n---\n{body}\n")
}

fn write_skill(root: &Path, name: &str, text: &str) {
    std::fs::create_dir_all(root.join(name)).unwrap();
    std::fs::write(root.join(name).join("SKILL.md"), text).unwrap();
}

/// A skills directory with two good skills (one a link that stays inside) beside one linked
/// to a file outside, one whose directory leads outside, a malformed one and one whose
/// `SKILL.md` is a directory; and, unless running as root, an unreadable one.
fn hostile_skills(root: &Path, outside: &Path) {
    write_skill(root, "good", &skill("A good skill.", "Good."));
    std::fs::create_dir_all(root.join("shared")).unwrap();
    std::fs::write(
        root.join("shared/alias.md"),
        skill("Linked inside.", "Alias."),
    )
    .unwrap();
    std::fs::create_dir_all(root.join("alias")).unwrap();
    symlink("../shared/alias.md", root.join("alias/SKILL.md")).unwrap();

    std::fs::write(
        outside.join("secret.md"),
        skill("Looks fine.", "TOP SECRET"),
    )
    .unwrap();
    std::fs::create_dir_all(root.join("linked")).unwrap();
    symlink(outside.join("secret.md"), root.join("linked/SKILL.md")).unwrap();
    write_skill(outside, "elsewhere", &skill("Elsewhere.", "TOP SECRET"));
    symlink(outside.join("elsewhere"), root.join("outdir")).unwrap();
    write_skill(root, "broken", "no front matter here");
    std::fs::create_dir_all(root.join("notafile/SKILL.md")).unwrap();
    if !running_as_root() {
        write_skill(root, "locked", &skill("Locked.", "Locked."));
        std::fs::set_permissions(
            root.join("locked/SKILL.md"),
            std::fs::Permissions::from_mode(0o000),
        )
        .unwrap();
    }
}

fn running_as_root() -> bool {
    std::fs::read_to_string("/proc/self/status").is_ok_and(|status| {
        status
            .lines()
            .find(|line| line.starts_with("Uid:"))
            .and_then(|line| line.split_whitespace().nth(2))
            == Some("0")
    })
}

async fn connect(server: McpServer) -> RunningService<RoleClient, ()> {
    let (client, ours) = tokio::io::duplex(64 * 1024);
    let (read, write) = tokio::io::split(ours);
    tokio::spawn(server.serve(read, write));
    ().serve(tokio::io::split(client))
        .await
        .expect("the server answers")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn skills_linked_out_or_broken_are_skipped_and_every_other_skill_is_served() {
    let skills = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    hostile_skills(skills.path(), outside.path());

    let server = AlephToolServer::builder()
        .with_builtin(Skills::new(skills.path()).hot_reload(false))
        .build()
        .expect("bad skills do not stop the server");
    assert_eq!(server.tools().names(), ["alias", "good"]);
    let alias = server.call("alias", json!({})).await;
    assert_eq!(alias.output, json!("Alias.\n"));

    // The same over MCP, tools and prompts, with the official client.
    let client = connect(McpServer::new(&server).with_prompts(Skills::new(skills.path()))).await;
    let prompts: Vec<String> = client
        .list_all_prompts()
        .await
        .unwrap()
        .into_iter()
        .map(|p| p.name)
        .collect();
    assert_eq!(prompts, ["alias", "good"]);
    let tools: Vec<String> = client
        .list_all_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name.into_owned())
        .collect();
    assert_eq!(tools, ["alias", "good"]);

    // What was skipped, each naming its file and why.
    let scan = Skills::new(skills.path()).scan().unwrap();
    let skipped: Vec<String> = scan.skipped.iter().map(ToString::to_string).collect();
    let expected = if running_as_root() { 4 } else { 5 };
    assert_eq!(skipped.len(), expected, "{skipped:#?}");
    let outside_real = outside.path().canonicalize().unwrap();
    for name in ["linked", "outdir"] {
        let error = scan
            .skipped
            .iter()
            .find(|e| matches!(e, SkillError::Outside { path, .. } if path.starts_with(skills.path().canonicalize().unwrap().join(name))))
            .unwrap_or_else(|| panic!("{name} not skipped as outside: {skipped:#?}"));
        let SkillError::Outside { target, .. } = error else {
            unreachable!()
        };
        assert!(target.starts_with(&outside_real), "{error}");
        assert!(error.to_string().contains("outside the skills directory"));
    }
    assert!(
        skipped
            .iter()
            .any(|e| e.contains("broken/SKILL.md") && e.contains("front matter")),
        "{skipped:#?}"
    );
    assert!(
        skipped
            .iter()
            .any(|e| e.contains("notafile/SKILL.md") && e.contains("not a regular file")),
        "{skipped:#?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_reload_skips_links_out_too_and_keeps_what_was_served() {
    let skills = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let root = skills.path();
    write_skill(root, "greet", &skill("Greet.", "Hello."));
    let server = AlephToolServer::builder()
        .with_builtin(Skills::new(root).debounce(std::time::Duration::from_millis(50)))
        .build()
        .unwrap();
    let text = |server: &AlephToolServer, name: &str| {
        let server = server.clone();
        let name = name.to_owned();
        async move { server.call(&name, json!({})).await.output }
    };
    assert_eq!(text(&server, "greet").await, json!("Hello.\n"));

    // A new skill linked out, then a good one: once the good one is served, the linked one
    // has been looked at (the watcher reports changes in order), and is not served.
    std::fs::write(
        outside.path().join("secret.md"),
        skill("Secret.", "TOP SECRET"),
    )
    .unwrap();
    std::fs::create_dir_all(root.join("linked")).unwrap();
    symlink(
        outside.path().join("secret.md"),
        root.join("linked/SKILL.md"),
    )
    .unwrap();
    write_skill(root, "second", &skill("Second.", "Second."));
    eventually("the second skill is served", || server.contains("second")).await;
    assert!(!server.contains("linked"));

    // An edit that turns a served skill into a link out keeps the version read from inside.
    std::fs::remove_file(root.join("greet/SKILL.md")).unwrap();
    symlink(
        outside.path().join("secret.md"),
        root.join("greet/SKILL.md"),
    )
    .unwrap();
    write_skill(root, "third", &skill("Third.", "Third."));
    eventually("the third skill is served", || server.contains("third")).await;
    assert_eq!(text(&server, "greet").await, json!("Hello.\n"));

    // A malformed skill beside them costs only itself.
    write_skill(root, "broken", "no front matter");
    write_skill(root, "fourth", &skill("Fourth.", "Fourth."));
    eventually("the fourth skill is served", || server.contains("fourth")).await;
    assert!(!server.contains("broken"));
    assert!(server.contains("second") && server.contains("greet"));
}
