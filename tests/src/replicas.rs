//! Replicas of `aleph-tools serve --http` and haproxy in front of them, round robin with no
//! stickiness, each replica checked at `/healthz`: what the replica test and benchmark run.

use std::fmt::Write as _;
use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A replica, stopped when dropped.
pub struct Replica {
    child: Child,
    addr: String,
}

impl Replica {
    /// Starts `program serve --http 127.0.0.1:0 --no-watch` in `work` with `config` (and
    /// `env` added to its environment), and waits until it says where it serves.
    ///
    /// # Panics
    ///
    /// When it cannot start or ends before serving.
    pub fn start(program: &Path, work: &Path, config: &Path, env: &[(&str, &str)]) -> Self {
        let mut child = Command::new(program)
            .args(["serve", "--http", "127.0.0.1:0", "--no-watch"])
            .current_dir(work)
            .env("HOME", work)
            .env("ALEPH_TOOLS_CONFIG", config)
            .envs(env.iter().copied())
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("RUST_LOG")
            .stderr(Stdio::piped())
            .spawn()
            .expect("the replica starts");
        let mut stderr = BufReader::new(child.stderr.take().expect("its standard error"));
        let mut line = String::new();
        let addr = loop {
            line.clear();
            let read = stderr
                .read_line(&mut line)
                .expect("its standard error reads");
            assert!(read > 0, "a replica ended before it served");
            if let Some((_, rest)) = line.split_once("MCP at http://") {
                break rest.split('/').next().unwrap_or_default().to_owned();
            }
        };
        // The rest of its standard error is drained, so it never blocks writing to it.
        std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
        Self { child, addr }
    }

    /// `127.0.0.1:PORT`, where it serves.
    pub fn addr(&self) -> &str {
        &self.addr
    }

    /// Kills it at once (`SIGKILL`), as a crash or an unplugged machine would stop it.
    ///
    /// # Panics
    ///
    /// When it cannot be killed.
    pub fn kill(&mut self) {
        self.child.kill().expect("the replica is killed");
        self.child.wait().expect("the replica is reaped");
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// haproxy in front of replicas, stopped when dropped.
pub struct Haproxy {
    child: Child,
    port: u16,
}

impl Haproxy {
    /// Starts haproxy (Debian's package) on a free loopback port, sending each request to
    /// the next of `replicas` and leaving out one that fails its `/healthz` check; its
    /// configuration is written to `dir/haproxy.cfg`.
    ///
    /// # Panics
    ///
    /// When haproxy is not installed or does not listen within ten seconds.
    pub fn start(dir: &Path, replicas: &[&str]) -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .expect("a free port")
            .port();
        let mut config = format!(
            "global\n    maxconn 1024\n\ndefaults\n    mode http\n    timeout connect 2s\n    timeout client 60s\n    timeout server 60s\n    retries 3\n    option redispatch\n\nfrontend mcp\n    bind 127.0.0.1:{port}\n    default_backend replicas\n\nbackend replicas\n    balance roundrobin\n    option httpchk GET /healthz\n"
        );
        for (n, addr) in replicas.iter().enumerate() {
            let _ = writeln!(
                config,
                "    server replica{n} {addr} check inter 200ms fall 1 rise 1"
            );
        }
        let file = dir.join("haproxy.cfg");
        std::fs::write(&file, config).expect("the configuration is written");
        let program = ["/usr/sbin/haproxy", "/usr/bin/haproxy"]
            .iter()
            .map(PathBuf::from)
            .find(|path| path.is_file())
            .unwrap_or_else(|| PathBuf::from("haproxy"));
        let child = Command::new(program)
            .arg("-f")
            .arg(&file)
            .arg("-db")
            .stdout(Stdio::null())
            .spawn()
            .expect("haproxy runs (Debian's package `haproxy`)");
        let started = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "haproxy did not listen"
            );
            std::thread::sleep(Duration::from_millis(25));
        }
        Self { child, port }
    }

    /// `http://127.0.0.1:PORT/mcp`, the replicas' MCP endpoint through the balancer.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }
}

impl Drop for Haproxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
