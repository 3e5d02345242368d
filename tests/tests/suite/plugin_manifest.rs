//! Manifests: the three formats and their order, every section of a complete manifest, and
//! one broken manifest per rule, each error naming the file, the key and what to fix.

use std::path::Path;

use aleph_tools::middleware::Priority;
use aleph_tools::plugin::{
    HookKind, PluginKind, PluginManager, PluginManifest, PluginStatus, PluginsConfig, PromptScope,
    SchemaSource,
};
use aleph_tools::prelude::*;
use aleph_tools_tests::manifests::{BrokenManifest, broken_manifests};

/// A manifest with every section, as a plugin author would write it.
const COMPLETE: &str = r#"
[plugin]
id = "my-plugin"
name = "My Plugin"
version = "1.2.3"
description = "Does something useful"
author = "Someone"
kind = "nodejs"
entry = "index.js"
api_version = ">=1.0, <2"

[permissions]
network = ["connect:https://*"]
filesystem = ["read:./data", "write:./output"]
env = ["API_KEY", "DEBUG"]

[prompt]
file = "SKILL.md"
scope = "tool"

[[hooks]]
event = "before_tool_call"
kind = "interceptor"
priority = "high"
handler = "onBeforeTool"

[[hooks]]
event = "after_tool_call"
kind = "observer"
priority = "low"
handler = "onAfterTool"

[[commands]]
name = "ping"
description = "Check the plugin answers"
handler = "handlePing"

[[services]]
name = "sync-daemon"
description = "Background sync"
start_handler = "startSync"
stop_handler = "stopSync"
auto_start = false

[[channels]]
name = "chat"
description = "A chat bridge"
connect_handler = "connect"
disconnect_handler = "disconnect"
send_handler = "send"

[[providers]]
name = "local-llama"
description = "A local model server"
list_models_handler = "listModels"
chat_handler = "handleChat"
stream_handler = "handleStream"

[[http_routes]]
method = "POST"
path = "/webhooks/github"
handler = "handleGithubWebhook"
"#;

fn plugin_dir(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in files {
        let path = dir.path().join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    dir
}

#[test]
fn a_complete_manifest_reads_every_section() {
    let dir = plugin_dir(&[
        ("aleph_plugin.toml", COMPLETE),
        ("SKILL.md", "Be brief."),
        ("index.js", ""),
    ]);
    let loaded = PluginManifest::read_dir(dir.path()).unwrap();
    let m = &loaded.manifest;
    assert_eq!(m.plugin.id, "my-plugin");
    assert_eq!(m.plugin.version, semver::Version::new(1, 2, 3));
    assert_eq!(m.plugin.kind, PluginKind::Nodejs);
    assert_eq!(m.permissions.allowed_hosts(), ["*"]);
    let mounts = m.permissions.mounts(dir.path());
    assert!(mounts[0].read_only && !mounts[1].read_only);
    assert_eq!(mounts[1].guest, Path::new("/output"));
    assert_eq!(m.prompt.as_ref().unwrap().scope, PromptScope::Tool);
    assert_eq!(m.hooks[0].kind, HookKind::Interceptor);
    assert_eq!(m.hooks[0].priority, Priority::High);
    assert!(m.hooks[0].priority.value() < m.hooks[1].priority.value());
    assert_eq!(m.commands[0].name, "ping");
    assert_eq!(m.services[0].stop_handler, "stopSync");
    assert_eq!(m.channels[0].send_handler, "send");
    assert_eq!(m.providers[0].embed_handler, None);
    assert_eq!(m.http_routes[0].path, "/webhooks/github");
    assert_eq!(loaded.file, dir.path().join("aleph_plugin.toml"));

    // The same manifest as JSON reads the same.
    let json = serde_json::to_string(m).unwrap();
    assert_eq!(&PluginManifest::from_json(&json).unwrap(), m);
}

#[test]
fn toml_comes_first_then_json_then_package_json() {
    let toml = "[plugin]\nid = \"from-toml\"\nversion = \"1.0.0\"\nkind = \"static\"\n";
    let json = r#"{ "plugin": { "id": "from-json", "version": "1.0.0", "kind": "static" } }"#;
    let package = r#"{ "name": "from-package", "version": "2.0.0", "alephPlugin": { "plugin": { "kind": "static" } } }"#;
    let all = plugin_dir(&[
        ("aleph_plugin.toml", toml),
        ("aleph_plugin.json", json),
        ("package.json", package),
    ]);
    let id = |dir: &Path| PluginManifest::read_dir(dir).unwrap().manifest.plugin.id;
    assert_eq!(id(all.path()), "from-toml");
    std::fs::remove_file(all.path().join("aleph_plugin.toml")).unwrap();
    assert_eq!(id(all.path()), "from-json");
    std::fs::remove_file(all.path().join("aleph_plugin.json")).unwrap();
    // `id` and `version` come from the package when the section leaves them out.
    let from_package = PluginManifest::read_dir(all.path()).unwrap().manifest;
    assert_eq!(from_package.plugin.id, "from-package");
    assert_eq!(from_package.plugin.version.major, 2);

    let plain_package = plugin_dir(&[("package.json", r#"{ "name": "x" }"#)]);
    let error = PluginManifest::read_dir(plain_package.path()).unwrap_err();
    assert!(error.to_string().contains("no manifest"), "{error}");
    assert!(PluginManifest::read_dir(Path::new("/no/such/plugin")).is_err());
}

#[test]
fn each_broken_rule_is_named_with_its_key_and_place() {
    for BrokenManifest {
        what,
        manifest,
        files,
        key,
        words,
    } in broken_manifests()
    {
        let mut all = vec![("aleph_plugin.toml", manifest.as_str())];
        all.extend_from_slice(files);
        let dir = plugin_dir(&all);
        let error = PluginManifest::read_dir(dir.path()).unwrap_err();
        assert_eq!(error.file, dir.path().join("aleph_plugin.toml"), "{what}");
        let text = error.to_string();
        assert!(text.contains(words), "{what}: {text}");
        let problem = error
            .problems
            .iter()
            .find(|p| p.message.contains(words))
            .unwrap_or_else(|| panic!("{what}: {text}"));
        assert_eq!(problem.key, key, "{what}: {text}");
        // TOML problems carry their line and column.
        assert!(problem.position.is_some(), "{what}: {text}");
    }
}

#[test]
fn every_problem_is_reported_at_once() {
    let manifest = "[plugin]\nid = \"Bad\"\nversion = \"1.0.0\"\nkind = \"wasm\"\n\n[[tools]]\nname = \"a b\"\ndescription = \"\"\n";
    let dir = plugin_dir(&[("aleph_plugin.toml", manifest)]);
    let error = PluginManifest::read_dir(dir.path()).unwrap_err();
    let keys: Vec<&str> = error.problems.iter().map(|p| p.key.as_str()).collect();
    assert_eq!(
        keys,
        [
            "plugin.id",
            "plugin.entry",
            "tools[0].name",
            "tools[0].description"
        ]
    );
    assert_eq!(error.problems[2].position, Some((7, 8)));
    let text = error.to_string();
    assert!(text.contains("4 problems"), "{text}");
    assert!(text.contains("line 7, column 8: `tools[0].name`"), "{text}");
}

#[test]
fn json_errors_say_where() {
    let dir = plugin_dir(&[(
        "aleph_plugin.json",
        "{\n  \"plugin\": {\n    \"id\": 7\n  }\n}",
    )]);
    let error = PluginManifest::read_dir(dir.path())
        .unwrap_err()
        .to_string();
    assert!(error.contains("aleph_plugin.json"), "{error}");
    assert!(error.contains("line 3"), "{error}");
}

#[test]
fn bad_plugins_cost_only_themselves() {
    let root = tempfile::tempdir().unwrap();
    let good = "[plugin]\nid = \"good\"\nversion = \"1.0.0\"\nkind = \"static\"\n";
    let node =
        "[plugin]\nid = \"node\"\nversion = \"1.0.0\"\nkind = \"nodejs\"\nentry = \"index.js\"\n";
    for (name, files) in [
        ("a-broken", vec![("aleph_plugin.toml", "[plugin")]),
        ("b-good", vec![("aleph_plugin.toml", good)]),
        (
            "c-node",
            vec![("aleph_plugin.toml", node), ("index.js", "")],
        ),
        ("d-same-id", vec![("aleph_plugin.toml", good)]),
        ("e-not-a-plugin", vec![("README.md", "")]),
    ] {
        for (file, text) in files {
            let path = root.path().join(name).join(file);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
    }
    let server = AlephToolServer::new();
    let manager = PluginManager::new(&server, PluginsConfig::with_search_paths([root.path()]));
    assert_eq!(manager.discover().len(), 4);
    let report = manager.load_all();
    assert_eq!(report.loaded, ["good"]);
    let errors: Vec<String> = report.failed.iter().map(|(_, e)| e.to_string()).collect();
    assert_eq!(errors.len(), 3, "{errors:?}");
    assert!(
        errors[0].contains("aleph_plugin.toml") && errors[0].contains("line 1"),
        "{}",
        errors[0]
    );
    assert!(
        errors[1].contains("plugin `node` cannot load: it ended before answering `initialize`"),
        "{}",
        errors[1]
    );
    assert!(
        errors[2].contains("plugin id `good` is already loaded"),
        "{}",
        errors[2]
    );

    let list = manager.list();
    let status = |id: &str| list.iter().find(|p| p.id == id).unwrap().status.clone();
    assert_eq!(status("good"), PluginStatus::Running);
    assert!(matches!(status("a-broken"), PluginStatus::Error(_)));
    assert!(matches!(status("node"), PluginStatus::Error(m) if m.contains("initialize")));

    // Turned off, nothing loads.
    let mut off = PluginsConfig::with_search_paths([root.path()]);
    off.enabled = false;
    let report = PluginManager::new(&server, off).load_all();
    assert!(report.loaded.is_empty() && report.failed.is_empty());
}

#[test]
fn schemas_may_be_files() {
    let source: SchemaSource = serde_json::from_str("\"schemas/a.json\"").unwrap();
    assert!(matches!(source, SchemaSource::File(_)));
    let source: SchemaSource = serde_json::from_str("{\"type\":\"object\"}").unwrap();
    assert!(matches!(source, SchemaSource::Inline(_)));
}

#[test]
fn the_plugins_config_reads_from_an_application_config() {
    let config = PluginsConfig::from_toml(
        "[plugins]\nenabled = true\nsearch_paths = [\"~/.aleph/plugins\", \"./plugins\"]\nhot_reload = true\n\n[plugins.runtimes.wasm]\nenabled = true\nmemory_limit = \"256MB\"\ntimeout_ms = 30000\n",
    )
    .unwrap();
    assert_eq!(
        config,
        PluginsConfig::with_search_paths(["~/.aleph/plugins", "./plugins"])
    );
    assert_eq!(
        PluginsConfig::default().search_paths,
        PluginsConfig::standard_paths()
    );
    let bad =
        PluginsConfig::from_toml("[plugins.runtimes.wasm]\nmemory_limit = \"lots\"\n").unwrap_err();
    assert!(bad.to_string().contains("not a size"), "{bad}");
}
