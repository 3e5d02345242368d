//! Installing plugins from directories and archives into the first search path,
//! uninstalling them, and plugins the config keeps disabled.

use std::path::Path;
use std::process::Command;

use aleph_tools::AlephToolServer;
use aleph_tools::plugin::{PluginError, PluginManager, PluginStatus, PluginsConfig};
use aleph_tools_tests::node_plugin;
use aleph_tools_tests::plugin_files::{archive, static_plugin};
use serde_json::json;

fn manager(search: &Path) -> (AlephToolServer, PluginManager) {
    let server = AlephToolServer::new();
    let manager = PluginManager::new(&server, PluginsConfig::with_search_paths([search]));
    (server, manager)
}

fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

#[tokio::test(flavor = "multi_thread")]
async fn a_node_plugin_installs_from_its_directory_and_uninstalls() {
    let sources = tempfile::tempdir().unwrap();
    let search = tempfile::tempdir().unwrap();
    let manifest = "[plugin]\nid = \"greeter\"\nversion = \"1.0.0\"\nkind = \"nodejs\"\nentry = \"index.js\"\n\n[[tools]]\nname = \"greet\"\ndescription = \"Greet someone.\"\n";
    let source = r#"require("@aleph/plugin-sdk").createServer({ name: "greeter", tools: { greet: ({ who }) => `hello ${who}` } }).start();"#;
    let dir = node_plugin(sources.path(), "src-dir", manifest, source);
    let installed_to = search.path().join("plugins");
    let (server, manager) = manager(&installed_to);

    let info = manager.install(&dir).unwrap();
    assert_eq!(info.id, "greeter");
    assert_eq!(info.status, PluginStatus::Running);
    assert_eq!(
        info.dir,
        installed_to.join("greeter").canonicalize().unwrap()
    );
    assert_eq!(entries(&installed_to), ["greeter"]);
    let answer = server.call("greet", json!({ "who": "ada" })).await;
    assert_eq!(answer.output, json!("hello ada"));
    // The source is copied, not moved.
    assert!(dir.join("aleph_plugin.toml").is_file());

    let again = manager.install(&dir).unwrap_err();
    assert!(matches!(again, PluginError::Install { .. }));
    assert!(again.to_string().contains("uninstall it first"), "{again}");

    let removed = manager.plugin("greeter").uninstall().unwrap();
    assert!(!removed.exists());
    assert!(!server.contains("greet"));
    assert!(manager.plugin("greeter").info().is_none());
    assert!(entries(&installed_to).is_empty());
    assert!(matches!(
        manager.plugin("greeter").uninstall(),
        Err(PluginError::NotFound(_))
    ));
}

#[test]
fn archives_install_whether_or_not_they_wrap_the_plugin_in_a_directory() {
    let sources = tempfile::tempdir().unwrap();
    let search = tempfile::tempdir().unwrap();
    let (_server, manager) = manager(search.path());
    for (format, wrapped, id) in [
        ("gztar", true, "tar-wrapped"),
        ("gztar", false, "tar-flat"),
        ("zip", true, "zip-wrapped"),
        ("zip", false, "zip-flat"),
    ] {
        let dir = static_plugin(sources.path(), id, "");
        let packed = archive(&dir, format, wrapped);
        let info = manager.install(&packed).unwrap();
        assert_eq!(info.id, id);
        assert_eq!(info.status, PluginStatus::Running);
        assert_eq!(
            std::fs::read_to_string(search.path().join(id).join("PROMPT.md")).unwrap(),
            format!("Prompt of {id}.")
        );
    }
    assert_eq!(
        entries(search.path()),
        ["tar-flat", "tar-wrapped", "zip-flat", "zip-wrapped"]
    );
    // Installed but not loaded by this manager: found by its manifest and removed.
    let (_server, fresh) = self::manager(search.path());
    fresh.plugin("zip-flat").uninstall().unwrap();
    assert_eq!(
        entries(search.path()),
        ["tar-flat", "tar-wrapped", "zip-wrapped"]
    );
}

#[test]
fn a_bad_install_leaves_nothing_behind() {
    let sources = tempfile::tempdir().unwrap();
    let search = tempfile::tempdir().unwrap();
    let (_server, manager) = manager(search.path());
    let expect = |source: &Path, needle: &str| {
        let error = manager.install(source).unwrap_err().to_string();
        assert!(error.contains(needle), "{needle}: {error}");
        assert!(
            entries(search.path()).is_empty(),
            "{needle}: {:?}",
            entries(search.path())
        );
    };

    let empty = sources.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    expect(&empty, "holds no plugin");
    expect(&sources.path().join("missing.zip"), "cannot read it");
    let text = sources.path().join("notes.txt");
    std::fs::write(&text, "hello").unwrap();
    expect(&text, "neither a directory nor");
    let corrupt = sources.path().join("corrupt.tar.gz");
    std::fs::write(&corrupt, b"\x1f\x8b\x08\x00garbage").unwrap();
    expect(&corrupt, "not a readable .tar.gz archive");
    let corrupt = sources.path().join("corrupt.zip");
    std::fs::write(&corrupt, b"PK\x03\x04garbage").unwrap();
    expect(&corrupt, "not a readable .zip archive");

    // A broken manifest is reported with its key and never copied.
    let broken = static_plugin(sources.path(), "broken", "");
    std::fs::write(
        broken.join("aleph_plugin.toml"),
        "[plugin]\nid = \"Broken Id\"\nversion = \"1.0.0\"\nkind = \"static\"\n",
    )
    .unwrap();
    let packed = archive(&broken, "zip", true);
    expect(&packed, "plugin.id");
    expect(
        &packed,
        &format!("{}/broken/aleph_plugin.toml", packed.display()),
    );

    // The policy is asked before anything is copied.
    let greedy = static_plugin(sources.path(), "greedy", "filesystem = [\"write:/etc\"]");
    expect(&greedy, "is refused");

    // A plugin that cannot start is removed again.
    let manifest = "[plugin]\nid = \"crashes\"\nversion = \"1.0.0\"\nkind = \"nodejs\"\nentry = \"index.js\"\n\n[[tools]]\nname = \"t\"\ndescription = \"A tool.\"\n";
    let crashing = node_plugin(sources.path(), "crashes", manifest, "process.exit(3);");
    expect(&crashing, "crashes");

    // A tar entry climbing out of the plugin is refused, and nothing lands outside.
    let escape = sources.path().join("escape.tar.gz");
    let script = "import io, sys, tarfile\nwith tarfile.open(sys.argv[1], 'w:gz') as t:\n    for name, data in [('p/aleph_plugin.toml', b'[plugin]\\nid = \"p\"\\nversion = \"1.0.0\"\\nkind = \"static\"\\n'), ('p/../../escaped.txt', b'x')]:\n        info = tarfile.TarInfo(name); info.size = len(data); t.addfile(info, io.BytesIO(data))\n";
    let status = Command::new("python3")
        .args(["-c", script])
        .arg(&escape)
        .status()
        .unwrap();
    assert!(status.success());
    expect(&escape, "`p/../../escaped.txt` climbs with `..`");
    assert!(!search.path().parent().unwrap().join("escaped.txt").exists());
}

#[test]
fn only_plugins_in_a_search_path_are_uninstalled() {
    let elsewhere = tempfile::tempdir().unwrap();
    let search = tempfile::tempdir().unwrap();
    let dir = static_plugin(elsewhere.path(), "outside", "");
    let (_server, manager) = manager(search.path());
    manager.load(&dir).unwrap();
    let error = manager.plugin("outside").uninstall().unwrap_err();
    assert!(matches!(error, PluginError::Uninstall { .. }), "{error}");
    assert!(error.to_string().contains("unload the plugin instead"));
    assert!(dir.join("aleph_plugin.toml").is_file());
}

#[test]
fn plugins_the_config_disables_are_listed_stopped_until_enabled() {
    let search = tempfile::tempdir().unwrap();
    static_plugin(search.path(), "quiet", "");
    static_plugin(search.path(), "loud", "");
    let mut config = PluginsConfig::from_toml("[extensions]\ndisabled = [\"quiet\"]\n").unwrap();
    config.search_paths = vec![search.path().to_path_buf()];
    let manager = PluginManager::new(&AlephToolServer::new(), config);
    let report = manager.load_all();
    assert_eq!(report.loaded, ["loud"]);
    assert_eq!(report.disabled, ["quiet"]);
    assert_eq!(
        manager.plugin("quiet").info().unwrap().status,
        PluginStatus::Stopped
    );
    assert!(
        manager
            .prompts(&[] as &[&str])
            .iter()
            .all(|p| p.plugin != "quiet")
    );
    assert_eq!(
        manager.plugin("quiet").enable().unwrap().status,
        PluginStatus::Running
    );
    assert!(
        manager
            .prompts(&[] as &[&str])
            .iter()
            .any(|p| p.plugin == "quiet")
    );
}
