//! `code_exec` and `bash`: a program run confined by the OS sandbox, in a fresh directory
//! inside the allowed paths, with a time limit (everything it started killed), capped output,
//! a cleared environment and no standard input.

use std::ffi::OsString;
use std::fmt::Write as _;
use std::process::Stdio;
use std::time::{Duration, Instant};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncRead, AsyncReadExt};

use super::Builtin;
use super::capture::Capture;
use super::workspace::{locate, roots};
use crate::context::{Progress, State, ToolContext};
use crate::error::ToolError;
use crate::result::ToolOutput;
use crate::sandbox::{FAILURE_PREFIX, NOT_FOUND, SETUP_FAILED, Sandbox, SandboxError};
use crate::server::ToolServerBuilder;
use crate::tool;
use crate::util::process::ProcessGroup;

/// How long to wait for the output pipes to close once the program has ended or was killed;
/// a descendant that left the process group may hold them open.
const DRAIN_GRACE: Duration = Duration::from_secs(1);

/// A language `code_exec` runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Language {
    /// Python 3 (`python3` by default).
    Python,
    /// JavaScript, run by Node.js (`node` by default).
    Javascript,
    /// A shell script (`bash` by default).
    Shell,
}

impl Language {
    fn file_name(self) -> &'static str {
        match self {
            Self::Python => "main.py",
            Self::Javascript => "main.js",
            Self::Shell => "main.sh",
        }
    }
}

/// The code-execution tools and their limits, served by
/// [`with_builtin`](ToolServerBuilder::with_builtin): `CodeExec::new()` serves `code_exec`,
/// and `CodeExec::new().bash_only()` serves `bash`.
///
/// Each run gets a new empty directory inside the working directory (or the first allowed
/// directory), removed afterwards; standard input is closed; the environment holds only the
/// variables allowed here (`PATH`, `HOME`, `LANG`, `LC_ALL`, `LC_CTYPE`, `TZ` by default)
/// and `TMPDIR` pointing into the run's directory. At the time limit, or when the program
/// ends, its whole process group is killed: nothing it started in the background lives on.
/// Standard output and error are each kept to a cap (the start and the end; the middle is
/// counted and left out) and streamed as [`Progress`] chunks while the program runs.
///
/// Every run is confined by a [`Sandbox`] (the default policy unless
/// [`sandbox`](Self::sandbox) sets another): it reads the system directories and its
/// interpreter's installation, writes its run directory and the call's allowed directories
/// (a `.git` at their top stays read-only), has no network, sees only its own processes, and
/// is held to the policy's limits on processes, memory, CPU time and open files. Where the
/// kernel cannot enforce that, runs are refused with an error saying what is missing, unless
/// the application chose [`Sandbox::none`].
///
/// Serving it also makes the process non-dumpable (as `ssh-agent` makes itself), so that
/// with [`Sandbox::none`] the programs it runs cannot read the process's environment or
/// memory through `/proc` (model API keys, bearer tokens) either; it writes no core dump.
///
/// ```
/// use aleph_tools::builtin::CodeExec;
/// use aleph_tools::prelude::*;
/// use std::time::Duration;
///
/// let server = AlephToolServer::builder()
///     .with_builtin(
///         CodeExec::new()
///             .default_timeout(Duration::from_secs(10))
///             .output_limit(16 * 1024)
///             .allow_env(["VIRTUAL_ENV"]),
///     )
///     .build()?;
/// assert!(server.contains("code_exec"));
/// # Ok::<(), aleph_tools::RegistryError>(())
/// ```
#[derive(Debug, Clone)]
pub struct CodeExec {
    default_timeout: Duration,
    max_timeout: Duration,
    output_limit: usize,
    env: Vec<String>,
    python: OsString,
    node: OsString,
    shell: OsString,
    bash_only: bool,
    sandbox: Sandbox,
}

impl Default for CodeExec {
    fn default() -> Self {
        Self {
            default_timeout: Duration::from_secs(30),
            max_timeout: Duration::from_mins(10),
            output_limit: 32 * 1024,
            env: ["PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TZ"]
                .map(str::to_owned)
                .to_vec(),
            python: "python3".into(),
            node: "node".into(),
            shell: "bash".into(),
            bash_only: false,
            sandbox: Sandbox::new(),
        }
    }
}

impl CodeExec {
    /// `code_exec` with the defaults: 30 s per run unless the model asks for more (up to 10
    /// minutes), 32 KiB kept of each of standard output and error.
    pub fn new() -> Self {
        Self::default()
    }

    /// Serves `bash` (a shell command) instead of `code_exec`.
    #[must_use]
    pub fn bash_only(mut self) -> Self {
        self.bash_only = true;
        self
    }

    /// The time limit of a run that asks for none.
    #[must_use]
    pub fn default_timeout(mut self, timeout: Duration) -> Self {
        self.default_timeout = timeout;
        self
    }

    /// The longest time limit a run may ask for.
    #[must_use]
    pub fn max_timeout(mut self, timeout: Duration) -> Self {
        self.max_timeout = timeout;
        self
    }

    /// How many bytes of each of standard output and standard error are kept.
    #[must_use]
    pub fn output_limit(mut self, bytes: usize) -> Self {
        self.output_limit = bytes.max(2);
        self
    }

    /// Passes these variables of the host's environment to programs as well (when set).
    #[must_use]
    pub fn allow_env(mut self, names: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.env.extend(names.into_iter().map(Into::into));
        self
    }

    /// The program that runs Python (`python3`).
    #[must_use]
    pub fn python(mut self, program: impl Into<OsString>) -> Self {
        self.python = program.into();
        self
    }

    /// The program that runs JavaScript (`node`).
    #[must_use]
    pub fn node(mut self, program: impl Into<OsString>) -> Self {
        self.node = program.into();
        self
    }

    /// The shell (`bash`).
    #[must_use]
    pub fn shell(mut self, program: impl Into<OsString>) -> Self {
        self.shell = program.into();
        self
    }

    /// The sandbox policy runs are confined by; the run directory and the call's allowed
    /// directories are added to its writable paths. [`Sandbox::none`] runs programs with the
    /// host's full rights.
    #[must_use]
    pub fn sandbox(mut self, policy: Sandbox) -> Self {
        self.sandbox = policy;
        self
    }

    fn program(&self, language: Language) -> &OsString {
        match language {
            Language::Python => &self.python,
            Language::Javascript => &self.node,
            Language::Shell => &self.shell,
        }
    }
}

impl Builtin for CodeExec {
    fn add_to(self, builder: ToolServerBuilder) -> ToolServerBuilder {
        guard_process();
        if self.bash_only {
            builder.with_state(BashSettings(self)).with_tool(BashTool)
        } else {
            builder
                .with_state(CodeExecSettings(self))
                .with_tool(CodeExecTool)
        }
    }
}

/// The settings `code_exec` runs with (apart from `bash`'s, so each can have its own).
pub(crate) struct CodeExecSettings(CodeExec);

/// The settings `bash` runs with.
pub(crate) struct BashSettings(CodeExec);

/// Run a program in Python, JavaScript (Node.js) or shell, and get its exit code and output.
///
/// The program runs in a new empty directory that is deleted afterwards; the working
/// directory with the user's files is its parent (`..`). Nothing can be typed into it
/// (standard input is closed). Background processes it starts are ended with it. It runs in a
/// sandbox: files outside the working directory and the system's, the network and other
/// processes are out of reach. Print what you need to see: long output is cut in the middle.
#[tool(crate = crate, register = false, destructive, open_world)]
pub(crate) async fn code_exec(
    /// The language of `code`
    language: Language,
    /// The whole program
    code: String,
    /// Seconds the program may run before it is killed (30 when left out)
    #[schemars(range(min = 1))]
    timeout_secs: Option<u64>,
    config: State<CodeExecSettings>,
    progress: Progress,
    ctx: &ToolContext,
) -> Result<ToolOutput, ToolError> {
    run(&config.0, ctx, &progress, language, &code, timeout_secs).await
}

/// Run a bash command, and get its exit code and output.
///
/// The command runs in a new empty directory that is deleted afterwards; the working
/// directory with the user's files is its parent (`..`), so start with `cd ..` to work on
/// them. Nothing can be typed into it (standard input is closed). Background processes it
/// starts are ended with it. It runs in a sandbox: files outside the working directory and
/// the system's, the network and other processes are out of reach. Long output is cut in the
/// middle.
#[tool(crate = crate, register = false, destructive, open_world)]
pub(crate) async fn bash(
    /// The command, or several lines of script
    command: String,
    /// Seconds the command may run before it is killed (30 when left out)
    #[schemars(range(min = 1))]
    timeout_secs: Option<u64>,
    config: State<BashSettings>,
    progress: Progress,
    ctx: &ToolContext,
) -> Result<ToolOutput, ToolError> {
    run(
        &config.0,
        ctx,
        &progress,
        Language::Shell,
        &command,
        timeout_secs,
    )
    .await
}

/// What a run produced.
#[derive(Debug, Serialize)]
struct Run {
    /// The exit code, when the program exited by itself.
    exit_code: Option<i32>,
    /// Whether the program was killed at its time limit.
    timed_out: bool,
    stdout: String,
    stderr: String,
    /// Bytes of standard output left out.
    stdout_omitted: u64,
    /// Bytes of standard error left out.
    stderr_omitted: u64,
    duration_ms: u64,
}

async fn run(
    config: &CodeExec,
    ctx: &ToolContext,
    progress: &Progress,
    language: Language,
    code: &str,
    timeout_secs: Option<u64>,
) -> Result<ToolOutput, ToolError> {
    let timeout = timeout_secs
        .map_or(config.default_timeout, Duration::from_secs)
        .min(config.max_timeout);
    let base = match locate(ctx, ".") {
        Ok(place) => place.full,
        Err(_) => roots(ctx)?.into_iter().next().ok_or_else(|| {
            ToolError::execution("no allowed directory exists to run the program in")
        })?,
    };
    let dir = tempfile::Builder::new()
        .prefix(".aleph-run-")
        .tempdir_in(&base)
        .map_err(|e| {
            ToolError::execution(format!(
                "cannot create a directory to run in inside `{}`: {e}",
                base.display()
            ))
        })?;
    let script = dir.path().join(language.file_name());
    std::fs::write(&script, code)
        .map_err(|e| ToolError::execution(format!("cannot write the program: {e}")))?;
    let program = config.program(language);
    let mut policy = config.sandbox.clone();
    if policy.is_enabled() {
        for root in roots(ctx)? {
            policy = policy.write(root);
        }
    }
    let mut command = policy.command(program).map_err(|error| match error {
        SandboxError::NotFound(_) => not_installed(program, language),
        other => ToolError::execution(other.to_string()),
    })?;
    command
        .arg(&script)
        .current_dir(dir.path())
        .env_clear()
        .envs(
            config
                .env
                .iter()
                .filter_map(|name| std::env::var_os(name).map(|value| (name, value))),
        )
        .env("TMPDIR", dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    if language == Language::Python {
        command.env("PYTHONUNBUFFERED", "1");
        command.env("PYTHONDONTWRITEBYTECODE", "1");
    }
    #[cfg(unix)]
    command.process_group(0);
    let started = Instant::now();
    let child = command.spawn().map_err(|e| {
        let program = program.to_string_lossy();
        if e.kind() == std::io::ErrorKind::NotFound {
            not_installed(config.program(language), language)
        } else {
            ToolError::execution(format!("`{program}` could not be started: {e}"))
        }
    })?;
    let (status, timed_out, out, err) =
        supervise(child, timeout, config.output_limit, progress).await?;
    let exit_code = match status {
        Some(Ok(status)) if !timed_out => status.code(),
        _ => None,
    };
    // The launcher's own failures are the tool's, not the program's.
    if let Some(code @ (NOT_FOUND | SETUP_FAILED)) = exit_code
        && let Some(reason) = err
            .text()
            .lines()
            .find_map(|line| line.strip_prefix(FAILURE_PREFIX).map(str::to_owned))
    {
        return Err(if code == NOT_FOUND {
            not_installed(program, language)
        } else {
            ToolError::execution(format!("the sandbox could not be set up: {reason}"))
        });
    }
    let run = Run {
        exit_code,
        timed_out,
        stdout_omitted: out.omitted,
        stderr_omitted: err.omitted,
        stdout: out.text(),
        stderr: err.text(),
        duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
    };
    drop(dir);
    let text = describe(&run, timeout);
    let data = serde_json::to_value(&run).map_err(ToolError::execution)?;
    Ok(ToolOutput::new(text, data))
}

fn not_installed(program: &OsString, language: Language) -> ToolError {
    ToolError::execution(format!(
        "`{}` is not installed here, so {language:?} code cannot run",
        program.to_string_lossy()
    ))
}

/// How a run ended: the exit status (when it was waited for), whether the time limit killed
/// it, and its output.
type Ending = (
    Option<std::io::Result<std::process::ExitStatus>>,
    bool,
    Capture,
    Capture,
);

/// Reads the program's output while it runs, ends it at `timeout`, and kills its process
/// group as soon as it ends.
async fn supervise(
    mut child: tokio::process::Child,
    timeout: Duration,
    output_limit: usize,
    progress: &Progress,
) -> Result<Ending, ToolError> {
    // From here on, dropping this future (a server time limit, a cancelled call) kills the
    // whole group.
    let mut group = ProcessGroup::new(child.id());
    let (Some(mut stdout), Some(mut stderr)) = (child.stdout.take(), child.stderr.take()) else {
        return Err(ToolError::execution(
            "the program's output could not be read",
        ));
    };
    let mut out = Capture::new(output_limit);
    let mut err = Capture::new(output_limit);
    let (mut out_open, mut err_open) = (true, true);
    let (mut out_buf, mut err_buf) = (vec![0u8; 16 * 1024], vec![0u8; 16 * 1024]);
    let limit = tokio::time::sleep(timeout);
    tokio::pin!(limit);
    let mut status = None;
    let mut timed_out = false;
    let mut drain_until: Option<tokio::time::Instant> = None;
    while out_open || err_open || status.is_none() {
        let drain = async {
            match drain_until {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            read = read_some(&mut stdout, &mut out_buf), if out_open => match read {
                Some(bytes) => out.push(bytes, progress),
                None => out_open = false,
            },
            read = read_some(&mut stderr, &mut err_buf), if err_open => match read {
                Some(bytes) => err.push(bytes, progress),
                None => err_open = false,
            },
            exited = child.wait(), if status.is_none() => {
                // What the program started in the background ends with it.
                group.kill_and_forget();
                status = Some(exited);
                drain_until.get_or_insert_with(|| tokio::time::Instant::now() + DRAIN_GRACE);
            },
            () = &mut limit, if !timed_out => {
                timed_out = true;
                group.kill();
                drain_until.get_or_insert_with(|| tokio::time::Instant::now() + DRAIN_GRACE);
            },
            () = drain => {
                // A process that left the group holds the pipes: stop reading.
                if status.is_none() {
                    group.kill();
                    status = Some(child.wait().await);
                    group.kill_and_forget();
                }
                break;
            },
        }
    }
    Ok((status, timed_out, out, err))
}

/// Reads what is available; `None` at the end (or on a read error).
async fn read_some<'b>(pipe: &mut (impl AsyncRead + Unpin), buf: &'b mut [u8]) -> Option<&'b [u8]> {
    match pipe.read(buf).await {
        Ok(0) | Err(_) => None,
        Ok(n) => Some(&buf[..n]),
    }
}

/// The text the model reads.
fn describe(run: &Run, timeout: Duration) -> String {
    let mut text = match (run.timed_out, run.exit_code) {
        (true, _) => format!(
            "timed out after {} s: the program and everything it started were killed",
            timeout.as_secs_f64()
        ),
        (false, Some(code)) => format!("exit code {code}"),
        (false, None) => "killed by a signal".to_owned(),
    };
    for (name, body) in [("stdout", &run.stdout), ("stderr", &run.stderr)] {
        if !body.is_empty() {
            let _ = write!(text, "\n--- {name} ---\n{body}");
            if !body.ends_with('\n') {
                text.push('\n');
            }
        }
    }
    if run.stdout.is_empty() && run.stderr.is_empty() {
        text.push_str("\n(no output)");
    }
    text
}

/// Keeps the programs `bash` and `code_exec` run out of this process's memory and
/// environment (model API keys, bearer tokens): the process is made non-dumpable, as
/// `ssh-agent` makes itself, so `/proc/<pid>/environ`, `/proc/<pid>/mem` and `ptrace` are
/// refused to every process without `CAP_SYS_PTRACE` (root has it: run as another user). A
/// side effect: the process writes no core dump.
pub(super) fn guard_process() {
    #[cfg(target_os = "linux")]
    if let Err(error) = nix::sys::prctl::set_dumpable(false) {
        tracing::warn!(
            "cannot make the process non-dumpable ({error}): programs bash and code_exec run may read its environment"
        );
    }
}
