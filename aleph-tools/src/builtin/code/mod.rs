//! Code mode: the `code` tool runs a script the model writes, in the OS sandbox, where every
//! tool open to code is an async function; the script's calls go back through the server's
//! whole pipeline, and only what it prints and returns reaches the model.

mod protocol;
mod script;
mod typescript;

use std::ffi::OsString;
use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::Builtin;
use crate::context::{Caller, ToolContext};
use crate::error::ToolError;
use crate::result::ToolOutput;
use crate::sandbox::Sandbox;
use crate::server::{Derive, DerivedTool, ToolServerBuilder};
use crate::tool::{BoxFuture, RuntimeTool, ToolAnnotations, ToolDefinition, ToolHandler};

/// The name the code-mode tool is served under.
const TOOL_NAME: &str = "code";

/// The language of a code-mode script.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum ScriptLanguage {
    /// JavaScript, run by Node.js: `await tools.get_weather({ city: "Paris" })`.
    #[default]
    Javascript,
    /// Python 3: `await tools.get_weather(city="Paris")`.
    Python,
}

impl ScriptLanguage {
    fn runner_name(self) -> &'static str {
        match self {
            Self::Javascript => "runner.js",
            Self::Python => "runner.py",
        }
    }

    fn runner(self) -> &'static str {
        match self {
            Self::Javascript => include_str!("runner.js"),
            Self::Python => include_str!("runner.py"),
        }
    }

    fn display_name(self) -> &'static str {
        match self {
            Self::Javascript => "JavaScript",
            Self::Python => "Python",
        }
    }
}

/// Code mode: serves `code`, a tool that runs a JavaScript (or Python) program in which every
/// tool open to code is an async function, so the model does in one call what would take
/// many, and only what the program prints and returns enters the conversation.
///
/// A tool is open to code when its definition allows [`Caller::CodeExecution`]
/// (`#[tool(callers = [human, code_execution])]`; the built-in `file_read`, `file_list`
/// and `file_search` do) or when [`open`](Self::open) names it. `code`'s description
/// carries the TypeScript declarations of those tools (from their input and output schemas
/// and their docs), remade whenever the tool set or the filter changes. Inside the program,
/// `await tools.name(args)` makes a call through the server's whole pipeline (filter,
/// argument checks, middleware, time limits, confirmation) as [`Caller::CodeExecution`],
/// with the caller's identity, and gives the tool's structured output (else its text); a
/// failed call throws a `ToolError`. A name not open to code is refused with the reason.
///
/// The program runs in the OS [`Sandbox`] (by default: no network, nothing written
/// outside a fresh directory, no files read beyond the system's) with a time limit, a
/// number of tool calls, and a cap on what it prints and returns.
///
/// ```
/// use aleph_tools::builtin::CodeMode;
/// use aleph_tools::prelude::*;
///
/// /// Get the price of an item.
/// #[tool(register = false, callers = [human, code_execution])]
/// fn price(item: String) -> f64 {
///     item.len() as f64
/// }
///
/// let server = AlephToolServer::builder()
///     .with_tool(PriceTool)
///     .with_builtin(CodeMode::new().max_tool_calls(50))
///     .build()?;
/// let code = server.tools().get("code").unwrap();
/// assert!(code.description.contains("price(args: {"));
/// # Ok::<(), aleph_tools::RegistryError>(())
/// ```
#[derive(Debug, Clone)]
pub struct CodeMode {
    default_timeout: Duration,
    max_timeout: Duration,
    max_tool_calls: usize,
    parallel_calls: usize,
    output_limit: usize,
    open: Vec<String>,
    node: OsString,
    python: OsString,
    sandbox: Sandbox,
}

impl Default for CodeMode {
    fn default() -> Self {
        Self {
            default_timeout: Duration::from_secs(30),
            max_timeout: Duration::from_mins(5),
            max_tool_calls: 100,
            parallel_calls: 8,
            output_limit: 64 * 1024,
            open: Vec::new(),
            node: "node".into(),
            python: "python3".into(),
            sandbox: Sandbox::new(),
        }
    }
}

impl CodeMode {
    /// Code mode with the defaults: 30 s per script unless it asks for more (up to 5
    /// minutes), 100 tool calls per script with 8 at once, 64 KiB of output.
    pub fn new() -> Self {
        Self::default()
    }

    /// Opens the tools matching `patterns` (names or globs: `web_fetch`, `weather_*`) to
    /// code as well, though their definitions do not say so.
    #[must_use]
    pub fn open(mut self, patterns: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.open.extend(patterns.into_iter().map(Into::into));
        self
    }

    /// The time limit of a script that asks for none.
    #[must_use]
    pub fn default_timeout(mut self, timeout: Duration) -> Self {
        self.default_timeout = timeout;
        self
    }

    /// The longest time limit a script may ask for.
    #[must_use]
    pub fn max_timeout(mut self, timeout: Duration) -> Self {
        self.max_timeout = timeout;
        self
    }

    /// How many tool calls one script may make; calls past it fail.
    #[must_use]
    pub fn max_tool_calls(mut self, calls: usize) -> Self {
        self.max_tool_calls = calls;
        self
    }

    /// How many of a script's tool calls run at once; the rest wait their turn.
    #[must_use]
    pub fn parallel_calls(mut self, calls: usize) -> Self {
        self.parallel_calls = calls.max(1);
        self
    }

    /// How many bytes of what a script prints are kept (its start and its end), and the
    /// most characters of JSON its returned value may take.
    #[must_use]
    pub fn output_limit(mut self, bytes: usize) -> Self {
        self.output_limit = bytes.max(2);
        self
    }

    /// The program that runs JavaScript (`node`).
    #[must_use]
    pub fn node(mut self, program: impl Into<OsString>) -> Self {
        self.node = program.into();
        self
    }

    /// The program that runs Python (`python3`).
    #[must_use]
    pub fn python(mut self, program: impl Into<OsString>) -> Self {
        self.python = program.into();
        self
    }

    /// The sandbox policy scripts run in. [`Sandbox::none`] runs them with the host's
    /// full rights.
    #[must_use]
    pub fn sandbox(mut self, policy: Sandbox) -> Self {
        self.sandbox = policy;
        self
    }

    fn program(&self, language: ScriptLanguage) -> &OsString {
        match language {
            ScriptLanguage::Javascript => &self.node,
            ScriptLanguage::Python => &self.python,
        }
    }
}

impl Builtin for CodeMode {
    fn add_to(self, builder: ToolServerBuilder) -> ToolServerBuilder {
        super::exec::guard_process();
        let open = self.open.clone();
        let mode = Arc::new(self);
        let first = code_tool(Arc::clone(&mode), &[]);
        let derive: Derive = Arc::new(move |tools| Arc::new(code_tool(Arc::clone(&mode), tools)));
        builder
            .open_to_code(open)
            .with_derived_tool(DerivedTool::new(TOOL_NAME, derive))
            .with_dyn_tool(first)
    }
}

/// The tools of `tools` code may call and `code`'s description declares: deferred tools
/// wait for a search (declared, they would cost the model what deferral saves).
fn open_tools(tools: &[Arc<ToolDefinition>]) -> impl Iterator<Item = &Arc<ToolDefinition>> {
    tools.iter().filter(|definition| {
        definition.allows_caller(Caller::CodeExecution) && !definition.defer_loading
    })
}

/// `code`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct CodeArgs {
    /// The program: the body of an async function, so `await` and `return` work at its top
    /// level
    code: String,
    /// The program's language (JavaScript when left out)
    #[serde(default)]
    language: Option<ScriptLanguage>,
    /// Seconds the program may run before it is stopped (30 when left out)
    #[schemars(range(min = 1))]
    #[serde(default)]
    timeout_secs: Option<u64>,
}

/// The `code` tool, described for the tools open to code when it is made.
fn code_tool(mode: Arc<CodeMode>, tools: &[Arc<ToolDefinition>]) -> RuntimeTool<CodeRunner> {
    let description = describe(&mode, tools);
    let parameters = Value::clone(&crate::schema::arguments_schema_for::<CodeArgs>());
    let definition = ToolDefinition::new(TOOL_NAME, description, parameters)
        .with_title("Run code that calls tools")
        .with_annotations(ToolAnnotations {
            read_only: Some(false),
            open_world: Some(true),
            ..ToolAnnotations::NONE
        });
    RuntimeTool::new(definition, CodeRunner(mode))
}

/// Runs `code`'s calls. The server checks the caller first: `code` is never open to code,
/// so a script cannot start another.
struct CodeRunner(Arc<CodeMode>);

impl ToolHandler for CodeRunner {
    fn call<'a>(
        &'a self,
        _definition: &'a ToolDefinition,
        args: Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let args: CodeArgs = serde_json::from_value(args)
                .map_err(|e| ToolError::execution(format!("the arguments of `code`: {e}")))?;
            let timeout = args
                .timeout_secs
                .map_or(self.0.default_timeout, Duration::from_secs)
                .min(self.0.max_timeout);
            let language = args.language.unwrap_or_default();
            script::run(&self.0, ctx, language, &args.code, timeout).await
        })
    }
}

/// `code`'s description: how to write a script, its limits, and the declarations of the
/// tools open to code.
fn describe(mode: &CodeMode, tools: &[Arc<ToolDefinition>]) -> String {
    let confinement = if mode.sandbox.is_enabled() {
        "It runs in a sandbox, without the network and without files beyond its own directory \
         unless the server grants more: reach them through the tools."
    } else {
        "It runs with the server's own rights."
    };
    let mut text = format!(
        "Run a JavaScript program that calls tools as async functions, and get what it printed and returned.\n\n\
         Use it to do in one step what would take many tool calls: loop over items, call tools in \
         parallel (`Promise.all`), filter and combine their results. Only what the program prints \
         (`console.log`) and returns (as JSON) comes back, so return what matters, not everything.\n\n\
         The program is the body of an async function: use `await` and `return` at its top level. \
         `await tools.NAME(args)` calls a tool and gives its result; a failed call throws a `ToolError` \
         whose message says why. Await every call: one that fails unawaited ends the program. \
         {confinement} Python runs too (`\"language\": \"python\"`): `await tools.NAME(arg=value)` \
         (`tools[\"NAME\"](...)` for a name with a dash).\n\n",
    );
    let _ = write!(
        text,
        "Limits: {} s per program unless `timeout_secs` asks for more (at most {} s), {} tool calls, \
         {} bytes of output.\n\n",
        mode.default_timeout.as_secs(),
        mode.max_timeout.as_secs(),
        mode.max_tool_calls,
        mode.output_limit,
    );
    let open: Vec<&ToolDefinition> = open_tools(tools).map(|d| &**d).collect();
    if open.is_empty() {
        text.push_str("No tool is open to code yet: `tools` is empty.");
        return text;
    }
    let declarations = typescript::declarations(open);
    // A fence longer than any run of backticks in the declarations, which a tool's docs
    // could otherwise close.
    let longest = declarations
        .split(|c| c != '`')
        .map(str::len)
        .max()
        .unwrap_or(0);
    let fence = "`".repeat(longest.max(2) + 1);
    let _ = write!(text, "The tools:\n\n{fence}ts\n{declarations}\n{fence}");
    text
}
