//! The tools the MCP tests serve: one of each shape an MCP client sees.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use aleph_tools::mcp::{McpResource, McpResourceTemplate, McpServer};
use aleph_tools::prelude::*;
use aleph_tools::{
    AlephToolDyn, AlephToolServer, BoxFuture, Elicitation, LogLevel, ResourceContents,
    SamplingRequest, ToolLogLayer,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tracing_subscriber::layer::SubscriberExt as _;

/// Add two integers.
#[tool(read_only, idempotent, register = false)]
fn add(
    /// The first number
    a: i64,
    /// The second number
    b: i64,
) -> i64 {
    a + b
}

/// The weather in a city.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Weather {
    /// The city asked about
    pub city: String,
    /// Degrees Celsius
    pub celsius: f64,
}

/// Current weather for a city.
#[tool(read_only, open_world, register = false)]
fn get_weather(
    /// City name, such as "Lisbon"
    city: String,
) -> Weather {
    Weather {
        celsius: if city == "Oslo" { 4.0 } else { 19.5 },
        city,
    }
}

/// Fails on purpose, with the message given.
#[tool(destructive, register = false)]
fn fail(
    /// What to say
    message: String,
) -> Result<String, String> {
    Err(message)
}

/// Panics on purpose: the server must fail only this call, and a server on stdio must keep
/// the panic message off standard output.
#[tool(register = false)]
fn explode() -> String {
    panic!("explode was asked to panic")
}

/// A 1×1 red PNG.
pub const RED_PIXEL: &[u8] = include_bytes!("red_pixel.png");

/// Draws a one-pixel picture of a color, with a caption.
#[tool(
    read_only,
    title = "Pixel painter",
    icon = "https://example.com/brush.svg",
    meta = r#"{"example.com/preview": true}"#,
    register = false
)]
fn draw(
    /// The color to draw
    color: String,
) -> ToolOutput {
    ToolOutput::text(format!("A pixel of {color}:"))
        .with_image(RED_PIXEL, "image/png")
        .with(Content::resource_link("test://palette", "palette"))
}

/// Writes `cancelled` to its file when dropped before being disarmed: the server drops a
/// cancelled call's tool at once, so the file proves a cancellation arrived.
struct CancelMarker(Option<PathBuf>);

impl Drop for CancelMarker {
    fn drop(&mut self) {
        if let Some(path) = self.0.take() {
            let _ = std::fs::write(path, "cancelled");
        }
    }
}

/// Counts to `steps`, reporting progress at each step. When its call is cancelled before it
/// finishes it writes `cancelled` to `marker`, if given.
#[tool(register = false)]
async fn slow(
    /// How many steps (50 ms each)
    steps: u32,
    /// A file to write `cancelled` into when the call is cancelled
    marker: Option<String>,
    progress: Progress,
) -> String {
    let mut marker = CancelMarker(marker.map(PathBuf::from));
    for step in 1..=steps {
        tokio::time::sleep(Duration::from_millis(50)).await;
        progress.report(
            f64::from(step),
            Some(f64::from(steps)),
            Some(&format!("step {step}")),
        );
    }
    marker.0 = None;
    format!("counted to {steps}")
}

/// Counts to `steps` (50 ms each), its progress as the task's status; an MCP task for
/// clients that take them.
#[tool(register = false, task)]
async fn count_task(
    /// How many steps (50 ms each)
    steps: u32,
    progress: Progress,
) -> String {
    for step in 1..=steps {
        progress.report(
            f64::from(step),
            Some(f64::from(steps)),
            Some(&format!("step {step} of {steps}")),
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    format!("counted to {steps}")
}

/// Adds a tool called `name` to this server (it echoes its input), so that clients see the
/// tool list change.
#[tool(register = false)]
fn grow(
    /// The new tool's name
    name: String,
    server: State<ServerSlot>,
) -> Result<String, String> {
    let server = server.tools.get().ok_or("the server is not built yet")?;
    server
        .add(Echo { name: name.clone() })
        .map_err(|e| e.to_string())?;
    Ok(format!("added {name}"))
}

/// A tool made at run time: returns its arguments.
pub struct Echo {
    name: String,
}

impl Echo {
    /// An echo tool called `name`.
    pub fn named(name: impl Into<String>) -> Self {
        Self { name: name.into() }
    }
}

impl AlephToolDyn for Echo {
    fn name(&self) -> &str {
        &self.name
    }

    fn definition(&self) -> ToolDefinition {
        ToolDefinition::new(
            self.name.clone(),
            "Returns its arguments.",
            json!({ "type": "object", "properties": { "text": { "type": "string" } } }),
        )
    }

    fn call<'a>(
        &'a self,
        args: Value,
        _ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move { Ok(ToolOutput::json(args)) })
    }
}

/// How many `echo_NNN` tools [`add_echo_tools`] adds: enough for `tools/list` to come in
/// three pages of [`PAGE_SIZE`].
pub const ECHO_TOOLS: usize = 250;

/// The page size the interop tests serve `tools/list` with.
pub const PAGE_SIZE: usize = 100;

/// Adds [`ECHO_TOOLS`] echo tools, `echo_000` to `echo_249`, so that listing them takes
/// pages.
///
/// # Panics
///
/// Never: the names are valid and new.
pub fn add_echo_tools(server: &AlephToolServer) {
    for i in 0..ECHO_TOOLS {
        server
            .add(Echo::named(format!("echo_{i:03}")))
            .expect("a new, valid name");
    }
}

/// The prompts the MCP tests serve: `review`, with a required `diff` and an optional
/// `focus`.
pub fn mcp_test_prompts() -> Vec<aleph_tools::mcp::McpPrompt> {
    use aleph_tools::mcp::{McpPrompt, PromptMessage};

    vec![
        McpPrompt::new("review", "Review a change for bugs.", |args| {
            let focus = args.get("focus").unwrap_or("correctness");
            vec![
                PromptMessage::user(format!(
                    "Review this diff for {focus}:\n{}",
                    args.text("diff")
                )),
                PromptMessage::assistant("I will read it line by line."),
            ]
        })
        .with_title("Code review")
        .with_argument("diff", "The unified diff", true)
        .with_argument("focus", "What to look for", false),
    ]
}

/// Writes the note that the resource `memo://note` reads, and tells the clients subscribed
/// to it.
#[tool(register = false)]
fn write_note(
    /// The note's new text
    text: String,
    slot: State<ServerSlot>,
) -> Result<String, String> {
    *slot.note.lock().map_err(|e| e.to_string())? = text;
    let mcp = slot.mcp.get().ok_or("not served over MCP")?;
    mcp.resource_updated(NOTE_URI);
    Ok("noted".to_owned())
}

/// Logs one message at each of debug, info, warning and error: the first and last through
/// its progress reporter, the others through `tracing`.
#[tool(register = false)]
fn chatty(progress: Progress) -> &'static str {
    progress.log(LogLevel::Debug, "counting");
    tracing::info!("one");
    tracing::warn!(count = 2, "two");
    progress.log(LogLevel::Error, json!({ "count": 3 }));
    "logged"
}

/// What `sign_up` asks the user.
#[derive(Deserialize, JsonSchema)]
struct SignUp {
    /// Your name
    name: String,
    /// Which plan
    plan: Plan,
    /// Send the newsletter
    #[serde(default)]
    newsletter: bool,
}

/// A plan `sign_up` offers.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Plan {
    Free,
    Pro,
}

/// Signs the user up, asking them for their name and plan.
#[tool(register = false)]
async fn sign_up(ctx: &ToolContext) -> Result<String, ToolError> {
    Ok(
        match ctx.elicit::<SignUp>("Sign up for the service").await? {
            Elicitation::Accept(SignUp {
                name,
                plan,
                newsletter,
            }) => {
                let plan = match plan {
                    Plan::Free => "free",
                    Plan::Pro => "pro",
                };
                format!("welcome {name}: {plan} plan, newsletter {newsletter}")
            }
            other => format!("not signed up: {}", other.action()),
        },
    )
}

/// Asks the client's model for a haiku about a topic.
#[tool(register = false)]
async fn haiku(
    /// What the haiku is about
    topic: String,
    ctx: &ToolContext,
) -> Result<String, ToolError> {
    let request = SamplingRequest::new(format!("A haiku about {topic}"))
        .with_system_prompt("You write haiku.")
        .with_max_tokens(50);
    let answer = ctx.sample(request).await?;
    Ok(format!("{} wrote: {}", answer.model, answer.text()))
}

/// The resource `write_note` writes.
pub const NOTE_URI: &str = "memo://note";

/// What the tools share: the tool server (for `grow`), the MCP server that serves it (for
/// `write_note`), and the note; the servers are filled in once built.
#[derive(Clone, Default)]
pub struct ServerSlot {
    tools: Arc<OnceLock<AlephToolServer>>,
    mcp: Arc<OnceLock<McpServer>>,
    note: Arc<Mutex<String>>,
}

/// A server with `add`, `get_weather`, `fail`, `slow`, `count_task` (runs as an MCP task),
/// `grow`, `explode`, `draw`, `write_note`, `chatty`, `sign_up` (asks the user) and `haiku`
/// (asks the client's model).
///
/// # Panics
///
/// Never: the tools are valid.
pub fn mcp_test_server() -> AlephToolServer {
    test_server(&ServerSlot::default())
}

/// The MCP server the interop tests run against: the tools of [`mcp_test_server`] and
/// [`ECHO_TOOLS`] echo tools, listed [`PAGE_SIZE`] to a page, the prompts of
/// [`mcp_test_prompts`], and resources: `memo://note` (what `write_note` wrote),
/// `test://pixel` (a PNG) and the template `greeting://{name}`. Also installs
/// [`ToolLogLayer`] as the process's subscriber, when it has none.
///
/// # Panics
///
/// Never: the tools and the template are valid.
pub fn mcp_test_endpoint() -> (AlephToolServer, McpServer) {
    let _ = tracing::subscriber::set_global_default(
        tracing_subscriber::registry().with(ToolLogLayer::new()),
    );
    let slot = ServerSlot::default();
    let tools = test_server(&slot);
    add_echo_tools(&tools);
    let note = Arc::clone(&slot.note);
    let read_note = move || {
        let text = note
            .lock()
            .map(|note| note.clone())
            .map_err(|e| e.to_string());
        async move { Ok(vec![ResourceContents::text(NOTE_URI, "text/plain", text?)]) }
    };
    let greeting =
        McpResourceTemplate::new("greeting://{name}", "greeting", |uri, params| async move {
            let name = params.get("name").unwrap_or_default();
            Ok(vec![ResourceContents::text(
                uri,
                "text/plain",
                format!("Hello, {name}!"),
            )])
        })
        .expect("a valid template")
        .with_description("A greeting for anyone.");
    let mcp = McpServer::new(&tools)
        .with_page_size(PAGE_SIZE)
        .with_prompts(mcp_test_prompts())
        .with_resources(vec![
            McpResource::new(NOTE_URI, "note", read_note)
                .with_title("Note")
                .with_description("What write_note wrote last.")
                .with_mime_type("text/plain"),
            McpResource::blob("test://pixel", "pixel", "image/png", RED_PIXEL),
        ])
        .with_resources(greeting);
    let _ = slot.mcp.set(mcp.clone());
    (tools, mcp)
}

fn test_server(slot: &ServerSlot) -> AlephToolServer {
    let server = AlephToolServer::builder()
        .with_tool(AddTool)
        .with_tool(GetWeatherTool)
        .with_tool(FailTool)
        .with_tool(SlowTool)
        .with_tool(CountTaskTool)
        .with_tool(GrowTool)
        .with_tool(ExplodeTool)
        .with_tool(DrawTool)
        .with_tool(WriteNoteTool)
        .with_tool(ChattyTool)
        .with_tool(SignUpTool)
        .with_tool(HaikuTool)
        .with_state(slot.clone())
        .build()
        .expect("the MCP test tools are valid");
    let _ = slot.tools.set(server.clone());
    server
}
