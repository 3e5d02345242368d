//! Prompts over MCP, read by rmcp's client: application prompts, Markdown skills and
//! plugins' `standalone` prompts, each listed and fetched, and the errors a client gets for
//! a wrong name or wrong arguments.

use std::path::Path;

use aleph_tools::AlephToolServer;
use aleph_tools::Content;
use aleph_tools::builtin::Skills;
use aleph_tools::mcp::rmcp::model::{GetPromptRequestParams, Role};
use aleph_tools::mcp::rmcp::service::RunningService;
use aleph_tools::mcp::rmcp::{RoleClient, ServiceExt};
use aleph_tools::mcp::{McpPrompt, McpServer, PromptMessage};
use aleph_tools::plugin::{PluginManager, PluginsConfig};
use serde_json::{Map, Value, json};

const RELEASE_NOTES: &str = "---
description: Write release notes.
arguments:
  - name: version
    description: The version being released
  - name: audience
    default: developers
---
Notes for {{version}}, for {{ audience }}.
";

/// A static plugin whose prompt is `standalone`.
fn prompt_plugin(root: &Path, id: &str, text: &str) {
    let dir = root.join(id);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("aleph_plugin.toml"),
        format!(
            "[plugin]\nid = \"{id}\"\nversion = \"1.0.0\"\nkind = \"static\"\ndescription = \"Checks a change.\"\n\n[prompt]\nfile = \"PROMPT.md\"\nscope = \"standalone\"\n"
        ),
    )
    .unwrap();
    std::fs::write(dir.join("PROMPT.md"), text).unwrap();
}

/// Serves `server` over an in-memory pipe and connects rmcp's client to it.
async fn connect(server: McpServer) -> RunningService<RoleClient, ()> {
    let (client, ours) = tokio::io::duplex(64 * 1024);
    let (read, write) = tokio::io::split(ours);
    tokio::spawn(server.serve(read, write));
    ().serve(tokio::io::split(client))
        .await
        .expect("the server answers")
}

fn args(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        other => panic!("arguments are an object, not {other}"),
    }
}

fn text_of(message: &aleph_tools::mcp::rmcp::model::PromptMessage) -> String {
    serde_json::to_value(&message.content).unwrap()["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn skills_plugins_and_application_prompts_are_listed_and_fetched() {
    let skills = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(skills.path().join("release-notes")).unwrap();
    std::fs::write(skills.path().join("release-notes/SKILL.md"), RELEASE_NOTES).unwrap();
    let plugins = tempfile::tempdir().unwrap();
    prompt_plugin(
        plugins.path(),
        "checker",
        "Check the change against the style guide.",
    );

    let tools = AlephToolServer::new();
    let manager = PluginManager::new(&tools, PluginsConfig::with_search_paths([plugins.path()]));
    let report = manager.load_all();
    assert!(report.failed.is_empty(), "{:?}", report.failed);
    let image = McpPrompt::new("look", "Look at a picture.", |_| {
        vec![
            PromptMessage::user(Content::image([1, 2, 3], "image/png")),
            PromptMessage::assistant("I see it."),
        ]
    });
    // `look` is given twice: the first source's wins.
    let shadowed = McpPrompt::text("look", "Another prompt called look.", "shadowed");
    let client = connect(
        McpServer::new(&tools)
            .with_prompts(image)
            .with_prompts(Skills::new(skills.path()))
            .with_prompts(manager.clone())
            .with_prompts(shadowed),
    )
    .await;

    let capabilities = client.peer_info().unwrap().capabilities.clone();
    assert!(capabilities.prompts.is_some(), "{capabilities:?}");
    assert!(
        capabilities.resources.is_none(),
        "only what is served is declared"
    );

    let listed = client.list_all_prompts().await.unwrap();
    let names: Vec<&str> = listed.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["checker", "look", "release-notes"]);
    assert_eq!(listed[0].description.as_deref(), Some("Checks a change."));
    assert_eq!(listed[1].description.as_deref(), Some("Look at a picture."));
    let arguments = listed[2].arguments.as_ref().unwrap();
    assert_eq!(arguments[0].name, "version");
    assert_eq!(arguments[0].required, Some(true));
    assert_eq!(arguments[1].name, "audience");
    assert_eq!(arguments[1].required, Some(false));

    let notes = client
        .get_prompt(
            GetPromptRequestParams::new("release-notes")
                .with_arguments(args(json!({ "version": "2.4.0" }))),
        )
        .await
        .unwrap();
    assert_eq!(notes.messages.len(), 1);
    assert_eq!(notes.messages[0].role, Role::User);
    assert_eq!(
        text_of(&notes.messages[0]),
        "Notes for 2.4.0, for developers.\n"
    );

    let checker = client
        .get_prompt(GetPromptRequestParams::new("checker"))
        .await
        .unwrap();
    assert_eq!(
        text_of(&checker.messages[0]),
        "Check the change against the style guide."
    );

    let look = client
        .get_prompt(GetPromptRequestParams::new("look"))
        .await
        .unwrap();
    let first = serde_json::to_value(&look.messages[0].content).unwrap();
    assert_eq!(
        first,
        json!({ "type": "image", "data": "AQID", "mimeType": "image/png" })
    );
    assert_eq!(look.messages[1].role, Role::Assistant);

    // A skill added while serving is listed at the next request.
    std::fs::create_dir_all(skills.path().join("haiku")).unwrap();
    std::fs::write(
        skills.path().join("haiku/SKILL.md"),
        "---\ndescription: Write a haiku.\n---\nWrite a haiku.\n",
    )
    .unwrap();
    let again = client.list_all_prompts().await.unwrap();
    assert!(again.iter().any(|p| p.name == "haiku"));
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_names_and_arguments_are_invalid_params() {
    let tools = AlephToolServer::new();
    let prompt = McpPrompt::new("greet", "Greet someone.", |args| {
        vec![PromptMessage::user(format!(
            "Hello, {}!",
            args.text("name")
        ))]
    })
    .with_argument("name", "Who to greet", true);
    // Named after the prompts were added: the capability stays declared.
    let client = connect(
        McpServer::new(&tools)
            .with_prompts(prompt)
            .with_name("greeter", "1.0.0")
            .with_instructions("Greets."),
    )
    .await;
    let info = client.peer_info().unwrap().clone();
    assert!(info.capabilities.prompts.is_some(), "{info:?}");
    assert_eq!(
        info.server_info.as_ref().map(|i| i.name.as_str()),
        Some("greeter")
    );
    assert_eq!(info.instructions.as_deref(), Some("Greets."));

    let cases = [
        (
            GetPromptRequestParams::new("gret"),
            "unknown prompt `gret`; did you mean `greet`?",
        ),
        (
            GetPromptRequestParams::new("greet"),
            "prompt `greet` needs argument `name` (Who to greet)",
        ),
        (
            GetPromptRequestParams::new("greet")
                .with_arguments(args(json!({ "name": "Ada", "mood": "glad" }))),
            "prompt `greet` has no argument `mood`; its arguments are: `name`",
        ),
        (
            GetPromptRequestParams::new("greet").with_arguments(args(json!({ "name": 7 }))),
            "argument `name` of prompt `greet` must be a string, not 7",
        ),
    ];
    for (request, message) in cases {
        let err = client.get_prompt(request).await.unwrap_err().to_string();
        assert!(err.contains(message), "{err}");
        assert!(err.contains("-32602"), "{err}");
    }
    // The session keeps serving after every refusal.
    let hello = client
        .get_prompt(
            GetPromptRequestParams::new("greet").with_arguments(args(json!({ "name": "Ada" }))),
        )
        .await
        .unwrap();
    assert_eq!(text_of(&hello.messages[0]), "Hello, Ada!");
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_without_prompts_does_not_declare_them() {
    let client = connect(McpServer::new(&AlephToolServer::new())).await;
    let capabilities = client.peer_info().unwrap().capabilities.clone();
    assert!(capabilities.prompts.is_none(), "{capabilities:?}");
    assert!(capabilities.tools.is_some());
    client.cancel().await.unwrap();
}
