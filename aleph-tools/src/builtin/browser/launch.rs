//! Starting the browser: where Chromium is, the flags it runs with, and the process, in the
//! OS sandbox unless the settings turn it off, spoken to over its debugging pipe.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::json;
use tokio::io::{AsyncBufReadExt as _, BufReader};
use tokio::sync::mpsc;

use super::Browser;
use super::cdp::{Connection, Event};
use crate::sandbox::Network;
use crate::util::process::ProcessGroup;

/// How long the browser may take to start and answer its first command.
const START_TIME: Duration = Duration::from_secs(30);

/// The lines of the browser's standard error kept, to say why it failed.
const KEPT_LINES: usize = 12;

/// Where Chromium is looked for when the settings name no program: Debian's binary (its
/// `/usr/bin/chromium` is a script reading configuration outside the sandbox), then the usual
/// names on the `PATH`.
const CANDIDATES: &[&str] = &[
    "/usr/lib/chromium/chromium-headless-shell",
    "chrome-headless-shell",
    "/usr/lib/chromium/chromium",
    "chromium",
    "chromium-browser",
    "google-chrome-stable",
    "google-chrome",
    "chrome",
];

/// Turns the standard streams the sandbox passes on into the debugging pipe (Chromium reads
/// commands on descriptor 3 and writes on 4), points the browser at the sandbox's proxy when
/// it has one (loopback included: Chromium would otherwise reach it directly), and runs it.
const SHELL: &str = r#"exec 3<&0 4>&1 </dev/null >&2
if [ -n "$HTTP_PROXY" ]; then
  exec "$0" "$@" --proxy-server="$HTTP_PROXY" --proxy-bypass-list="<-loopback>"
fi
exec "$0" "$@""#;

/// A running browser process.
pub(super) struct Process {
    pub(super) connection: Arc<Connection>,
    child: tokio::process::Child,
    group: ProcessGroup,
    stderr: Arc<Mutex<VecDeque<String>>>,
    /// The profile and working directory, removed with the process.
    _home: tempfile::TempDir,
}

impl Process {
    /// Starts the browser as `settings` say and checks it answers.
    pub(super) async fn start(
        settings: &Browser,
    ) -> Result<(Self, mpsc::UnboundedReceiver<Event>), String> {
        let program = program(settings)?;
        let home = tempfile::Builder::new()
            .prefix("aleph-browser-")
            .tempdir()
            .map_err(|error| format!("cannot make the browser's profile directory: {error}"))?;
        let mut policy = settings
            .sandbox
            .clone()
            .read("/etc/fonts")
            .read(program.parent().unwrap_or(Path::new("/")))
            .write(home.path())
            .network(if settings.allow_private {
                Network::Full
            } else {
                Network::proxy(settings.hosts.iter().cloned())
            });
        if let Some(downloads) = &settings.downloads {
            policy = policy.write(downloads);
        }
        let mut command = policy
            .std_command("sh")
            .map_err(|error| format!("cannot start the browser: {error}"))?;
        command
            .arg("-c")
            .arg(SHELL)
            .arg(&program)
            .args(flags(settings, home.path()))
            .current_dir(home.path())
            .env_clear()
            .env("HOME", home.path())
            .env("TMPDIR", home.path())
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .env("LANG", "C.UTF-8");
        let mut command = tokio::process::Command::from(command);
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        #[cfg(unix)]
        command.process_group(0);
        let mut child = command.spawn().map_err(|error| {
            format!("cannot start the browser `{}`: {error}", program.display())
        })?;
        let group = ProcessGroup::new(child.id());
        let (Some(input), Some(output), Some(errors)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err("the browser's pipes were not made".to_owned());
        };
        let stderr = Arc::new(Mutex::new(VecDeque::new()));
        tokio::spawn(keep_tail(errors, Arc::clone(&stderr)));
        let (connection, events) = Connection::new(output, input);
        let mut process = Self {
            connection,
            child,
            group,
            stderr,
            _home: home,
        };
        let version = tokio::time::timeout(
            START_TIME,
            process
                .connection
                .call(None, "Browser.getVersion", json!({})),
        )
        .await;
        match version {
            Ok(Ok(_)) => Ok((process, events)),
            Ok(Err(error)) => Err(process.failure(&error.to_string()).await),
            Err(_) => Err(process
                .failure(&format!(
                    "it did not answer within {} s",
                    START_TIME.as_secs()
                ))
                .await),
        }
    }

    /// Why the browser could not start: `what`, and the last lines it wrote.
    async fn failure(&mut self, what: &str) -> String {
        self.group.kill();
        let _ = self.child.kill().await;
        // The standard error's last lines arrive as the pipe drains.
        tokio::time::sleep(Duration::from_millis(100)).await;
        let tail = self.tail();
        if tail.is_empty() {
            format!("the browser did not start: {what}")
        } else {
            format!("the browser did not start: {what}; it said:\n{tail}")
        }
    }

    /// The last lines the browser wrote on its standard error.
    pub(super) fn tail(&self) -> String {
        let lines = self.stderr.lock().unwrap_or_else(PoisonError::into_inner);
        lines.iter().cloned().collect::<Vec<_>>().join("\n")
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.group.kill();
    }
}

/// The browser program: the one the settings name, else the first of [`CANDIDATES`] found.
fn program(settings: &Browser) -> Result<PathBuf, String> {
    if let Some(program) = &settings.program {
        return crate::sandbox::locate(program.as_os_str())
            .filter(|path| path.exists())
            .ok_or_else(|| format!("the browser `{}` is not installed here", program.display()));
    }
    CANDIDATES
        .iter()
        .filter_map(|name| crate::sandbox::locate(OsString::from(name).as_os_str()))
        .find(|path| path.is_file())
        .ok_or_else(|| {
            "no Chromium or Chrome is installed here (looked for /usr/lib/chromium/chromium, \
             chromium, chromium-browser, google-chrome-stable, google-chrome and chrome on \
             the PATH); install one (Debian: `apt install chromium`) or name the program \
             with `Browser::program`"
                .to_owned()
        })
}

/// The command line: headless, no first-run work, no traffic of its own, the profile in
/// `home`, the debugging pipe.
fn flags(settings: &Browser, home: &Path) -> Vec<OsString> {
    let mut flags: Vec<OsString> = [
        "--headless",
        "--remote-debugging-pipe",
        // Chromium's own sandbox needs namespaces the OS sandbox refuses to nest; the OS
        // sandbox confines the whole browser instead.
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--no-default-browser-check",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-default-apps",
        "--disable-extensions",
        "--disable-crash-reporter",
        "--disable-breakpad",
        "--disable-quic",
        "--disable-features=Translate,MediaRouter,OptimizationHints,AutofillServerCommunication",
        "--password-store=basic",
        "--use-mock-keychain",
        "--mute-audio",
        "--hide-scrollbars",
    ]
    .into_iter()
    .map(OsString::from)
    .collect();
    let (width, height) = settings.viewport;
    flags.push(format!("--window-size={width},{height}").into());
    let mut profile = OsString::from("--user-data-dir=");
    profile.push(home.join("profile"));
    flags.push(profile);
    flags.push("about:blank".into());
    flags
}

async fn keep_tail(stderr: tokio::process::ChildStderr, kept: Arc<Mutex<VecDeque<String>>>) {
    let mut lines = BufReader::new(stderr).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        let mut kept = kept.lock().unwrap_or_else(PoisonError::into_inner);
        if kept.len() == KEPT_LINES {
            kept.pop_front();
        }
        kept.push_back(line.chars().take(400).collect());
    }
}
