//! Bearer-token auth of the HTTP MCP server: the official SDKs' view of the 401 challenge
//! and the metadata document, identities reaching tools and `Permission`, sessions and
//! `input_required` rounds kept to the identity that began them, CORS, and the wrapping
//! client sending a token.

use aleph_tools::mcp::{
    AuthError, McpAuth, McpConnection, McpEndpoint, McpHttpServer, McpServer, StaticTokens,
};
use aleph_tools::middleware::Permission;
use aleph_tools::prelude::*;
use aleph_tools::{Elicitation, Identity};
use aleph_tools_tests::{assert_client_passed, interop_peers};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

/// Says who is calling and with which scopes.
#[tool(register = false)]
fn whoami(#[arg(inject)] who: Option<Identity>) -> String {
    match who {
        Some(who) => format!(
            "{}: {}",
            who.subject(),
            who.scopes().collect::<Vec<_>>().join(" ")
        ),
        None => "anonymous".to_owned(),
    }
}

/// Writes a note as the caller; needs the `notes:write` scope.
#[tool(register = false)]
fn write_note(
    /// What to write
    text: String,
    who: Identity,
) -> String {
    format!("{} wrote: {text}", who.subject())
}

#[derive(Deserialize, JsonSchema)]
struct Answer {
    /// Yes or no
    answer: String,
}

/// Asks the user a question before answering; runs as a task for clients that take them.
#[tool(register = false, task)]
async fn ask_first(ctx: &ToolContext) -> Result<String, ToolError> {
    Ok(match ctx.elicit::<Answer>("Go on?").await? {
        Elicitation::Accept(Answer { answer }) => format!("answered {answer}"),
        other => other.action().to_owned(),
    })
}

fn tools() -> AlephToolServer {
    AlephToolServer::builder()
        .with_tool(WhoamiTool)
        .with_tool(WriteNoteTool)
        .with_tool(AskFirstTool)
        .with_middleware(
            Permission::new()
                .require("notes:write", ["write_note"])
                .unwrap(),
        )
        .build()
        .unwrap()
}

fn tokens() -> StaticTokens {
    StaticTokens::new()
        .with_token(
            "alice-token",
            Identity::new("alice").with_scopes(["tools:call", "notes:write"]),
        )
        .with_token(
            "bob-token",
            Identity::new("bob").with_scopes(["tools:call"]),
        )
        .with_token("carol-token", Identity::new("carol"))
}

/// The server the SDK clients check: the tokens above, `tools:call` required,
/// `https://auth.example.com` issuing tokens.
async fn oauth_server() -> McpHttpServer {
    let auth = McpAuth::new(tokens())
        .with_authorization_server("https://auth.example.com")
        .unwrap()
        .with_scopes_supported(["notes:write"])
        .with_required_scopes(["tools:call"]);
    McpServer::new(&tools())
        .with_auth(auth)
        .serve_http("127.0.0.1:0")
        .await
        .unwrap()
}

async fn python(mode: &str) {
    let http = oauth_server().await;
    let peers = interop_peers();
    let output = tokio::process::Command::new(peers.join(".venv/bin/python"))
        .arg(peers.join("auth_client.py"))
        .args(["--mode", mode, "--url", &http.url()])
        .output()
        .await
        .unwrap();
    assert_client_passed(&output, "Python", 7);
    http.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_sdk_with_the_handshake() {
    python("legacy").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_sdk_negotiating_by_itself() {
    python("auto").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typescript_sdk() {
    let http = oauth_server().await;
    let peers = interop_peers();
    let output = tokio::process::Command::new(peers.join(".venv/bin/node24"))
        .arg(peers.join("auth_client.mjs"))
        .arg(http.url())
        .output()
        .await
        .unwrap();
    assert_client_passed(&output, "TypeScript", 7);
    http.shutdown().await.unwrap();
}

const ACCEPT: &str = "application/json, text/event-stream";

/// An `initialize` request, as a 2025-06-18 client opens a session.
fn initialize() -> Value {
    json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": { "name": "raw", "version": "1" }
        }
    })
}

fn post(http: &reqwest::Client, url: &str, token: &str, body: &Value) -> reqwest::RequestBuilder {
    http.post(url)
        .header("accept", ACCEPT)
        .bearer_auth(token)
        .json(body)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_answers_only_the_identity_that_opened_it() {
    let server = oauth_server().await;
    let url = server.url();
    let http = reqwest::Client::new();
    let initialize = initialize();
    let opened = post(&http, &url, "alice-token", &initialize)
        .send()
        .await
        .unwrap();
    assert_eq!(opened.status(), 200);
    let session = opened.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let list = json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/list" });
    let stolen = post(&http, &url, "bob-token", &list)
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", "2025-06-18")
        .send()
        .await
        .unwrap();
    assert_eq!(stolen.status(), 403);
    assert!(stolen.text().await.unwrap().contains("another identity"));
    let initialized = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
    post(&http, &url, "alice-token", &initialized)
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", "2025-06-18")
        .send()
        .await
        .unwrap();
    let own = post(&http, &url, "alice-token", &list)
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", "2025-06-18")
        .send()
        .await
        .unwrap();
    assert_eq!(own.status(), 200);
    let listed = aleph_tools_tests::http_answer(own).await;
    assert_eq!(
        listed["result"]["tools"].as_array().unwrap().len(),
        3,
        "{listed}"
    );
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_identity_pages_through_only_the_tools_it_may_call() {
    let server = McpServer::new(&tools())
        .with_auth(McpAuth::new(tokens()))
        .with_page_size(1)
        .serve_http("127.0.0.1:0")
        .await
        .unwrap();
    let url = server.url();
    let http = reqwest::Client::new();
    let list_all = |token: &'static str| {
        let (http, url) = (&http, &url);
        async move {
            let mut names = Vec::new();
            let mut cursor: Option<String> = None;
            loop {
                let mut params = json!({
                    "_meta": {
                        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                        "io.modelcontextprotocol/clientCapabilities": {},
                    }
                });
                if let Some(cursor) = &cursor {
                    params["cursor"] = json!(cursor);
                }
                let body =
                    json!({ "jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": params });
                let page = post(http, url, token, &body)
                    .header("mcp-protocol-version", "2026-07-28")
                    .header("mcp-method", "tools/list")
                    .send()
                    .await
                    .unwrap();
                let page = aleph_tools_tests::http_answer(page).await;
                let tools = page["result"]["tools"]
                    .as_array()
                    .unwrap_or_else(|| panic!("{page}"));
                assert_eq!(tools.len(), 1, "{page}");
                names.push(tools[0]["name"].as_str().unwrap().to_owned());
                match page["result"]["nextCursor"].as_str() {
                    Some(next) => cursor = Some(next.to_owned()),
                    None => return names,
                }
            }
        }
    };
    assert_eq!(
        list_all("alice-token").await,
        ["ask_first", "whoami", "write_note"]
    );
    assert_eq!(list_all("bob-token").await, ["ask_first", "whoami"]);
    assert_eq!(list_all("carol-token").await, ["ask_first", "whoami"]);
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_call_is_carried_on_only_by_the_identity_that_began_it() {
    let server = oauth_server().await;
    let url = server.url();
    let http = reqwest::Client::new();
    let call = |token: &'static str, extra: Value| {
        let mut params = json!({
            "name": "ask_first",
            "arguments": {},
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": { "elicitation": {} },
            }
        });
        params
            .as_object_mut()
            .unwrap()
            .extend(extra.as_object().cloned().unwrap_or_default());
        let body = json!({ "jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params });
        let request = post(&http, &url, token, &body)
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "tools/call")
            .header("mcp-name", "ask_first");
        async move { aleph_tools_tests::http_answer(request.send().await.unwrap()).await }
    };
    let first = call("alice-token", json!({})).await;
    assert_eq!(first["result"]["resultType"], "input_required", "{first}");
    let state = first["result"]["requestState"].as_str().unwrap().to_owned();
    let answers = json!({
        "requestState": state,
        "inputResponses": {
            "elicitation-1": { "action": "accept", "content": { "answer": "yes" } }
        }
    });
    let stolen = call("bob-token", answers.clone()).await;
    assert_eq!(stolen["error"]["code"], -32602, "{stolen}");
    assert!(
        stolen["error"]["message"]
            .as_str()
            .unwrap()
            .contains("another identity"),
        "{stolen}"
    );
    let carried_on = call("alice-token", answers).await;
    assert_eq!(
        carried_on["result"]["content"][0]["text"], "answered yes",
        "{carried_on}"
    );
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_is_seen_answered_and_cancelled_only_by_the_identity_that_started_it() {
    let server = oauth_server().await;
    let url = server.url();
    let http = reqwest::Client::new();
    let rpc = |token: &'static str, method: &'static str, mut params: Value| {
        let name = params
            .get("taskId")
            .or(params.get("name"))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        params.as_object_mut().unwrap().insert(
            "_meta".into(),
            json!({
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {
                    "elicitation": {},
                    "extensions": { "io.modelcontextprotocol/tasks": {} },
                },
            }),
        );
        let body = json!({ "jsonrpc": "2.0", "id": 9, "method": method, "params": params });
        let request = post(&http, &url, token, &body)
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", method)
            .header("mcp-name", name);
        async move { aleph_tools_tests::http_answer(request.send().await.unwrap()).await }
    };
    let started = rpc(
        "alice-token",
        "tools/call",
        json!({ "name": "ask_first", "arguments": {} }),
    )
    .await;
    assert_eq!(started["result"]["resultType"], "task", "{started}");
    let task = started["result"]["taskId"].as_str().unwrap().to_owned();

    // Bob learns nothing of Alice's task, and cannot touch it.
    let answer = json!({ "elicitation-1": { "action": "accept", "content": { "answer": "yes" } } });
    for (method, params) in [
        ("tasks/get", json!({ "taskId": task })),
        (
            "tasks/update",
            json!({ "taskId": task, "inputResponses": answer }),
        ),
        ("tasks/cancel", json!({ "taskId": task })),
    ] {
        let refused = rpc("bob-token", method, params).await;
        assert_eq!(refused["error"]["code"], -32602, "{method}: {refused}");
        assert!(
            refused["error"]["message"]
                .as_str()
                .unwrap()
                .contains("no task"),
            "{refused}"
        );
    }

    // Alice's task waits for her answer, takes it, and ends with it.
    let mut state = json!(null);
    for _ in 0..200 {
        state = rpc("alice-token", "tasks/get", json!({ "taskId": task })).await;
        if state["result"]["status"] == "input_required" {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert_eq!(
        state["result"]["inputRequests"]["elicitation-1"]["method"], "elicitation/create",
        "{state}"
    );
    let ack = rpc(
        "alice-token",
        "tasks/update",
        json!({ "taskId": task, "inputResponses": answer }),
    )
    .await;
    assert_eq!(ack["result"]["resultType"], "complete", "{ack}");
    for _ in 0..200 {
        state = rpc("alice-token", "tasks/get", json!({ "taskId": task })).await;
        if state["result"]["status"] == "completed" {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert_eq!(
        state["result"]["result"]["content"][0]["text"], "answered yes",
        "{state}"
    );
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_an_authorization_server_there_is_no_metadata_document() {
    let server = McpServer::new(&tools())
        .with_auth(McpAuth::new(tokens()))
        .serve_http("127.0.0.1:0")
        .await
        .unwrap();
    let http = reqwest::Client::new();
    let refused = http
        .post(server.url())
        .header("accept", ACCEPT)
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 401);
    let challenge = refused.headers()["www-authenticate"].to_str().unwrap();
    assert_eq!(challenge, "Bearer realm=\"mcp\"");
    let base = server.url().trim_end_matches("/mcp").to_owned();
    let document = http
        .get(format!("{base}/.well-known/oauth-protected-resource/mcp"))
        .send()
        .await
        .unwrap();
    assert_ne!(document.status(), 200);
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_configured_resource_url_is_what_the_challenge_and_the_document_name() {
    let auth = McpAuth::new(tokens())
        .with_resource("https://tools.example.com/team/mcp")
        .unwrap()
        .with_authorization_server("https://auth.example.com")
        .unwrap()
        .with_resource_name("Team tools")
        .with_documentation("https://tools.example.com/docs")
        .unwrap();
    let server = McpServer::new(&tools())
        .with_auth(auth)
        .serve_http("127.0.0.1:0")
        .await
        .unwrap();
    let http = reqwest::Client::new();
    let refused = post(&http, &server.url(), "nope", &json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 401);
    let challenge = refused.headers()["www-authenticate"].to_str().unwrap();
    assert!(
        challenge.contains(
            "resource_metadata=\"https://tools.example.com/.well-known/oauth-protected-resource/team/mcp\""
        ),
        "{challenge}"
    );
    assert!(challenge.contains("error=\"invalid_token\""), "{challenge}");
    // The unread body leaves the connection unusable, and the client is told so.
    assert_eq!(refused.headers()["connection"], "close");
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["error"], "invalid_token");
    // Behind a proxy the path is the proxy's: the document answers below any path.
    let base = server.url().trim_end_matches("/mcp").to_owned();
    let document: Value = http
        .get(format!(
            "{base}/.well-known/oauth-protected-resource/team/mcp"
        ))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        document,
        json!({
            "resource": "https://tools.example.com/team/mcp",
            "authorization_servers": ["https://auth.example.com"],
            "bearer_methods_supported": ["header"],
            "resource_name": "Team tools",
            "resource_documentation": "https://tools.example.com/docs",
        })
    );
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_for_another_host_is_refused_before_its_token_is_read() {
    let server = oauth_server().await;
    let http = reqwest::Client::new();
    let base = server.url().trim_end_matches("/mcp").to_owned();
    for url in [
        server.url(),
        format!("{base}/.well-known/oauth-protected-resource/mcp"),
    ] {
        let refused = http
            .post(&url)
            .header("host", "evil.example")
            .header("accept", ACCEPT)
            .json(&json!({}))
            .send()
            .await
            .unwrap();
        assert_eq!(refused.status(), 403, "{url}");
        assert!(refused.headers().get("www-authenticate").is_none(), "{url}");
    }
    server.shutdown().await.unwrap();
}

#[test]
fn urls_that_cannot_name_the_server_are_refused_when_given() {
    let error = McpAuth::new(tokens())
        .with_resource("tools.example.com/mcp")
        .unwrap_err();
    assert!(error.to_string().contains("needs a scheme"), "{error}");
    let error = McpAuth::new(tokens())
        .with_authorization_server("https://auth.example.com/#x")
        .unwrap_err();
    assert!(error.to_string().contains("fragment"), "{error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_authorizer_refusing_for_scope_gets_403_and_a_failing_one_leaves_others_served() {
    let authorizer = |token: String| async move {
        match token.as_str() {
            "reader" => Err(AuthError::insufficient_scope("tools:write")),
            "panic" => panic!("the authorizer broke"),
            "fine" => Ok(Identity::new("fine")),
            _ => Err(AuthError::invalid_token("unknown")),
        }
    };
    let server = McpServer::new(&tools())
        .with_auth(McpAuth::new(authorizer))
        .serve_http("127.0.0.1:0")
        .await
        .unwrap();
    let http = reqwest::Client::new();
    let url = server.url();
    let initialize = initialize();
    let reader = post(&http, &url, "reader", &initialize)
        .send()
        .await
        .unwrap();
    assert_eq!(reader.status(), 403);
    let challenge = reader.headers()["www-authenticate"].to_str().unwrap();
    assert!(
        challenge.contains("error=\"insufficient_scope\"")
            && challenge.contains("scope=\"tools:write\""),
        "{challenge}"
    );
    let broken = post(&http, &url, "panic", &initialize)
        .send()
        .await
        .unwrap();
    assert_eq!(
        broken.status(),
        500,
        "a panicking authorizer lets nothing through"
    );
    let fine = post(&http, &url, "fine", &initialize).send().await.unwrap();
    assert_eq!(fine.status(), 200);
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cors_answers_pages_of_the_listed_origins_only() {
    let server = McpServer::new(&tools())
        .with_auth(McpAuth::new(tokens()))
        .with_cors_origins(["https://app.example.com"])
        .serve_http("127.0.0.1:0")
        .await
        .unwrap();
    let http = reqwest::Client::new();
    let preflight = |origin: &'static str| {
        http.request(reqwest::Method::OPTIONS, server.url())
            .header("origin", origin)
            .header("access-control-request-method", "POST")
            .header(
                "access-control-request-headers",
                "authorization, content-type, mcp-session-id",
            )
            .send()
    };
    let allowed = preflight("https://app.example.com").await.unwrap();
    assert!(allowed.status().is_success(), "{}", allowed.status());
    let headers = allowed.headers();
    assert_eq!(
        headers["access-control-allow-origin"],
        "https://app.example.com"
    );
    let allowed_headers = headers["access-control-allow-headers"].to_str().unwrap();
    for name in [
        "authorization",
        "content-type",
        "mcp-session-id",
        "mcp-protocol-version",
    ] {
        assert!(allowed_headers.contains(name), "{allowed_headers}");
    }
    let other = preflight("https://evil.example.com").await.unwrap();
    assert!(other.headers().get("access-control-allow-origin").is_none());
    // A refused request from the page still lets the page read why.
    let refused = http
        .post(server.url())
        .header("origin", "https://app.example.com")
        .header("accept", ACCEPT)
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 401);
    let exposed = refused.headers()["access-control-expose-headers"]
        .to_str()
        .unwrap()
        .to_ascii_lowercase();
    assert!(
        exposed.contains("www-authenticate") && exposed.contains("mcp-session-id"),
        "{exposed}"
    );
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_wrapping_client_sends_its_token() {
    let server = oauth_server().await;
    let host = AlephToolServer::builder().build().unwrap();
    let refused = McpConnection::builder(McpEndpoint::url(server.url()))
        .prefix("team")
        .connect(&host)
        .await
        .unwrap_err();
    assert!(
        refused.to_string().contains("401")
            || refused.to_string().to_ascii_lowercase().contains("auth"),
        "{refused}"
    );
    let connection =
        McpConnection::builder(McpEndpoint::url(server.url()).bearer_token("alice-token"))
            .prefix("team")
            .connect(&host)
            .await
            .unwrap();
    let who = host.call("team_whoami", json!({})).await;
    assert_eq!(who.model_text(), "alice: notes:write tools:call", "{who:?}");
    drop(connection);
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn in_process_the_identity_comes_from_the_context() {
    let tools = tools();
    let anonymous = tools.call("whoami", json!({})).await;
    assert_eq!(anonymous.output, "anonymous");
    let refused = tools.call("write_note", json!({ "text": "x" })).await;
    assert_eq!(refused.error_kind, Some(ToolErrorKind::PermissionDenied));
    let ann = ToolContext::new().with_identity(Identity::new("ann").with_scopes(["notes:write"]));
    let wrote = tools
        .call("write_note", json!({ "text": "x" }))
        .context(ann)
        .await;
    assert_eq!(wrote.output, "ann wrote: x", "{wrote:?}");
    // A tool that needs an identity says so to an anonymous call the permission let through.
    let scoped_only = ToolContext::new().with_capabilities(["notes:write"]);
    let refused = tools
        .call("write_note", json!({ "text": "x" }))
        .context(scoped_only)
        .await;
    assert!(refused.error.unwrap().contains("anonymous"));
}

#[test]
fn in_process_listings_leave_out_what_the_context_may_not_call() {
    let tools = tools();
    let names = |listed: Vec<std::sync::Arc<ToolDefinition>>| -> Vec<String> {
        listed.into_iter().map(|d| d.name.clone()).collect()
    };
    let guest = ToolContext::new();
    let writer =
        ToolContext::new().with_identity(Identity::new("ann").with_scopes(["notes:write"]));
    assert_eq!(
        names(tools.tools().context(&guest).definitions()),
        ["ask_first", "whoami"]
    );
    assert_eq!(
        names(tools.tools().context(&writer).definitions()),
        names(tools.tools().definitions())
    );
    assert!(tools.tools().context(&guest).get("write_note").is_none());
    assert!(tools.tools().context(&writer).get("write_note").is_some());
    assert!(tools.tools().context(&writer).get("no_such_tool").is_none());
    for provider in [
        aleph_tools::provider::Provider::Anthropic,
        aleph_tools::provider::Provider::OpenAiChat,
        aleph_tools::provider::Provider::Gemini,
    ] {
        let everything = tools.tools().for_provider(provider);
        // Nothing left out: the shared array itself.
        assert!(std::sync::Arc::ptr_eq(
            &everything,
            &tools.tools().context(&writer).for_provider(provider)
        ));
        let for_guest = tools
            .tools()
            .context(&guest)
            .for_provider(provider)
            .to_string();
        assert!(everything.to_string().contains("write_note"));
        assert!(!for_guest.contains("write_note"), "{for_guest}");
        assert!(for_guest.contains("whoami"), "{for_guest}");
    }
}
