//! One run of a code-mode script: the runtime started in the sandbox, the line protocol it
//! speaks, the tool calls it asks for (each through the server's whole pipeline as
//! [`Caller::CodeExecution`]), and the limits that hold it.

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use futures_util::StreamExt as _;
use futures_util::stream::FuturesUnordered;
use serde_json::{Value, json};
use tokio::io::{AsyncRead, BufReader};
use tokio::sync::mpsc;

use super::protocol::{Incoming, Message, answer_line, read_lines, write_lines};
use super::{CodeMode, ScriptLanguage};
use crate::builtin::capture::Capture;
use crate::context::{Caller, Progress, ToolContext};
use crate::error::ToolError;
use crate::result::ToolOutput;
use crate::sandbox::{FAILURE_PREFIX, NOT_FOUND, SETUP_FAILED, SandboxError};
use crate::server::AlephToolServer;
use crate::util::process::ProcessGroup;

/// The longest line the script may write beside its returned value (whose limit is the
/// output limit); longer lines are cut and read as output.
const LINE_LIMIT: usize = 1 << 20;

/// How many bytes of answers may wait for the runtime to read them before the script is
/// stopped: one that asks for calls without ever reading their answers.
const ANSWER_BACKLOG: usize = 16 << 20;

/// How long the runtime's standard error may stay open once the run is over.
const STDERR_GRACE: Duration = Duration::from_millis(500);

/// How the script ended.
enum Ending {
    Returned(Option<Value>),
    Threw {
        message: String,
        line: Option<u64>,
    },
    TimedOut,
    /// The script asked for calls faster than it read their answers.
    Flooded,
    /// The runtime ended without saying how the script did.
    Exited,
    /// The runtime said the script ended, in a line the host cannot read.
    Unreadable(String),
}

/// A tool call the script asked for, waiting for a free slot.
struct Asked {
    id: u64,
    tool: String,
    args: Value,
}

/// Runs `code` and returns what it printed and returned.
pub(super) async fn run(
    mode: &CodeMode,
    ctx: &ToolContext,
    language: ScriptLanguage,
    code: &str,
    timeout: Duration,
) -> Result<ToolOutput, ToolError> {
    let server = ctx.server().ok_or_else(|| {
        ToolError::execution("code mode runs only in calls made through a tool server")
    })?;
    // The script's calls report nothing of their own: their progress would interleave
    // with the script's, and only what the script prints is its output.
    let child_ctx = ctx
        .clone()
        .with_caller(Caller::CodeExecution)
        .without_progress();
    let open: Vec<String> = super::open_tools(&server.tools().context(&child_ctx).definitions())
        .map(|definition| definition.name.clone())
        .collect();
    let dir = tempfile::Builder::new()
        .prefix("aleph-code-")
        .tempdir()
        .map_err(|e| {
            ToolError::execution(format!("cannot create a directory for the script: {e}"))
        })?;
    let mut child = spawn(mode, language, dir.path())?;
    // From here on, leaving this function (the end, a server time limit, a cancelled call)
    // kills the runtime and everything it started.
    let mut group = ProcessGroup::new(child.id());
    let (Some(stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Err(ToolError::execution(
            "the script's runtime could not be spoken to",
        ));
    };
    let (answers_tx, answers_rx) = mpsc::unbounded_channel::<String>();
    let answers = Answers {
        sender: Some(answers_tx),
        waiting: Arc::default(),
    };
    let start = json!({ "code": code, "tools": open, "valueLimit": mode.output_limit });
    answers.send(start.to_string());
    let writer = AbortOnDrop(tokio::spawn(write_lines(
        stdin,
        answers_rx,
        Arc::clone(&answers.waiting),
    )));
    let (lines_tx, lines) = mpsc::channel(16);
    let line_limit = LINE_LIMIT.max(mode.output_limit + 1024);
    let reader = AbortOnDrop(tokio::spawn(read_lines(
        BufReader::new(stdout),
        lines_tx,
        line_limit,
    )));
    let mut errors = AbortOnDrop(tokio::spawn(capture(stderr, mode.output_limit)));

    let started = Instant::now();
    let mut session = Session {
        server: &server,
        ctx: child_ctx,
        progress: ctx.progress(),
        open,
        max_calls: mode.max_tool_calls,
        calls: 0,
        output: Capture::new(mode.output_limit),
        answers,
    };
    let ending = session.drive(lines, mode.parallel_calls, timeout).await;
    let elapsed = started.elapsed();
    group.kill();
    session.answers.sender = None;
    drop((reader, writer));
    let status = tokio::time::timeout(STDERR_GRACE, child.wait()).await;
    if matches!(status, Ok(Ok(_))) {
        // Reaped: its number may be given to another process from now on.
        group.kill_and_forget();
    }
    let stderr = match tokio::time::timeout(STDERR_GRACE, &mut errors.0).await {
        Ok(Ok(capture)) => capture.text(),
        _ => String::new(),
    };
    // A script may have left many files: they are removed away from the async workers.
    tokio::task::spawn_blocking(move || drop(dir));
    // The launcher's own failures (its exit code says so) are the tool's, not the script's.
    let code = match status {
        Ok(Ok(status)) => status.code(),
        _ => None,
    };
    if matches!(ending, Ending::Exited)
        && let Some(code @ (NOT_FOUND | SETUP_FAILED)) = code
        && let Some(reason) = stderr
            .lines()
            .find_map(|line| line.strip_prefix(FAILURE_PREFIX))
    {
        return Err(if code == NOT_FOUND {
            not_installed(language, mode.program(language))
        } else {
            ToolError::execution(format!("the sandbox could not be set up: {reason}"))
        });
    }
    finish(
        ending,
        &session.output,
        &stderr,
        session.calls,
        timeout,
        elapsed,
    )
}

/// Starts the runtime for `language` in the sandbox, in `dir`, with the runner written there.
fn spawn(
    mode: &CodeMode,
    language: ScriptLanguage,
    dir: &Path,
) -> Result<tokio::process::Child, ToolError> {
    let runner = dir.join(language.runner_name());
    std::fs::write(&runner, language.runner())
        .map_err(|e| ToolError::execution(format!("cannot write the script's runner: {e}")))?;
    let program = mode.program(language);
    let mut command = mode.sandbox.command(program).map_err(|error| match error {
        SandboxError::NotFound(_) => not_installed(language, program),
        other => ToolError::execution(other.to_string()),
    })?;
    command
        .arg(&runner)
        .current_dir(dir)
        .env_clear()
        .envs(std::env::var_os("PATH").map(|path| ("PATH", path)))
        .env("HOME", dir)
        .env("TMPDIR", dir)
        .env("LANG", "C.UTF-8")
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env("PYTHONIOENCODING", "utf-8")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    #[cfg(unix)]
    command.process_group(0);
    command.spawn().map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            not_installed(language, program)
        } else {
            ToolError::execution(format!(
                "`{}` could not be started: {e}",
                program.to_string_lossy()
            ))
        }
    })
}

/// One script's run as the host sees it: the server and context its calls run with, the
/// tools open to it, its count of calls, what it printed, and the answers on their way to it.
struct Session<'a> {
    server: &'a AlephToolServer,
    ctx: ToolContext,
    progress: Progress,
    open: Vec<String>,
    max_calls: usize,
    calls: usize,
    output: Capture,
    answers: Answers,
}

/// The answers on their way to the runtime, and how many of their bytes wait to be written.
struct Answers {
    sender: Option<mpsc::UnboundedSender<String>>,
    waiting: Arc<AtomicUsize>,
}

impl Answers {
    /// Queues `line`; `false` when the backlog is past [`ANSWER_BACKLOG`].
    fn send(&self, line: String) -> bool {
        let waiting = self.waiting.fetch_add(line.len() + 1, Ordering::Relaxed);
        if let Some(sender) = &self.sender {
            let _ = sender.send(line);
        }
        waiting <= ANSWER_BACKLOG
    }
}

impl Session<'_> {
    /// Reads the runtime's lines and answers its calls, at most `parallel` running at once,
    /// until the script ends or `timeout` passes.
    ///
    /// Lines are read whatever the backlog of answers (a runtime blocked writing while the
    /// host is blocked answering would wait for each other forever); the backlog is bounded
    /// instead, and the calls waiting for a slot by the call limit.
    async fn drive(
        &mut self,
        mut lines: mpsc::Receiver<Incoming>,
        parallel: usize,
        timeout: Duration,
    ) -> Ending {
        let mut queued: VecDeque<Asked> = VecDeque::new();
        let mut running = FuturesUnordered::new();
        let limit = tokio::time::sleep(timeout);
        tokio::pin!(limit);
        loop {
            let answered = tokio::select! {
                incoming = lines.recv() => match incoming {
                    None => return Ending::Exited,
                    Some(Incoming::BadCall { id, reason }) => self.answer(id, Err(reason)),
                    Some(Incoming::BadEnd(reason)) => return Ending::Unreadable(reason),
                    Some(Incoming::Text(mut bytes)) => {
                        bytes.push(b'\n');
                        self.output.push(&bytes, &self.progress);
                        true
                    }
                    Some(Incoming::Message(message)) => match message {
                        Message::Log { text } => {
                            self.output.push(text.as_bytes(), &self.progress);
                            true
                        }
                        Message::Done { value } => return Ending::Returned(value),
                        Message::Error { message, line } => return Ending::Threw { message, line },
                        Message::Call { id, tool, args } => match self.admit(&tool) {
                            Ok(()) => {
                                queued.push_back(Asked { id, tool, args });
                                true
                            }
                            Err(refusal) => self.answer(id, Err(refusal)),
                        },
                    },
                },
                Some((id, answer)) = running.next() => self.answer(id, answer),
                () = &mut limit => return Ending::TimedOut,
            };
            if !answered {
                return Ending::Flooded;
            }
            while running.len() < parallel
                && let Some(asked) = queued.pop_front()
            {
                running.push(self.call(asked));
            }
        }
    }

    /// `Ok` when the script may make this call, counting it; otherwise why not, for the
    /// script.
    fn admit(&mut self, tool: &str) -> Result<(), String> {
        if !self.open.iter().any(|name| name == tool) {
            // No tool name is longer than 64 characters: a longer one is shown cut.
            let tool: String = tool.chars().take(64).collect();
            let tool = tool.as_str();
            let closest =
                crate::util::names::closest(tool, self.open.iter().map(String::as_str), 1);
            let hint = closest
                .first()
                .map_or_else(String::new, |name| format!(" (did you mean `{name}`?)"));
            let open = if self.open.is_empty() {
                "no tool is open to code".to_owned()
            } else {
                format!("the tools open to code are {}", self.open.join(", "))
            };
            return Err(format!(
                "`{tool}` is not a tool this script may call{hint}; {open}"
            ));
        }
        if self.calls >= self.max_calls {
            return Err(format!(
                "the script already made {} tool calls, the most one script may make; do the rest in another script",
                self.max_calls
            ));
        }
        self.calls += 1;
        #[expect(
            clippy::cast_precision_loss,
            reason = "a count of calls, far below 2^52"
        )]
        let count = self.calls as f64;
        self.progress
            .report(count, None, Some(&format!("calling {tool}")));
        Ok(())
    }

    /// Queues `answer` for the script; `false` when the backlog is past its bound.
    fn answer(&self, id: u64, answer: Result<Value, String>) -> bool {
        self.answers.send(answer_line(id, answer))
    }

    /// The call, through the server's whole pipeline, as code's call.
    fn call(
        &self,
        asked: Asked,
    ) -> impl Future<Output = (u64, Result<Value, String>)> + Send + 'static {
        let server = self.server.clone();
        let ctx = self.ctx.clone();
        async move {
            let Asked { id, tool, args } = asked;
            let result = server.call(&tool, args).context(ctx).await;
            let answer = if result.success {
                Ok(result.output)
            } else {
                Err(result.error.unwrap_or_else(|| "the call failed".to_owned()))
            };
            (id, answer)
        }
    }
}

/// The tool's result: what the script printed, what it returned, and how many calls it made.
fn finish(
    ending: Ending,
    output: &Capture,
    stderr: &str,
    calls: usize,
    timeout: Duration,
    elapsed: Duration,
) -> Result<ToolOutput, ToolError> {
    let printed = output.text();
    let mut shown = String::new();
    if !printed.is_empty() {
        let _ = write!(shown, "--- output ---\n{printed}");
        if !printed.ends_with('\n') {
            shown.push('\n');
        }
    }
    if !stderr.trim().is_empty() {
        let _ = write!(
            shown,
            "--- runtime's standard error ---\n{}\n",
            stderr.trim_end()
        );
    }
    let calls_made = match calls {
        1 => "1 tool call".to_owned(),
        n => format!("{n} tool calls"),
    };
    let value = match ending {
        Ending::Returned(value) => value,
        Ending::Threw { message, line } => {
            let place = line.map_or_else(String::new, |line| format!(" at line {line}"));
            return Err(ToolError::execution(format!(
                "the script failed{place}: {message} ({calls_made} made)\n{shown}"
            )));
        }
        Ending::TimedOut => {
            return Err(ToolError::execution(format!(
                "the script was stopped at its time limit of {} s ({calls_made} made); make it do less, or fewer calls one after another\n{shown}",
                timeout.as_secs_f64()
            )));
        }
        Ending::Flooded => {
            return Err(ToolError::execution(format!(
                "the script was stopped: it asked for calls much faster than it read their answers ({calls_made} made); await the calls it makes\n{shown}"
            )));
        }
        Ending::Unreadable(reason) => {
            return Err(ToolError::execution(format!(
                "the script ended, but what it returned could not be read: {reason} ({calls_made} made)\n{shown}"
            )));
        }
        Ending::Exited => {
            return Err(ToolError::execution(format!(
                "the script's runtime ended before the script finished ({calls_made} made): it exited or was killed (a limit on memory, CPU time or processes)\n{shown}"
            )));
        }
    };
    let mut text = shown;
    match &value {
        Some(value) => {
            let _ = write!(text, "--- returned ---\n{value}");
        }
        None if text.is_empty() => {
            text.push_str("(the script printed nothing and returned nothing)");
        }
        None => text.push_str("(returned nothing)"),
    }
    let _ = write!(text, "\n({calls_made})");
    let data = json!({
        "value": value,
        "output": printed,
        "tool_calls": calls,
        "duration_ms": u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX),
    });
    Ok(ToolOutput::new(text, data))
}

fn not_installed(language: ScriptLanguage, program: &std::ffi::OsStr) -> ToolError {
    ToolError::execution(format!(
        "`{}` is not installed here, so {} scripts cannot run",
        program.to_string_lossy(),
        language.display_name()
    ))
}

/// Aborts a spawned task when dropped.
struct AbortOnDrop<T>(tokio::task::JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Keeps the runtime's standard error to `limit` bytes.
async fn capture(mut stderr: impl AsyncRead + Unpin, limit: usize) -> Capture {
    use tokio::io::AsyncReadExt as _;
    let mut kept = Capture::new(limit);
    let mut buf = vec![0u8; 8 * 1024];
    let quiet = Progress::default();
    while let Ok(n @ 1..) = stderr.read(&mut buf).await {
        kept.push(&buf[..n], &quiet);
    }
    kept
}
