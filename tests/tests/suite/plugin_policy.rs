//! The host's permission policy: what a manifest asks is capped by `[plugins.policy]`,
//! refused with what was asked and what is allowed, or trimmed, with real Node.js plugins.

use std::path::Path;

use aleph_tools::AlephToolServer;
use aleph_tools::plugin::{PluginError, PluginManager, PluginStatus, PluginsConfig, PolicyMode};
use aleph_tools_tests::node_plugin;
use serde_json::json;

const SOURCE: &str = r#"
const { createServer } = require("@aleph/plugin-sdk");
createServer({
  name: "probe",
  tools: { env: () => Object.keys(process.env).sort() },
}).start();
"#;

/// Writes a Node.js plugin `id` whose manifest has `permissions` and one tool, `<id>_env`,
/// listing the variables its process sees.
fn plugin(root: &Path, id: &str, permissions: &str) -> std::path::PathBuf {
    let manifest = format!(
        "[plugin]\nid = \"{id}\"\nversion = \"1.0.0\"\nkind = \"nodejs\"\nentry = \"index.js\"\n\n\
         [permissions]\n{permissions}\n\n[[tools]]\nname = \"{id}_env\"\nhandler = \"env\"\n\
         description = \"The variables the plugin sees.\"\n"
    );
    node_plugin(root, id, &manifest, SOURCE)
}

fn settings(root: &Path, policy: &str) -> PluginsConfig {
    let mut settings = PluginsConfig::from_toml(&format!("[plugins.policy]\n{policy}")).unwrap();
    settings.search_paths = vec![root.to_path_buf()];
    settings
}

fn refusal(manager: &PluginManager, dir: &Path) -> String {
    match manager.load(dir) {
        Err(error @ PluginError::Policy { .. }) => error.to_string(),
        other => panic!("expected a policy refusal, got {other:?}"),
    }
}

#[test]
fn a_policy_refuses_connect_star_and_write_etc_saying_what_it_allows() {
    let root = tempfile::tempdir().unwrap();
    let wild = plugin(root.path(), "wild", "network = [\"connect:*\"]");
    let etc = plugin(root.path(), "etc", "filesystem = [\"write:/etc\"]");
    let fine = plugin(
        root.path(),
        "fine",
        "network = [\"connect:https://api.example.com\"]\nfilesystem = [\"write:./data\"]",
    );
    let server = AlephToolServer::new();
    let manager = PluginManager::new(
        &server,
        settings(root.path(), "network = [\"connect:*.example.com\"]"),
    );

    let message = refusal(&manager, &wild);
    assert!(message.contains("plugin `wild` is refused"), "{message}");
    assert!(message.contains("`connect:*`"), "{message}");
    assert!(message.contains("`connect:*.example.com`"), "{message}");
    assert!(message.contains("[plugins.policy]"), "{message}");

    // Outside the plugin's directory, with no root in the policy: refused by the default too.
    let message = refusal(&manager, &etc);
    assert!(message.contains("`write:/etc`"), "{message}");
    assert!(
        message.contains("outside the plugin's directory"),
        "{message}"
    );

    // What the policy covers loads, and a refused plugin is listed with why.
    std::fs::create_dir_all(fine.join("data")).unwrap();
    assert_eq!(manager.load(&fine).unwrap().status, PluginStatus::Running);
    let listed = manager.plugin("wild").info().unwrap();
    assert!(matches!(listed.status, PluginStatus::Error(ref m) if m.contains("connect:*")));
    assert!(!server.contains("wild_env"));
}

#[test]
fn paths_are_judged_where_they_lead() {
    let root = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let outside_dir = outside.path().canonicalize().unwrap();
    let climbing = plugin(
        root.path(),
        "climbing",
        &format!(
            "filesystem = [\"read:{}/../../etc\"]",
            outside_dir.display()
        ),
    );
    let linked = plugin(root.path(), "linked", "filesystem = [\"read:./secrets\"]");
    std::os::unix::fs::symlink("/etc", linked.join("secrets")).unwrap();
    let writer = plugin(
        root.path(),
        "writer",
        &format!("filesystem = [\"write:{}/out\"]", outside_dir.display()),
    );
    let reader = plugin(
        root.path(),
        "reader",
        &format!("filesystem = [\"read:{}/shared\"]", outside_dir.display()),
    );
    std::fs::create_dir_all(outside_dir.join("out")).unwrap();
    std::fs::create_dir_all(outside_dir.join("shared")).unwrap();

    let server = AlephToolServer::new();
    let read_only_root = settings(
        root.path(),
        &format!("filesystem = [\"read:{}\"]", outside_dir.display()),
    );
    let manager = PluginManager::new(&server, read_only_root);
    // `..` cannot climb out of an allowed root, and a link inside the plugin cannot lead out.
    assert!(refusal(&manager, &climbing).contains("/etc"));
    // (The link itself is refused before the policy is asked: nothing in a plugin's
    // directory may lead out of it.)
    let message = manager.load(&linked).unwrap_err().to_string();
    assert!(message.contains("`secrets` leads to `/etc`"), "{message}");
    // A read root allows reads under it, not writes.
    assert_eq!(manager.load(&reader).unwrap().status, PluginStatus::Running);
    let message = refusal(&manager, &writer);
    assert!(message.contains("read-only there"), "{message}");

    let writable_root = settings(
        root.path(),
        &format!("filesystem = [\"write:{}\"]", outside_dir.display()),
    );
    let manager = PluginManager::new(&AlephToolServer::new(), writable_root);
    assert_eq!(manager.load(&writer).unwrap().status, PluginStatus::Running);
}

#[tokio::test(flavor = "multi_thread")]
async fn trimming_loads_the_plugin_without_what_the_policy_does_not_cover() {
    let root = tempfile::tempdir().unwrap();
    let dir = plugin(
        root.path(),
        "greedy",
        "network = [\"connect:*\", \"connect:api.example.com\"]\nenv = [\"CARGO_MANIFEST_DIR\", \"CARGO_PKG_NAME\"]\nchild_process = true",
    );
    let server = AlephToolServer::new();
    let policy =
        "mode = \"trim\"\nnetwork = [\"connect:api.example.com\"]\nenv = [\"CARGO_MANIFEST*\"]";
    let settings = settings(root.path(), policy);
    assert_eq!(settings.policy.mode, PolicyMode::Trim);
    let manager = PluginManager::new(&server, settings);
    // Cargo sets both variables for the tests it runs.
    let info = manager.load(&dir).unwrap();
    assert_eq!(info.status, PluginStatus::Running);
    assert_eq!(
        info.dropped,
        ["connect:*", "env CARGO_PKG_NAME", "child_process"]
    );
    let seen = server.call("greedy_env", json!({})).await;
    assert!(seen.success, "{seen:?}");
    let seen: Vec<String> = serde_json::from_value(seen.output).unwrap();
    assert!(seen.contains(&"CARGO_MANIFEST_DIR".to_owned()), "{seen:?}");
    assert!(!seen.contains(&"CARGO_PKG_NAME".to_owned()), "{seen:?}");
    assert!(info.sandbox.unwrap().contains("no processes"));
}

#[test]
fn one_plugin_can_have_its_own_cap() {
    let root = tempfile::tempdir().unwrap();
    let weather = plugin(
        root.path(),
        "weather",
        "network = [\"connect:api.weather.example\"]",
    );
    let other = plugin(
        root.path(),
        "other",
        "network = [\"connect:api.weather.example\"]",
    );
    let policy = "network = []\n[plugins.policy.plugins.weather]\nnetwork = [\"connect:api.weather.example\"]";
    let manager = PluginManager::new(&AlephToolServer::new(), settings(root.path(), policy));
    assert_eq!(
        manager.load(&weather).unwrap().status,
        PluginStatus::Running
    );
    let message = refusal(&manager, &other);
    assert!(message.contains("none (`network = []`)"), "{message}");
}

#[test]
fn child_processes_need_the_policy_to_allow_them() {
    let root = tempfile::tempdir().unwrap();
    let dir = plugin(root.path(), "spawner", "child_process = true");
    let manager = PluginManager::new(&AlephToolServer::new(), settings(root.path(), ""));
    let message = refusal(&manager, &dir);
    assert!(message.contains("`child_process`"), "{message}");
    let manager = PluginManager::new(
        &AlephToolServer::new(),
        settings(root.path(), "child_process = true"),
    );
    assert_eq!(manager.load(&dir).unwrap().status, PluginStatus::Running);
}

#[test]
fn a_policy_rule_that_cannot_be_read_is_named() {
    for (policy, key) in [
        (
            "network = [\"api.example.com\"]",
            "plugins.policy.network[0]",
        ),
        ("filesystem = [\"/srv\"]", "plugins.policy.filesystem[0]"),
        (
            "[plugins.policy.plugins.x]\nfilesystem = [\"rw:/srv\"]",
            "plugins.policy.plugins.x.filesystem[0]",
        ),
    ] {
        let error = PluginsConfig::from_toml(&format!("[plugins.policy]\n{policy}")).unwrap_err();
        assert!(error.to_string().contains(key), "{policy}: {error}");
    }
    let error = PluginsConfig::from_toml("[plugins.policy]\nmode = \"drop\"").unwrap_err();
    assert!(error.to_string().contains("refuse"), "{error}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_policy_rule_with_a_port_trims_a_grant_of_every_port_and_keeps_its_own() {
    let root = tempfile::tempdir().unwrap();
    let dir = plugin(
        root.path(),
        "ported",
        "network = [\"connect:localhost\", \"connect:http://localhost:3000\"]",
    );
    let server = AlephToolServer::new();
    let policy = "mode = \"trim\"\nnetwork = [\"connect:localhost:3000\"]";
    let manager = PluginManager::new(&server, settings(root.path(), policy));
    let info = manager.load(&dir).unwrap();
    assert_eq!(info.status, PluginStatus::Running);
    assert_eq!(info.dropped, ["connect:localhost"]);
    let sandbox = info.sandbox.unwrap();
    assert!(
        sandbox.contains("the network through a proxy to localhost:3000,")
            || sandbox.contains("the network through a proxy to localhost:3000;"),
        "{sandbox}"
    );
}
