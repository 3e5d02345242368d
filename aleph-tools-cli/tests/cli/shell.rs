//! The completion scripts and the manual page the command prints, used by the programs that
//! read them: bash completing words, `man` rendering the page.

#![allow(missing_docs)]

use std::process::Command;

fn printed(args: &[&str]) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_aleph-tools"))
        .args(args)
        .env_remove("ALEPH_TOOLS_CONFIG")
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

/// What bash offers for the words `line` when completing its last one.
fn bash_completes(script: &std::path::Path, line: &[&str]) -> Vec<String> {
    let words: Vec<String> = line.iter().map(|word| format!("'{word}'")).collect();
    let current = line.len() - 1;
    let check = format!(
        "source '{}'; COMP_WORDS=({}); COMP_CWORD={current}; _aleph__tools aleph-tools '{}' '{}'; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        script.display(),
        words.join(" "),
        line[current],
        line[current - 1],
    );
    let output = Command::new("bash").arg("-c").arg(check).output().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn bash_completes_subcommands_options_and_values_at_every_depth() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("aleph-tools.bash");
    std::fs::write(&script, printed(&["completions", "bash"])).unwrap();
    let offered = bash_completes(&script, &["aleph-tools", "ins"]);
    assert_eq!(offered, ["install-client"]);
    let offered = bash_completes(&script, &["aleph-tools", "serve", "--st"]);
    assert_eq!(offered, ["--stdio"]);
    let offered = bash_completes(&script, &["aleph-tools", "install-client", "c"]);
    assert_eq!(offered, ["claude", "claude-code", "cursor"]);
    let offered = bash_completes(&script, &["aleph-tools", "plugins", "un"]);
    assert_eq!(offered, ["uninstall"]);
}

#[test]
fn every_shell_gets_a_script_and_the_manual_page_renders() {
    for shell in ["zsh", "fish", "powershell", "elvish"] {
        let script = printed(&["completions", shell]);
        assert!(script.contains("install-client"), "{shell}: {script}");
    }
    let page = printed(&["man"]);
    assert!(page.contains(".TH aleph-tools 1"), "{page}");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("aleph-tools.1");
    std::fs::write(&file, &page).unwrap();
    // Rendered by man(1) where it is installed.
    if let Ok(output) = Command::new("man")
        .arg("-l")
        .arg(&file)
        .env("MANWIDTH", "100")
        .env("MANPAGER", "cat")
        .output()
    {
        let text = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(text.contains("General Commands Manual"), "{text}");
        assert!(text.contains("install-client"), "{text}");
    }
}

#[test]
fn help_names_the_environment_and_every_confirming_subcommand_takes_y() {
    let help = printed(&["--help"]);
    for variable in [
        "ALEPH_TOOLS_CONFIG",
        "RUST_LOG",
        "OPENAI_API_KEY",
        "XDG_CONFIG_HOME",
    ] {
        assert!(help.contains(variable), "{variable}: {help}");
    }
    for subcommand in [
        &["serve", "--help"][..],
        &["tools", "call", "--help"],
        &["install-client", "--help"],
    ] {
        let help = printed(subcommand);
        assert!(help.contains("-y, --yes"), "{subcommand:?}: {help}");
    }
}
