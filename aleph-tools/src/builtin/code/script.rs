//! One run of a code-mode script: the runtime started in the sandbox, the line protocol it
//! speaks, the tool calls it asks for (each through the server's whole pipeline as
//! [`Caller::CodeExecution`]), and the limits that hold it.

use std::collections::{HashSet, VecDeque};
use std::fmt::Write as _;
use std::process::Stdio;
use std::time::{Duration, Instant};

use futures_util::StreamExt as _;
use futures_util::stream::FuturesUnordered;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::io::{AsyncBufRead, AsyncBufReadExt as _, AsyncRead, AsyncWriteExt as _, BufReader};
use tokio::sync::mpsc;

use super::{CodeMode, ScriptLanguage};
use crate::builtin::capture::Capture;
use crate::context::{Caller, Progress, ToolContext};
use crate::error::ToolError;
use crate::process::ProcessGroup;
use crate::result::ToolOutput;
use crate::sandbox::{FAILURE_PREFIX, NOT_FOUND, SETUP_FAILED, SandboxError};
use crate::server::AlephToolServer;

/// The longest line the script may write; longer lines are cut and read as output.
const LINE_LIMIT: usize = 4 << 20;

/// How long the runtime's standard error may stay open once the run is over.
const STDERR_GRACE: Duration = Duration::from_millis(500);

/// One line the runtime wrote, as the protocol reads it.
#[derive(Debug, Deserialize)]
#[serde(tag = "t", rename_all = "lowercase")]
enum Message {
    Call {
        id: u64,
        tool: String,
        #[serde(default)]
        args: Value,
    },
    Log {
        text: String,
    },
    Done {
        #[serde(default)]
        value: Option<Value>,
    },
    Error {
        message: String,
        #[serde(default)]
        line: Option<u64>,
    },
}

/// What came out of the runtime's standard output.
enum Incoming {
    Message(Message),
    /// A line that is not the protocol's (written past the `tools` object), shown as output.
    Text(Vec<u8>),
}

/// How the script ended.
enum Ending {
    Returned(Option<Value>),
    Threw {
        message: String,
        line: Option<u64>,
    },
    TimedOut,
    /// The runtime ended without saying how the script did.
    Exited,
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
    let child_ctx = ctx.clone().with_caller(Caller::CodeExecution);
    let open: Vec<String> = super::open_tools(&server.list_tools_for_context(&child_ctx))
        .map(|definition| definition.name.clone())
        .collect();
    let dir = tempfile::Builder::new()
        .prefix("aleph-code-")
        .tempdir()
        .map_err(|e| {
            ToolError::execution(format!("cannot create a directory for the script: {e}"))
        })?;
    let runner = dir.path().join(language.runner_name());
    std::fs::write(&runner, language.runner())
        .map_err(|e| ToolError::execution(format!("cannot write the script's runner: {e}")))?;
    let program = mode.program(language);
    let mut command = mode.sandbox.command(program).map_err(|error| match error {
        SandboxError::NotFound(_) => not_installed(language, program),
        other => ToolError::execution(other.to_string()),
    })?;
    command
        .arg(&runner)
        .current_dir(dir.path())
        .env_clear()
        .envs(std::env::var_os("PATH").map(|path| ("PATH", path)))
        .env("HOME", dir.path())
        .env("TMPDIR", dir.path())
        .env("LANG", "C.UTF-8")
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env("PYTHONIOENCODING", "utf-8")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    #[cfg(unix)]
    command.process_group(0);
    let mut child = command.spawn().map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            not_installed(language, program)
        } else {
            ToolError::execution(format!(
                "`{}` could not be started: {e}",
                program.to_string_lossy()
            ))
        }
    })?;
    // From here on, leaving this function (the end, a server time limit, a cancelled call)
    // kills the runtime and everything it started.
    let group = ProcessGroup::new(child.id());
    let (Some(stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Err(ToolError::execution(
            "the script's runtime could not be spoken to",
        ));
    };
    let start = json!({ "code": code, "tools": open, "valueLimit": mode.output_limit });
    let (answers, answers_rx) = mpsc::unbounded_channel::<String>();
    let _ = answers.send(start.to_string());
    let writer = AbortOnDrop(tokio::spawn(write_lines(stdin, answers_rx)));
    let (lines_tx, mut lines) = mpsc::channel(16);
    let reader = AbortOnDrop(tokio::spawn(read_lines(BufReader::new(stdout), lines_tx)));
    let errors = tokio::spawn(capture(stderr, mode.output_limit));

    let progress = ctx.progress();
    let started = Instant::now();
    let mut session = Session {
        server,
        ctx: child_ctx,
        open: open.iter().cloned().collect(),
        open_list: open,
        max_calls: mode.max_tool_calls,
        calls: 0,
    };
    let mut output = Capture::new(mode.output_limit);
    let mut queued: VecDeque<Asked> = VecDeque::new();
    let mut running = FuturesUnordered::new();
    let limit = tokio::time::sleep(timeout);
    tokio::pin!(limit);
    let ending = loop {
        tokio::select! {
            incoming = lines.recv() => match incoming {
                None => break Ending::Exited,
                Some(Incoming::Text(mut bytes)) => {
                    bytes.push(b'\n');
                    output.push(&bytes, &progress);
                }
                Some(Incoming::Message(message)) => match message {
                    Message::Log { text } => output.push(text.as_bytes(), &progress),
                    Message::Done { value } => break Ending::Returned(value),
                    Message::Error { message, line } => break Ending::Threw { message, line },
                    Message::Call { id, tool, args } => {
                        queued.push_back(Asked { id, tool, args });
                    }
                },
            },
            Some((id, answer)) = running.next() => {
                let _ = answers.send(answer_line(id, answer));
            },
            () = &mut limit => break Ending::TimedOut,
        }
        while running.len() < mode.parallel_calls
            && let Some(asked) = queued.pop_front()
        {
            match session.admit(&asked, &progress) {
                Ok(()) => running.push(session.call(asked)),
                Err(refusal) => {
                    let _ = answers.send(answer_line(asked.id, Err(refusal)));
                }
            }
        }
    };
    let elapsed = started.elapsed();
    group.kill();
    drop((running, reader, writer));
    let _ = tokio::time::timeout(STDERR_GRACE, child.wait()).await;
    drop(group);
    let stderr = match tokio::time::timeout(STDERR_GRACE, errors).await {
        Ok(Ok(capture)) => capture.text(),
        _ => String::new(),
    };
    drop(dir);
    let calls = session.calls;
    if matches!(ending, Ending::Exited)
        && let Some(reason) = stderr
            .lines()
            .find_map(|line| line.strip_prefix(FAILURE_PREFIX))
    {
        return Err(
            match child.try_wait().ok().flatten().and_then(|s| s.code()) {
                Some(NOT_FOUND) => not_installed(language, program),
                Some(SETUP_FAILED) | None | Some(_) => {
                    ToolError::execution(format!("the sandbox could not be set up: {reason}"))
                }
            },
        );
    }
    finish(ending, &output, &stderr, calls, timeout, elapsed)
}

/// What a run's tool calls share: the server, the context they run with, the tools open to
/// the script and the count against the limit.
struct Session<'a> {
    server: &'a AlephToolServer,
    ctx: ToolContext,
    open: HashSet<String>,
    open_list: Vec<String>,
    max_calls: usize,
    calls: usize,
}

impl Session<'_> {
    /// `Ok` when the script may make this call; otherwise why not, for the script.
    fn admit(&mut self, asked: &Asked, progress: &Progress) -> Result<(), String> {
        if !self.open.contains(&asked.tool) {
            let closest =
                crate::names::closest(&asked.tool, self.open_list.iter().map(String::as_str), 1);
            let hint = closest
                .first()
                .map_or_else(String::new, |name| format!(" (did you mean `{name}`?)"));
            let open = if self.open_list.is_empty() {
                "no tool is open to code".to_owned()
            } else {
                format!("the tools open to code are {}", self.open_list.join(", "))
            };
            return Err(format!(
                "`{}` is not a tool this script may call{hint}; {open}",
                asked.tool
            ));
        }
        if self.calls >= self.max_calls {
            return Err(format!(
                "the script already made {} tool calls, the most one script may make; do the rest in another script",
                self.max_calls
            ));
        }
        self.calls += 1;
        progress.report(
            self.calls as f64,
            None,
            Some(&format!("calling {}", asked.tool)),
        );
        Ok(())
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

fn answer_line(id: u64, answer: Result<Value, String>) -> String {
    match answer {
        Ok(value) => json!({ "id": id, "ok": true, "value": value }),
        Err(error) => json!({ "id": id, "ok": false, "error": error }),
    }
    .to_string()
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
            text.push_str("(the script printed nothing and returned nothing)")
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

/// Writes each line to the runtime's standard input until the channel closes or the pipe
/// does.
async fn write_lines(
    mut stdin: tokio::process::ChildStdin,
    mut lines: mpsc::UnboundedReceiver<String>,
) {
    while let Some(mut line) = lines.recv().await {
        line.push('\n');
        if stdin.write_all(line.as_bytes()).await.is_err() {
            return;
        }
    }
}

/// Reads the runtime's standard output line by line, each kept to [`LINE_LIMIT`] bytes (a
/// longer line is cut and read as output), until it closes or nobody listens.
async fn read_lines(mut stdout: impl AsyncBufRead + Unpin, lines: mpsc::Sender<Incoming>) {
    let mut line = Vec::new();
    loop {
        line.clear();
        let mut cut = false;
        loop {
            let Ok(buf) = stdout.fill_buf().await else {
                return;
            };
            if buf.is_empty() {
                if line.is_empty() {
                    return;
                }
                break;
            }
            let newline = buf.iter().position(|&b| b == b'\n');
            let piece = &buf[..newline.unwrap_or(buf.len())];
            let room = LINE_LIMIT.saturating_sub(line.len());
            line.extend_from_slice(&piece[..piece.len().min(room)]);
            cut |= piece.len() > room;
            let used = newline.map_or(buf.len(), |at| at + 1);
            stdout.consume(used);
            if newline.is_some() {
                break;
            }
        }
        if line.is_empty() {
            continue;
        }
        let incoming = match serde_json::from_slice::<Message>(&line) {
            Ok(message) if !cut => Incoming::Message(message),
            _ => {
                if cut {
                    line.extend_from_slice(b" [... the rest of this line was left out]");
                }
                Incoming::Text(std::mem::take(&mut line))
            }
        };
        if lines.send(incoming).await.is_err() {
            return;
        }
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
