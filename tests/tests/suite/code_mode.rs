//! Code mode through the server, with real `node` and `python3` in the sandbox: a script
//! calls several tools and returns what it computed, each call goes through the pipeline as
//! code's call, the description carries the typed API, and bad scripts get clear errors.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use aleph_tools::builtin::CodeMode;
use aleph_tools::prelude::*;
use aleph_tools::{ProgressEvent, ToolCallRequest};
use serde::Serialize;
use serde_json::{Value, json};

/// An item of the shop's catalogue.
#[derive(Serialize, schemars::JsonSchema)]
pub struct Item {
    /// Its name
    pub name: String,
    /// Its price in cents
    pub price: u64,
}

/// Look up an item of the catalogue by its number.
#[tool(register = false, callers = [human, code_execution], read_only)]
fn get_item(
    /// The item's number, from 1
    id: u64,
    calls: State<Counter>,
) -> Result<Item, String> {
    calls.0.fetch_add(1, Ordering::SeqCst);
    if id == 0 {
        return Err("item numbers start at 1".to_owned());
    }
    Ok(Item {
        name: format!("item {id}"),
        price: id * 100,
    })
}

/// Say who is calling.
#[tool(register = false, callers = [human, code_execution])]
fn whoami(ctx: &ToolContext) -> String {
    format!("{:?}", ctx.caller())
}

/// Reveal a secret: only the model in conversation may call this.
#[tool(register = false)]
fn secret(calls: State<Counter>) -> String {
    calls.0.fetch_add(1, Ordering::SeqCst);
    "the secret".to_owned()
}

/// Shout a word back.
#[tool(register = false)]
fn shout(word: String) -> String {
    word.to_uppercase()
}

#[derive(Default, Clone)]
pub struct Counter(Arc<AtomicUsize>);

fn server(mode: CodeMode) -> (AlephToolServer, Counter) {
    let counter = Counter::default();
    let server = AlephToolServer::builder()
        .with_tool(GetItemTool)
        .with_tool(WhoamiTool)
        .with_tool(SecretTool)
        .with_tool(ShoutTool)
        .with_state(counter.clone())
        .with_builtin(mode)
        .build()
        .unwrap();
    (server, counter)
}

async fn code(server: &AlephToolServer, args: Value) -> ToolResult {
    server.call("code", args).await
}

#[tokio::test]
async fn a_script_calls_tools_and_returns_what_it_computed() {
    let (server, counter) = server(CodeMode::new());
    let result = code(
        &server,
        json!({ "code": r"
            const items = await Promise.all([1, 2, 3].map((id) => tools.get_item({ id })));
            console.log('fetched', items.length);
            const who = await tools.whoami({});
            return { total: items.reduce((sum, item) => sum + item.price, 0), who };
        " }),
    )
    .await;
    assert!(result.success, "{:?}", result.error);
    assert_eq!(
        result.output["value"],
        json!({ "total": 600, "who": "CodeExecution" })
    );
    assert_eq!(result.output["output"], "fetched 3\n");
    assert_eq!(result.output["tool_calls"], 4);
    assert_eq!(counter.0.load(Ordering::SeqCst), 3);
    let text = result.model_text();
    assert!(text.contains("fetched 3"), "{text}");
    assert!(
        text.contains(r#"{"total":600,"who":"CodeExecution"}"#),
        "{text}"
    );
}

#[tokio::test]
async fn python_scripts_call_tools_with_keyword_arguments() {
    let (server, _) = server(CodeMode::new());
    let result = code(
        &server,
        json!({ "language": "python", "code": "
items = await asyncio.gather(*(tools.get_item(id=i) for i in range(1, 4)))
print('fetched', len(items))
first = await tools.get_item({'id': 1})
return {'total': sum(item['price'] for item in items), 'first': first['name']}
" }),
    )
    .await;
    assert!(result.success, "{:?}", result.error);
    assert_eq!(
        result.output["value"],
        json!({ "total": 600, "first": "item 1" })
    );
    assert_eq!(result.output["output"], "fetched 3\n");
}

#[tokio::test]
async fn the_description_declares_the_tools_open_to_code_and_nothing_else() {
    let (server, _) = server(CodeMode::new());
    let description = server.tools().get("code").unwrap().description.clone();
    assert!(
        description.contains("/** Look up an item of the catalogue by its number. */"),
        "{description}"
    );
    assert!(description.contains("get_item(args: {"), "{description}");
    assert!(
        description.contains("/** The item's number, from 1 */"),
        "{description}"
    );
    assert!(description.contains("id: number;"), "{description}");
    assert!(description.contains("price: number;"), "{description}");
    assert!(
        description.contains("whoami(args?: {}): Promise<string>;"),
        "{description}"
    );
    assert!(!description.contains("secret"), "{description}");
    assert!(!description.contains("shout"), "{description}");
}

#[tokio::test]
async fn the_description_follows_the_tools_and_the_filter() {
    let (server, _) = server(CodeMode::new());
    server
        .set_filter(ToolFilter::new().block("get_item"))
        .unwrap();
    let description = server.tools().get("code").unwrap().description.clone();
    assert!(!description.contains("get_item"), "{description}");
    server.set_filter(ToolFilter::new()).unwrap();
    server.remove("whoami");
    let description = server.tools().get("code").unwrap().description.clone();
    assert!(description.contains("get_item"), "{description}");
    assert!(!description.contains("whoami"), "{description}");
}

#[tokio::test]
async fn tools_opened_by_the_application_join_the_api() {
    let (server, _) = server(CodeMode::new().open(["sho*"]));
    assert!(
        server
            .tools()
            .get("shout")
            .unwrap()
            .allows_caller(Caller::CodeExecution)
    );
    assert!(
        server
            .tools()
            .get("shout")
            .unwrap()
            .allows_caller(Caller::Human)
    );
    let description = server.tools().get("code").unwrap().description.clone();
    assert!(description.contains("shout(args: {"), "{description}");
    let result = code(
        &server,
        json!({ "code": "return await tools.shout({ word: 'hi' })" }),
    )
    .await;
    assert_eq!(result.output["value"], "HI", "{:?}", result.error);
}

#[tokio::test]
async fn a_tool_not_open_to_code_is_refused_by_name_and_by_a_forged_line() {
    let (server, counter) = server(CodeMode::new());
    let result = code(
        &server,
        json!({ "code": "try { await tools.secret({}) } catch (e) { return e.message }" }),
    )
    .await;
    let message = result.output["value"].as_str().unwrap();
    assert!(
        message.contains("`secret` is not a tool this script may call"),
        "{message}"
    );
    assert!(message.contains("get_item, whoami"), "{message}");
    // A line written straight to the protocol's pipe is read as untrusted as any other.
    let result = code(
        &server,
        json!({ "code": r"
            require('fs').writeSync(1, JSON.stringify({ t: 'call', id: 999, tool: 'secret', args: {} }) + '\n');
            await new Promise((resolve) => setTimeout(resolve, 300));
            return 'sent';
        " }),
    )
    .await;
    assert!(result.success, "{:?}", result.error);
    assert_eq!(
        counter.0.load(Ordering::SeqCst),
        0,
        "the secret tool never ran"
    );
}

#[tokio::test]
async fn a_failed_tool_call_throws_a_tool_error_the_script_can_catch() {
    let (server, _) = server(CodeMode::new());
    let result = code(
        &server,
        json!({ "code": r"
            try { await tools.get_item({ id: 0 }) } catch (e) { console.log(e.name, e.tool, e.message) }
            try { await tools.get_item({ id: 'one' }) } catch (e) { console.log(e.message) }
            return 'done';
        " }),
    )
    .await;
    let output = result.output["output"].as_str().unwrap();
    assert!(
        output.contains("ToolError get_item item numbers start at 1"),
        "{output}"
    );
    assert!(
        output.contains("`/id`: expected an integer"),
        "the server's argument check answers: {output}"
    );
}

#[tokio::test]
async fn an_error_names_the_line_it_happened_on() {
    let (server, _) = server(CodeMode::new());
    let result = code(
        &server,
        json!({ "code": "const a = 1;\nconst b = 2;\nnull.boom;\n" }),
    )
    .await;
    assert!(!result.success);
    let error = result.error.unwrap();
    assert!(
        error.contains("the script failed at line 3: TypeError"),
        "{error}"
    );
    let result = code(&server, json!({ "code": "const a = 1;\nlet = = 2;\n" })).await;
    let error = result.error.unwrap();
    assert!(error.contains("at line 2: SyntaxError"), "{error}");
    let result = code(
        &server,
        json!({ "language": "python", "code": "x = 1\nraise ValueError('nope')\n" }),
    )
    .await;
    let error = result.error.unwrap();
    assert!(error.contains("at line 2: ValueError: nope"), "{error}");
    let result = code(&server, json!({ "language": "python", "code": "x = (\n" })).await;
    let error = result.error.unwrap();
    assert!(error.contains("SyntaxError"), "{error}");
}

#[tokio::test]
async fn what_the_script_prints_streams_as_progress() {
    let (server, _) = server(CodeMode::new());
    let events = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = Arc::clone(&events);
    let ctx = ToolContext::new().with_progress(move |_tool: &str, event: ProgressEvent| {
        seen.lock().unwrap().push(event);
    });
    let request: ToolCallRequest<'_> = server.call(
        "code",
        json!({ "code": "console.log('one'); await tools.whoami({}); console.log('two')" }),
    );
    let result = request.context(ctx).await;
    assert!(result.success, "{:?}", result.error);
    let events = events.lock().unwrap();
    let chunks: String = events
        .iter()
        .filter_map(|event| match event {
            ProgressEvent::Chunk { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(chunks, "one\ntwo\n");
    assert!(events.iter().any(|event| matches!(
        event,
        ProgressEvent::Progress { message: Some(message), .. } if message == "calling whoami"
    )));
}

#[tokio::test]
async fn code_is_never_open_to_code_even_when_every_tool_is_opened() {
    let (server, _) = server(CodeMode::new().open(["*"]));
    assert!(
        !server
            .tools()
            .get("code")
            .unwrap()
            .allows_caller(Caller::CodeExecution)
    );
    assert!(
        server
            .tools()
            .get("shout")
            .unwrap()
            .allows_caller(Caller::CodeExecution)
    );
    let result = code(
        &server,
        json!({ "code": "try { await tools.code({ code: 'return 1' }) } catch (e) { return e.message }" }),
    )
    .await;
    let message = result.output["value"].as_str().unwrap_or_default();
    assert!(
        message.contains("`code` is not a tool this script may call"),
        "{result:?}"
    );
    // Called as code's call from outside a script, it refuses too.
    let nested = server
        .call("code", json!({ "code": "return 1" }))
        .context(ToolContext::new().with_caller(Caller::CodeExecution))
        .await;
    assert!(!nested.success);
}

#[tokio::test]
async fn values_the_host_cannot_read_fail_clearly_and_at_once() {
    let (server, _) = server(CodeMode::new());
    // Half of a character is sent as U+FFFD rather than breaking the line.
    let result = code(&server, json!({ "code": "return '\u{1F600}x'.slice(1)" })).await;
    assert_eq!(result.output["value"], "\u{FFFD}x", "{:?}", result.error);
    // `null` is a value; nothing is not.
    let result = code(&server, json!({ "code": "return null" })).await;
    assert_eq!(result.output["value"], Value::Null);
    assert!(
        result.model_text().contains("--- returned ---\nnull"),
        "{}",
        result.model_text()
    );
    // A number JSON cannot hold ends the run with the reason, not at the time limit.
    let started = std::time::Instant::now();
    let result = code(
        &server,
        json!({ "language": "python", "code": "return 10**400", "timeout_secs": 20 }),
    )
    .await;
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    let error = result.error.unwrap();
    assert!(
        error.contains("what it returned could not be read"),
        "{error}"
    );
    // A call whose line is past the limit fails; the script goes on.
    let result = code(
        &server,
        json!({ "code": "try { await tools.get_item({ id: 1, pad: 'x'.repeat(2_000_000) }) } catch (e) { return e.message }" }),
    )
    .await;
    let message = result.output["value"].as_str().unwrap_or_default();
    assert!(message.contains("the call could not be read"), "{result:?}");
}
