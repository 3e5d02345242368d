//! Programs run confined: `Sandbox::command` starts a program under a policy, and what the
//! policy does not grant fails inside the program, while the host is untouched. With
//! `Network::proxy`, the program reaches the hosts granted, through a proxy the host runs.

use std::io::{Read as _, Write as _};
use std::process::Stdio;

use aleph_tools::sandbox::{Network, Sandbox};

async fn sh(
    policy: &Sandbox,
    dir: &std::path::Path,
    script: &str,
) -> Result<String, Box<dyn std::error::Error>> {
    let output = policy
        .command("sh")?
        .arg("-c")
        .arg(script)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .await?;
    Ok(format!(
        "{}{}(exit {})",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
        output.status.code().unwrap_or(-1)
    ))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let support = Sandbox::check()?;
    println!("this kernel enforces Landlock ABI {}", support.landlock_abi);
    let work = std::env::temp_dir().join(format!("sandbox-example-{}", std::process::id()));
    std::fs::create_dir_all(&work)?;
    let policy = Sandbox::new().network(Network::None);
    println!("policy: {}", policy.describe());

    let report = sh(&policy, &work, "echo hello > note.txt && cat note.txt").await?;
    println!("write in the working directory:\n{report}");
    assert!(report.contains("hello"));

    let report = sh(&policy, &work, "cat /etc/passwd").await?;
    println!("read /etc/passwd:\n{report}");
    assert!(report.contains("Permission denied"));

    let report = sh(&policy, &work, "echo x > /tmp/outside.txt").await?;
    println!("write outside:\n{report}");
    assert!(report.contains("Permission denied"));

    let report = sh(&policy, &work, "ls /proc | grep -c '^[0-9]'; echo pid $$").await?;
    println!("its own /proc:\n{report}");

    // A server on the host's loopback, reached through the proxy by the one host granted.
    let server = std::net::TcpListener::bind("127.0.0.1:0")?;
    let port = server.local_addr()?.port();
    std::thread::spawn(move || {
        for mut stream in server.incoming().flatten() {
            let mut request = [0_u8; 4096];
            let _ = stream.read(&mut request);
            let _ = stream.write_all(b"HTTP/1.0 200 OK\r\n\r\nhello from the host\n");
        }
    });
    let proxied = Sandbox::new().network(Network::proxy(["127.0.0.1"]));
    println!("policy: {}", proxied.describe());
    if which("curl") {
        let script =
            format!("curl -sS http://127.0.0.1:{port}/; curl -sS http://localhost:{port}/ || true");
        let report = sh(&proxied, &work, &script).await?;
        println!("through the proxy:\n{report}");
        assert!(report.contains("hello from the host"));
        assert!(report.contains("proxy refused localhost"));
    } else {
        println!("(curl is not installed: the proxy's part is left out)");
    }

    std::fs::remove_dir_all(&work)?;
    Ok(())
}

fn which(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()))
}
