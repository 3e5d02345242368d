//! Programs run confined: `Sandbox::command` starts a program under a policy, and what the
//! policy does not grant fails inside the program, while the host is untouched.

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

    std::fs::remove_dir_all(&work)?;
    Ok(())
}
