//! Tool search with deferred loading, through the server: deferred tools stay out of every
//! tools array (Anthropic's marks them), a search finds them by keywords, by pattern or by
//! meaning, `call_tool` runs them through the pipeline, and the agent loop adds found tools
//! to the next round (with Anthropic's API, a search answers with `tool_reference` blocks).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use aleph_tools::Identity;
use aleph_tools::agent::clients::Anthropic;
use aleph_tools::agent::{Agent, ChatModel, Conversation, ModelError, ModelRequest, ModelTurn};
use aleph_tools::builtin::{EmbedError, ToolSearch};
use aleph_tools::middleware::Permission;
use aleph_tools::prelude::*;
use aleph_tools::provider::Provider;
use aleph_tools::{BoxFuture, Content, RuntimeTool, ToolDefinition, ToolFilter};
use aleph_tools_tests::model_api::{ModelApi, Reply};
use serde_json::{Value, json};

/// Get the current time in a time zone.
#[tool(register = false, defer_loading, read_only)]
fn get_current_time(
    /// An IANA time zone, such as `Asia/Tokyo`
    timezone: String,
) -> String {
    format!("12:00 in {timezone}")
}

/// Send a message to a chat channel.
#[tool(register = false)]
fn send_message(
    /// The channel's name
    channel: String,
    /// What to say
    text: String,
) -> String {
    format!("sent to #{channel}: {text}")
}

/// Create an issue in a repository.
#[tool(register = false)]
fn create_issue(
    /// The repository, as `owner/name`
    repo: String,
    /// The issue's title
    title: String,
) -> String {
    format!("{repo}#1 {title}")
}

/// Add two integers.
#[tool(register = false)]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

fn builder(search: ToolSearch) -> aleph_tools::ToolServerBuilder {
    AlephToolServer::builder()
        .with_tool(GetCurrentTimeTool)
        .with_tool(SendMessageTool)
        .with_tool(CreateIssueTool)
        .with_tool(AddTool)
        .with_builtin(search)
}

fn server() -> AlephToolServer {
    builder(ToolSearch::new().defer(["send_*", "create_*"]))
        .build()
        .unwrap()
}

/// The names in an OpenAI chat tools array.
fn names(tools: &Value) -> Vec<String> {
    tools
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["function"]["name"].as_str().unwrap().to_owned())
        .collect()
}

async fn search(server: &AlephToolServer, args: Value) -> ToolResult {
    server.call("tool_search", args).await
}

/// The names a search found, best first.
fn found_names(result: &ToolResult) -> Vec<String> {
    assert!(result.success, "{:?}", result.error);
    result.output["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn deferred_tools_wait_for_a_search_in_every_tools_array() {
    let server = server();
    let loaded = ["add", "call_tool", "tool_search"];
    assert_eq!(
        names(&server.tools().for_provider(Provider::OpenAiChat)),
        loaded
    );
    let gemini = server.tools().for_provider(Provider::Gemini);
    let declared: Vec<&str> = gemini[0]["functionDeclarations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["name"].as_str().unwrap())
        .collect();
    assert_eq!(declared, loaded);
    let mcp = server.tools().for_provider(Provider::Mcp);
    assert_eq!(mcp.as_array().unwrap().len(), 3);

    // Anthropic's array holds them all, the deferred ones marked: its API hides them.
    let anthropic = server.tools().for_provider(Provider::Anthropic);
    let marked: Vec<&str> = anthropic
        .as_array()
        .unwrap()
        .iter()
        .filter(|tool| tool["defer_loading"] == json!(true))
        .map(|tool| tool["name"].as_str().unwrap())
        .collect();
    assert_eq!(marked, ["create_issue", "get_current_time", "send_message"]);

    // The server still serves them all, and says which wait.
    let deferred: Vec<String> = server
        .tools()
        .definitions()
        .iter()
        .filter(|d| d.defer_loading)
        .map(|d| d.name.clone())
        .collect();
    assert_eq!(
        deferred,
        ["create_issue", "get_current_time", "send_message"]
    );
    let direct = server
        .call("create_issue", json!({ "repo": "a/b", "title": "t" }))
        .await;
    assert!(direct.success, "deferral never refuses a call");
}

#[tokio::test]
async fn without_a_tool_search_nothing_is_deferred() {
    let server = AlephToolServer::builder()
        .with_tool(GetCurrentTimeTool)
        .build()
        .unwrap();
    assert_eq!(
        names(&server.tools().for_provider(Provider::OpenAiChat)),
        ["get_current_time"]
    );
    assert!(
        !server
            .tools()
            .get("get_current_time")
            .unwrap()
            .defer_loading
    );
}

#[tokio::test]
async fn a_search_finds_tools_by_keywords_with_their_schemas() {
    let server = server();
    let result = search(&server, json!({ "query": "post a message in a channel" })).await;
    assert_eq!(found_names(&result)[0], "send_message");
    let first = &result.output["tools"][0];
    assert_eq!(first["description"], "Send a message to a chat channel.");
    assert_eq!(
        first["input_schema"]["properties"]["channel"]["description"],
        "The channel's name"
    );
    let references: Vec<&str> = result
        .content
        .iter()
        .filter_map(|block| match block {
            Content::ToolReference(reference) => Some(reference.tool_name.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(references, found_names(&result));
    assert!(result.model_text().contains("\"channel\""));

    let time = search(&server, json!({ "query": "current time in Tokyo" })).await;
    assert_eq!(found_names(&time)[0], "get_current_time");
    // Parameter docs count: only `repo`'s description says "owner".
    let owner = search(&server, json!({ "query": "owner" })).await;
    assert_eq!(found_names(&owner), ["create_issue"]);
    let one = search(
        &server,
        json!({ "query": "issue message time", "limit": 1 }),
    )
    .await;
    assert_eq!(found_names(&one).len(), 1);
    let none = search(&server, json!({ "query": "zebra" })).await;
    assert!(found_names(&none).is_empty());
    assert!(none.model_text().contains("No tool matched"));
    // Loaded tools are not searched: they are in the tools array already.
    let loaded = search(&server, json!({ "query": "add two integers" })).await;
    assert!(!found_names(&loaded).contains(&"add".to_owned()));
}

#[tokio::test]
async fn a_pattern_search_and_bad_search_arguments() {
    let server = server();
    let created = search(&server, json!({ "pattern": "^create_" })).await;
    assert_eq!(found_names(&created), ["create_issue"]);
    let either = search(&server, json!({ "pattern": "CHANNEL|zone" })).await;
    assert_eq!(found_names(&either), ["get_current_time", "send_message"]);

    for (args, expected) in [
        (json!({ "pattern": "(" }), "/pattern"),
        (json!({ "pattern": "a".repeat(600) }), "at most 512 bytes"),
        (json!({ "pattern": "a{1000}{1000}" }), "/pattern"),
        (json!({ "query": "time", "pattern": "time" }), "not both"),
        (json!({}), "/query"),
        (json!({ "query": "   " }), "/query"),
        (json!({ "query": "time", "limit": 100 }), "/limit"),
        (json!({ "query": "", "pattern": "(" }), "/pattern"),
        (json!({ "query": 7 }), "/query"),
    ] {
        let result = search(&server, args.clone()).await;
        assert!(!result.success, "{args} was taken");
        let error = result.error.unwrap();
        assert!(error.contains(expected), "{args}: {error}");
    }
}

#[tokio::test]
async fn a_search_finds_only_what_the_caller_is_offered() {
    let server = builder(ToolSearch::new().defer(["send_*", "create_*"]))
        .with_filter(ToolFilter::new().block("create_*"))
        .with_middleware(Permission::new().require("chat:write", ["send_*"]).unwrap())
        .build()
        .unwrap();
    let guest = ToolContext::new();
    let writer = ToolContext::new().with_identity(Identity::new("ana").with_scopes(["chat:write"]));
    let query = json!({ "query": "send a message to a channel" });
    let as_guest = server
        .call("tool_search", query.clone())
        .context(guest)
        .await;
    assert!(!found_names(&as_guest).contains(&"send_message".to_owned()));
    let as_writer = server.call("tool_search", query).context(writer).await;
    assert_eq!(found_names(&as_writer)[0], "send_message");
    let blocked = search(&server, json!({ "pattern": "issue" })).await;
    assert!(
        found_names(&blocked).is_empty(),
        "the filter blocks create_issue"
    );
}

#[tokio::test]
async fn call_tool_runs_a_found_tool_through_the_pipeline() {
    let server = server();
    let call = |name: &str, arguments: Value| {
        let server = server.clone();
        let args = json!({ "name": name, "arguments": arguments });
        async move { server.call("call_tool", args).await }
    };
    let sent = call(
        "send_message",
        json!({ "channel": "general", "text": "hi" }),
    )
    .await;
    assert!(sent.success, "{:?}", sent.error);
    assert_eq!(sent.output, json!("sent to #general: hi"));

    let wrong = call("send_message", json!({ "channel": 5, "text": "hi" })).await;
    assert!(!wrong.success);
    assert!(wrong.error.as_deref().unwrap().contains("/channel"));
    for itself in ["call_tool", "CallTool", "call-tool"] {
        let refused = call(itself, json!({ "name": "add" })).await;
        assert!(!refused.success);
        assert!(refused.error.unwrap().contains("not `call_tool` itself"));
    }
    let unknown = call("send_mesage", json!({})).await;
    assert!(!unknown.success);
    assert!(
        unknown.error.unwrap().contains("send_message"),
        "suggests the closest name"
    );
    let no_arguments = server.call("call_tool", json!({ "name": "add" })).await;
    assert!(no_arguments.error.unwrap().contains("/a"));
}

#[tokio::test]
async fn tools_added_later_are_deferred_and_found() {
    let server = server();
    let fax = ToolDefinition::new(
        "send_fax",
        "Send a fax to a number.",
        json!({ "type": "object", "properties": { "number": { "type": "string" } } }),
    );
    server
        .add(RuntimeTool::new(
            fax,
            |_args: Value, _ctx: ToolContext| async { Ok(ToolOutput::text("faxed")) },
        ))
        .unwrap();
    assert!(
        !names(&server.tools().for_provider(Provider::OpenAiChat)).contains(&"send_fax".to_owned())
    );
    let result = search(&server, json!({ "query": "fax" })).await;
    assert_eq!(found_names(&result), ["send_fax"]);
    server.remove("send_fax");
    let gone = search(&server, json!({ "query": "fax" })).await;
    assert!(found_names(&gone).is_empty());
}

/// A model that plays back OpenAI chat completions and keeps the tool names it was offered.
struct Scripted {
    replies: Mutex<Vec<Value>>,
    offered: Mutex<Vec<Vec<String>>>,
}

impl Scripted {
    fn new(mut replies: Vec<Value>) -> Self {
        replies.reverse();
        Self {
            replies: Mutex::new(replies),
            offered: Mutex::new(Vec::new()),
        }
    }
}

impl ChatModel for Scripted {
    fn provider(&self) -> Provider {
        Provider::OpenAiChat
    }

    fn respond<'a>(
        &'a self,
        request: ModelRequest<'a>,
    ) -> BoxFuture<'a, Result<ModelTurn, ModelError>> {
        self.offered.lock().unwrap().push(names(request.tools));
        let reply = self
            .replies
            .lock()
            .unwrap()
            .pop()
            .expect("a scripted reply");
        Box::pin(async move {
            Ok(ModelTurn::from_response(Provider::OpenAiChat, &reply).expect("a completion"))
        })
    }
}

fn completion(message: &Value) -> Value {
    json!({ "choices": [{ "index": 0, "finish_reason": "stop", "message": message }] })
}

fn tool_call(id: &str, name: &str, arguments: &Value) -> Value {
    completion(
        &json!({ "role": "assistant", "content": null, "tool_calls": [{
        "id": id, "type": "function",
        "function": { "name": name, "arguments": arguments.to_string() }
    }] }),
    )
}

#[tokio::test]
async fn the_agent_loop_adds_found_tools_to_the_next_round() {
    let server = server();
    let model = Scripted::new(vec![
        tool_call("c1", "tool_search", &json!({ "query": "time zone" })),
        tool_call(
            "c2",
            "get_current_time",
            &json!({ "timezone": "Asia/Tokyo" }),
        ),
        completion(&json!({ "role": "assistant", "content": "It is noon in Tokyo." })),
    ]);
    let mut conversation = Conversation::new(Provider::OpenAiChat);
    conversation.push_user("What time is it in Tokyo?");
    let outcome = Agent::new()
        .run(&server, &model, &mut conversation)
        .await
        .unwrap();
    assert_eq!(outcome.text, "It is noon in Tokyo.");
    let offered = model.offered.lock().unwrap().clone();
    assert_eq!(offered[0], ["add", "call_tool", "tool_search"]);
    assert_eq!(
        offered[1],
        ["add", "call_tool", "get_current_time", "tool_search"]
    );
    assert_eq!(
        offered[2], offered[1],
        "found tools stay for the rest of the run"
    );
    let answer = &conversation.messages()[4];
    assert_eq!(answer["content"], "12:00 in Asia/Tokyo");
}

#[tokio::test]
async fn anthropic_loads_deferred_tools_from_tool_references() {
    let search_call = json!({ "type": "tool_use", "id": "toolu_1", "name": "tool_search",
        "input": { "query": "time zone" } });
    let time_call = json!({ "type": "tool_use", "id": "toolu_2", "name": "get_current_time",
        "input": { "timezone": "Asia/Tokyo" } });
    let message = |content: Value, stop: &str| {
        Reply::ok(
            json!({ "id": "msg_1", "type": "message", "role": "assistant",
            "model": "claude-test", "content": content, "stop_reason": stop,
            "usage": { "input_tokens": 10, "output_tokens": 5 } }),
        )
    };
    let api = ModelApi::start(vec![
        message(json!([search_call]), "tool_use"),
        message(json!([time_call]), "tool_use"),
        message(json!([{ "type": "text", "text": "Noon." }]), "end_turn"),
    ])
    .await;
    let model = Anthropic::new("claude-test")
        .base_url(&api.url)
        .api_key("sk-ant-test")
        .streaming(false)
        .backoff(Duration::from_millis(20));
    let server = server();
    let mut conversation = Conversation::new(Provider::Anthropic);
    conversation.push_user("What time is it in Tokyo?");
    let outcome = Agent::new()
        .run(&server, &model, &mut conversation)
        .await
        .unwrap();
    assert_eq!(outcome.text, "Noon.");

    let bodies = api.bodies();
    let tools = server.tools().for_provider(Provider::Anthropic);
    for body in &bodies {
        assert_eq!(
            body["tools"], *tools,
            "the same array every round keeps the cache"
        );
    }
    let answer = &bodies[1]["messages"][2]["content"][0];
    assert_eq!(answer["type"], "tool_result");
    assert_eq!(
        answer["content"],
        json!([{ "type": "tool_reference", "tool_name": "get_current_time" }])
    );
    let noon = &bodies[2]["messages"][4]["content"][0];
    assert_eq!(noon["content"], "12:00 in Asia/Tokyo");
    for request in api.received() {
        assert_eq!(
            request.header("anthropic-beta"),
            Some("advanced-tool-use-2025-11-20")
        );
    }
}

/// An embedder that knows two meanings: time, and talk.
#[expect(clippy::unnecessary_wraps, reason = "an embedder's signature")]
fn concepts(texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
    Ok(texts
        .iter()
        .map(|text| {
            let text = text.to_lowercase();
            let has = |words: &[&str]| f32::from(u8::from(words.iter().any(|w| text.contains(w))));
            vec![
                has(&["time", "hour", "clock"]),
                has(&["message", "chat", "tell", "say"]),
                0.1,
            ]
        })
        .collect())
}

#[tokio::test]
async fn an_embedder_finds_tools_that_share_no_word_with_the_query() {
    let keywords = server();
    let query = json!({ "query": "which hour is it over in Japan" });
    assert!(found_names(&search(&keywords, query.clone()).await).is_empty());

    let meaning = builder(
        ToolSearch::new()
            .defer(["send_*", "create_*"])
            .embedder(concepts),
    )
    .build()
    .unwrap();
    assert_eq!(
        found_names(&search(&meaning, query).await)[0],
        "get_current_time"
    );
    let tell = search(&meaning, json!({ "query": "tell the team" })).await;
    assert_eq!(found_names(&tell)[0], "send_message");

    // An embedder that fails leaves keyword search working.
    let broken = builder(
        ToolSearch::new()
            .defer(["send_*"])
            .embedder(|_: &[&str]| Err(EmbedError("the model is not there".into()))),
    )
    .build()
    .unwrap();
    let result = search(&broken, json!({ "query": "message" })).await;
    assert_eq!(found_names(&result), ["send_message"]);
}

#[tokio::test]
async fn a_thousand_deferred_tools_cost_the_model_two() {
    let build = |search: Option<ToolSearch>| {
        let mut builder = AlephToolServer::builder();
        for i in 0..1000 {
            let definition = ToolDefinition::new(
                format!("tool_{i:04}"),
                format!("Tool number {i}: does one thing with a record of kind {i}."),
                json!({ "type": "object", "properties": {
                    "id": { "type": "string", "description": "The record's id" },
                    "limit": { "type": "integer", "description": "How many to return" }
                } }),
            );
            builder = builder.with_dyn_tool(Arc::new(RuntimeTool::new(
                definition,
                |_args: Value, _ctx: ToolContext| async { Ok(ToolOutput::text("ok")) },
            )));
        }
        if let Some(search) = search {
            builder = builder.with_builtin(search);
        }
        builder.build().unwrap()
    };
    let all = build(None);
    let deferred = build(Some(ToolSearch::new().defer(["tool_*"])));
    for provider in [Provider::OpenAiChat, Provider::Gemini, Provider::Mcp] {
        let before = all
            .tools()
            .sizes()
            .into_iter()
            .find(|s| s.provider == provider)
            .unwrap();
        let after = deferred
            .tools()
            .sizes()
            .into_iter()
            .find(|s| s.provider == provider)
            .unwrap();
        assert_eq!(before.tools, 1000);
        assert_eq!(after.tools, 2);
        assert!(
            after.bytes * 100 < before.bytes,
            "{provider:?}: {after:?} vs {before:?}"
        );
    }
    let result = deferred
        .call("tool_search", json!({ "query": "record kind 517" }))
        .await;
    assert_eq!(found_names(&result)[0], "tool_0517");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrapped_mcp_server_is_deferred_whole() {
    use aleph_tools::mcp::{McpConnection, McpEndpoint};

    let server = AlephToolServer::builder()
        .with_tool(AddTool)
        .with_builtin(ToolSearch::new())
        .build()
        .unwrap();
    let peers = aleph_tools_tests::interop_peers();
    let everything = McpEndpoint::command("node")
        .arg(
            peers
                .join("node_modules/@modelcontextprotocol/server-everything/dist/index.js")
                .display()
                .to_string(),
        )
        .arg("stdio");
    let connection = McpConnection::builder(everything)
        .prefix("everything")
        .defer_loading(true)
        .connect(&server)
        .await
        .expect("connect to server-everything");
    assert!(connection.tools().len() > 5);
    assert_eq!(
        names(&server.tools().for_provider(Provider::OpenAiChat)),
        ["add", "call_tool", "tool_search"]
    );
    let found = search(&server, json!({ "query": "sum of two numbers" })).await;
    assert_eq!(found_names(&found)[0], "everything_get-sum");
    let sum = server
        .call(
            "call_tool",
            json!({ "name": "everything_get-sum", "arguments": { "a": 2, "b": 3 } }),
        )
        .await;
    assert!(sum.model_text().contains('5'), "{sum:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_plugin_defers_all_its_tools_or_one() {
    use aleph_tools::plugin::{PluginManager, PluginsConfig};

    let manifest = |id: &str, whole: bool| {
        format!(
            "[plugin]\nid = \"{id}\"\nversion = \"1.0.0\"\nkind = \"nodejs\"\nentry = \"index.js\"\n\
             defer_loading = {whole}\n\n\
             [[tools]]\nname = \"{id}_shout\"\ndescription = \"Shout a word.\"\nhandler = \"shout\"\n\n\
             [[tools]]\nname = \"{id}_whisper\"\ndescription = \"Whisper a word.\"\nhandler = \"whisper\"\n\
             defer_loading = true\n"
        )
    };
    let source = r#"
const { createServer } = require("@aleph/plugin-sdk");
createServer({
  name: "voices",
  tools: {
    shout: ({ word }) => String(word).toUpperCase(),
    whisper: ({ word }) => String(word).toLowerCase(),
  },
}).start();
"#;
    let root = tempfile::tempdir().unwrap();
    aleph_tools_tests::node_plugin(root.path(), "loud", &manifest("loud", false), source);
    aleph_tools_tests::node_plugin(root.path(), "quiet", &manifest("quiet", true), source);
    let server = AlephToolServer::builder()
        .with_builtin(ToolSearch::new())
        .build()
        .unwrap();
    let manager = PluginManager::new(&server, PluginsConfig::with_search_paths([root.path()]));
    let report = tokio::task::spawn_blocking(move || manager.load_all())
        .await
        .unwrap();
    assert!(report.failed.is_empty(), "{:?}", report.failed);
    assert_eq!(
        names(&server.tools().for_provider(Provider::OpenAiChat)),
        ["call_tool", "loud_shout", "tool_search"]
    );
    let found = search(&server, json!({ "query": "whisper" })).await;
    assert_eq!(found_names(&found), ["loud_whisper", "quiet_whisper"]);
    let called = server
        .call(
            "call_tool",
            json!({ "name": "quiet_shout", "arguments": { "word": "hey" } }),
        )
        .await;
    assert_eq!(called.output, json!("HEY"), "{called:?}");
}

#[tokio::test]
async fn an_empty_query_beside_a_pattern_counts_as_absent() {
    let server = server();
    let found = search(&server, json!({ "query": " ", "pattern": "^create_" })).await;
    assert_eq!(found_names(&found), ["create_issue"]);
}

#[tokio::test]
async fn code_mode_does_not_declare_deferred_tools() {
    use aleph_tools::builtin::CodeMode;

    let server = builder(ToolSearch::new().defer(["send_*"]))
        .with_builtin(CodeMode::new().open(["send_message", "create_issue"]))
        .build()
        .unwrap();
    let code = server.tools().get("code").unwrap();
    assert!(
        !code.description.contains("send_message("),
        "{}",
        code.description
    );
    let undeferred = builder(ToolSearch::new())
        .with_builtin(CodeMode::new().open(["send_message"]))
        .build()
        .unwrap();
    let code = undeferred.tools().get("code").unwrap();
    assert!(
        code.description.contains("send_message("),
        "{}",
        code.description
    );
}

#[tokio::test]
async fn a_tool_anthropic_cannot_take_is_found_but_not_referenced() {
    let server = server();
    // A root `anyOf` is a schema Anthropic's API refuses; the tool is served, deferred.
    let odd = ToolDefinition::new(
        "send_either",
        "Send one of two things.",
        json!({ "type": "object", "anyOf": [{ "required": ["a"] }, { "required": ["b"] }],
                "properties": { "a": { "type": "string" }, "b": { "type": "string" } } }),
    );
    server
        .add(RuntimeTool::new(
            odd,
            |_args: Value, _ctx: ToolContext| async { Ok(ToolOutput::text("sent")) },
        ))
        .unwrap();
    let anthropic = server.tools().for_provider(Provider::Anthropic);
    let listed = anthropic
        .as_array()
        .unwrap()
        .iter()
        .any(|tool| tool["name"] == "send_either");
    assert!(!listed, "Anthropic's array leaves the tool out");
    let result = search(&server, json!({ "pattern": "^send_either$" })).await;
    assert_eq!(found_names(&result), ["send_either"]);
    let referenced = result
        .content
        .iter()
        .any(|block| matches!(block, Content::ToolReference(_)));
    assert_eq!(
        referenced, listed,
        "a reference names only a tool the array holds"
    );
}
