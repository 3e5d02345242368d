//! `aleph-tools chat`, run as a built binary against a Chat Completions API on loopback that
//! answers as OpenAI documents (streams of `chat.completion.chunk` events), with the
//! built-in tools: the tool calls and results on standard error, the answer on standard
//! output, and the exact requests the API received.

use std::io::Write as _;
use std::process::{Command, Output, Stdio};

use aleph_tools_tests::model_api::{ModelApi, Reply};
use serde_json::{Value, json};

use crate::output::text;

fn chunk(delta: &Value, finish: Option<&str>) -> Value {
    json!({ "object": "chat.completion.chunk", "choices": [{ "index": 0, "delta": delta, "finish_reason": finish }] })
}

fn call(name: &str, id: &str, arguments: &str) -> Reply {
    Reply::stream([
        chunk(
            &json!({ "role": "assistant", "tool_calls": [{ "index": 0, "id": id, "type": "function", "function": { "name": name, "arguments": "" } }] }),
            None,
        ),
        chunk(
            &json!({ "tool_calls": [{ "index": 0, "function": { "arguments": arguments } }] }),
            None,
        ),
        chunk(&json!({}), Some("tool_calls")),
        json!("[DONE]"),
    ])
}

fn answer(pieces: &[&str]) -> Reply {
    let mut events: Vec<Value> = pieces
        .iter()
        .map(|piece| chunk(&json!({ "content": piece }), None))
        .collect();
    events.push(chunk(&json!({}), Some("stop")));
    events.push(json!("[DONE]"));
    Reply::stream(events)
}

fn chat(dir: &std::path::Path, api: &ModelApi, args: &[&str], stdin: Option<&str>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_aleph-tools"))
        .current_dir(dir)
        .env("HOME", dir)
        // The key goes to the base URL the environment names beside it.
        .env("OPENAI_API_KEY", "sk-loopback")
        .env("OPENAI_BASE_URL", format!("{}/v1", api.url))
        .env_remove("ALEPH_TOOLS_CONFIG")
        .env_remove("XDG_CONFIG_HOME")
        .args(["--builtin", "chat", "--model", "m"])
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    if let Some(text) = stdin {
        input.write_all(text.as_bytes()).unwrap();
    }
    drop(input);
    child.wait_with_output().unwrap()
}

#[test]
fn chat_runs_the_loop_with_the_builtin_tools() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "buy tea\n").unwrap();
    let api = runtime.block_on(ModelApi::start(vec![
        call("file_read", "call_1", r#"{"path":"nottes.txt"}"#),
        call("file_read", "call_2", r#"{"path":"notes.txt"}"#),
        answer(&["The note says: ", "buy tea."]),
    ]));
    let output = chat(
        dir.path(),
        &api,
        &["--system", "Be brief.", "What is in my notes?"],
        None,
    );
    let (out, err) = (text(&output.stdout), text(&output.stderr));
    assert!(output.status.success(), "{out}\n{err}");
    assert_eq!(out, "The note says: buy tea.\n");
    assert!(
        err.contains(r#"[file_read({"path":"nottes.txt"})] -> error:"#),
        "{err}"
    );
    assert!(
        err.contains(r#"[file_read({"path":"notes.txt"})] ->"#),
        "{err}"
    );

    let received = api.received();
    assert_eq!(received.len(), 3);
    assert_eq!(
        received[0].header("authorization"),
        Some("Bearer sk-loopback")
    );
    let first = &received[0].body;
    assert_eq!(first["model"], "m");
    assert_eq!(
        first["messages"],
        json!([{ "role": "system", "content": "Be brief." }, { "role": "user", "content": "What is in my notes?" }])
    );
    let names: Vec<&str> = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"file_read") && names.contains(&"bash"),
        "{names:?}"
    );
    let read = &received[2].body["messages"][5];
    assert_eq!(read["tool_call_id"], "call_2");
    assert!(
        read["content"].as_str().unwrap().contains("buy tea"),
        "{read}"
    );
}

#[test]
fn chat_reads_the_prompt_from_standard_input_and_reports_api_errors() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let api = runtime.block_on(ModelApi::start(vec![answer(&["Hi."])]));
    let output = chat(dir.path(), &api, &[], Some("Say hi.\n"));
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_eq!(text(&output.stdout), "Hi.\n");
    assert_eq!(api.bodies()[0]["messages"][0]["content"], "Say hi.\n");

    let empty = chat(dir.path(), &api, &[], Some("  \n"));
    assert!(!empty.status.success());
    assert!(
        text(&empty.stderr).contains("no prompt"),
        "{}",
        text(&empty.stderr)
    );

    let api = runtime.block_on(ModelApi::start(vec![Reply::status(
        401,
        json!({ "error": { "message": "Incorrect API key provided: sk-loop***back." } }),
    )]));
    let refused = chat(dir.path(), &api, &["hello"], None);
    assert!(!refused.status.success());
    let err = text(&refused.stderr);
    assert!(
        err.contains("answered 401: Incorrect API key provided"),
        "{err}"
    );
}

#[test]
fn chat_speaks_anthropic_when_asked() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let api = runtime.block_on(ModelApi::start(vec![Reply::stream([
        json!({ "type": "message_start", "message": { "id": "msg_1", "type": "message", "role": "assistant", "content": [], "usage": { "input_tokens": 5, "output_tokens": 1 } } }),
        json!({ "type": "content_block_start", "index": 0, "content_block": { "type": "text", "text": "" } }),
        json!({ "type": "content_block_delta", "index": 0, "delta": { "type": "text_delta", "text": "Bonjour." } }),
        json!({ "type": "content_block_stop", "index": 0 }),
        json!({ "type": "message_delta", "delta": { "stop_reason": "end_turn" }, "usage": { "output_tokens": 3 } }),
        json!({ "type": "message_stop" }),
    ])]));
    let output = Command::new(env!("CARGO_BIN_EXE_aleph-tools"))
        .current_dir(dir.path())
        .env("HOME", dir.path())
        .env("ANTHROPIC_API_KEY", "sk-ant-loopback")
        .env_remove("ALEPH_TOOLS_CONFIG")
        .env_remove("XDG_CONFIG_HOME")
        .args([
            "chat",
            "--provider",
            "anthropic",
            "--model",
            "claude-test",
            "--base-url",
        ])
        .arg(&api.url)
        .arg("Say hello in French.")
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_eq!(text(&output.stdout), "Bonjour.\n");
    let request = &api.received()[0];
    assert_eq!(request.path, "/v1/messages");
    // A base URL given on the command line gets no key from the environment.
    assert_eq!(request.header("x-api-key"), None);
    assert_eq!(
        request.body["messages"][0]["content"],
        "Say hello in French."
    );
}

#[test]
fn chat_with_code_mode_does_a_task_in_one_script_that_calls_three_tools() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("tea.txt"), "buy tea\nbrew tea\n").unwrap();
    std::fs::write(dir.path().join("cake.txt"), "bake cake\n").unwrap();
    let script = r"
        const listing = await tools.file_list({});
        const names = listing.entries.map((entry) => entry.path).sort();
        const tea = await tools.file_read({ path: 'tea.txt' });
        const hits = await tools.file_search({ query: 'tea' });
        console.log('listed', names.length, 'files');
        return { names, lines: tea.content.trim().split('\n').length, hits: hits.hits.length };
    ";
    let arguments = json!({ "code": script }).to_string();
    let api = runtime.block_on(ModelApi::start(vec![
        call("code", "call_1", &arguments),
        answer(&["Two files; tea comes up twice."]),
    ]));
    let output = chat(
        dir.path(),
        &api,
        &["--code-mode", "Summarize my notes."],
        None,
    );
    let (out, err) = (text(&output.stdout), text(&output.stderr));
    assert!(output.status.success(), "{out}\n{err}");
    assert_eq!(out, "Two files; tea comes up twice.\n");

    let received = api.received();
    assert_eq!(received.len(), 2, "one script, one round trip");
    let code = received[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|tool| tool["function"]["name"] == "code")
        .expect("`code` is offered");
    let description = code["function"]["description"].as_str().unwrap();
    for declared in [
        "file_read(args: {",
        "file_list(args?: {",
        "file_search(args?: {",
    ] {
        assert!(description.contains(declared), "{description}");
    }
    assert!(!description.contains("bash("), "{description}");
    let messages = &received[1].body["messages"];
    let result = messages[2]["content"]
        .as_str()
        .unwrap_or_else(|| panic!("{messages}"));
    assert!(result.contains("listed 2 files"), "{result}");
    assert!(
        result.contains(r#"{"hits":2,"lines":2,"names":["cake.txt","tea.txt"]}"#),
        "{result}"
    );
}

#[test]
fn chat_with_deferred_tools_finds_one_and_calls_it_in_the_next_round() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("tea.txt"), "buy tea\n").unwrap();
    let search = json!({ "query": "read a file's text" }).to_string();
    let read = json!({ "path": "tea.txt" }).to_string();
    let api = runtime.block_on(ModelApi::start(vec![
        call("tool_search", "call_1", &search),
        call("file_read", "call_2", &read),
        answer(&["Buy tea."]),
    ]));
    let output = chat(
        dir.path(),
        &api,
        &["--defer", "file_*", "What is in tea.txt?"],
        None,
    );
    let (out, err) = (text(&output.stdout), text(&output.stderr));
    assert!(output.status.success(), "{out}\n{err}");
    assert_eq!(out, "Buy tea.\n");

    let offered = |round: usize| -> Vec<String> {
        api.received()[round].body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|tool| tool["function"]["name"].as_str().unwrap().to_owned())
            .collect()
    };
    let first = offered(0);
    assert!(first.contains(&"tool_search".to_owned()), "{first:?}");
    assert!(
        !first.iter().any(|name| name.starts_with("file_")),
        "{first:?}"
    );
    let second = offered(1);
    assert!(second.contains(&"file_read".to_owned()), "{second:?}");
    let messages = &api.received()[2].body["messages"];
    assert!(
        messages[4]["content"].as_str().unwrap().contains("buy tea"),
        "{messages}"
    );
}
