//! Plugin prompts by scope: `system` always, `tool` while one of the plugin's tools is
//! offered, `standalone` only by name, `disabled` never; static plugins load for their prompt.

use std::path::Path;

use aleph_tools::AlephToolServer;
use aleph_tools::plugin::{PluginKind, PluginManager, PluginStatus, PluginsConfig, PromptScope};
use aleph_tools::prelude::ToolFilter;
use aleph_tools_tests::{copy_dir, example_plugins};

fn static_plugin(root: &Path, id: &str, scope: &str, text: &str) {
    let dir = root.join(id);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("aleph_plugin.toml"),
        format!(
            "[plugin]\nid = \"{id}\"\nversion = \"1.0.0\"\nkind = \"static\"\n\n[prompt]\nfile = \"SKILL.md\"\nscope = \"{scope}\"\n"
        ),
    )
    .unwrap();
    std::fs::write(dir.join("SKILL.md"), text).unwrap();
}

#[test]
fn prompts_follow_their_scope_and_the_tools_offered() {
    let root = tempfile::tempdir().unwrap();
    static_plugin(root.path(), "style", "system", "Write short sentences.");
    static_plugin(
        root.path(),
        "review",
        "standalone",
        "Review the diff line by line.",
    );
    static_plugin(root.path(), "off", "disabled", "Never shown.");
    // text-tools with a prompt bound to its tools.
    let text_tools = root.path().join("text-tools");
    copy_dir(&example_plugins().join("text-tools"), &text_tools);
    let manifest = std::fs::read_to_string(text_tools.join("aleph_plugin.toml")).unwrap();
    std::fs::write(
        text_tools.join("aleph_plugin.toml"),
        manifest.replacen(
            "[[tools]]",
            "[prompt]\nfile = \"PROMPT.md\"\nscope = \"tool\"\n\n[[tools]]",
            1,
        ),
    )
    .unwrap();
    std::fs::write(
        text_tools.join("PROMPT.md"),
        "Count with word_count, never by hand.\n",
    )
    .unwrap();

    let server = AlephToolServer::new();
    let manager = PluginManager::new(&server, PluginsConfig::with_search_paths([root.path()]));
    let report = manager.load_all();
    assert!(report.failed.is_empty(), "{:?}", report.failed);
    let style = manager.plugin("style").info().unwrap();
    assert_eq!(style.kind, Some(PluginKind::Static));
    assert_eq!(style.status, PluginStatus::Running);

    let ids = |prompts: Vec<aleph_tools::plugin::PluginPrompt>| {
        prompts.into_iter().map(|p| p.plugin).collect::<Vec<_>>()
    };
    // Everything the filter offers: text-tools' tools are among them.
    let all = manager.prompts(&server.tools().names());
    assert_eq!(ids(all.clone()), ["style", "text-tools"]);
    assert_eq!(&*all[0].text, "Write short sentences.");
    assert_eq!(all[1].scope, PromptScope::Tool);
    assert_eq!(&*all[1].text, "Count with word_count, never by hand.\n");
    // Filtered away, its tools are not offered, and its prompt goes with them.
    server.set_filter(ToolFilter::new().block("*")).unwrap();
    assert_eq!(ids(manager.prompts(&server.tools().names())), ["style"]);
    server.set_filter(ToolFilter::new()).unwrap();
    assert_eq!(ids(manager.prompts(&["slugify"])), ["style", "text-tools"]);
    assert_eq!(ids(manager.prompts(&[] as &[&str])), ["style"]);

    // By name: standalone and others, never disabled.
    assert_eq!(
        &*manager.plugin("review").prompt().unwrap().text,
        "Review the diff line by line."
    );
    assert!(manager.plugin("style").prompt().is_some());
    assert!(manager.plugin("off").prompt().is_none());
    assert!(manager.plugin("nobody").prompt().is_none());

    // A disabled plugin contributes nothing.
    manager.plugin("style").disable().unwrap();
    assert_eq!(
        ids(manager.prompts(&server.tools().names())),
        ["text-tools"]
    );
    assert!(manager.plugin("style").prompt().is_none());
}

#[test]
fn a_static_plugin_with_code_or_tools_is_refused() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("p");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("aleph_plugin.toml"),
        "[plugin]\nid = \"p\"\nversion = \"1.0.0\"\nkind = \"static\"\n\n[[tools]]\nname = \"t\"\ndescription = \"d\"\n",
    )
    .unwrap();
    let error = aleph_tools::plugin::PluginManifest::read_dir(&dir)
        .unwrap_err()
        .to_string();
    assert!(error.contains("cannot have tools"), "{error}");
}
