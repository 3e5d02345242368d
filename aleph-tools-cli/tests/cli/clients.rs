//! `aleph-tools install-client`: each client's file written where that client reads it, in
//! its format, with absolute paths; what the file held kept; and the entry written, started
//! as the client would start it, serving the official Python client.

#![allow(missing_docs)]

use std::path::PathBuf;
use std::process::{Command, Output};

use aleph_tools_tests::interop_peers;
use serde_json::Value;

use crate::output::stderr;

/// A home, a configuration directory and a working directory of their own.
struct Machine {
    root: tempfile::TempDir,
}

impl Machine {
    fn new() -> Self {
        let machine = Self {
            root: tempfile::tempdir().unwrap(),
        };
        for dir in ["home", "xdg", "work/space", "project"] {
            std::fs::create_dir_all(machine.path(dir)).unwrap();
        }
        machine
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.root.path().join(rel)
    }

    fn run(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_aleph-tools"))
            .args(args)
            .current_dir(self.path("work"))
            .env("HOME", self.path("home"))
            .env("XDG_CONFIG_HOME", self.path("xdg"))
            .env_remove("ALEPH_TOOLS_CONFIG")
            .output()
            .unwrap()
    }

    fn json(&self, rel: &str) -> Value {
        let text = std::fs::read_to_string(self.path(rel))
            .unwrap_or_else(|error| panic!("{rel}: {error}"));
        serde_json::from_str(&text).unwrap_or_else(|error| panic!("{rel}: {error}\n{text}"))
    }
}

#[track_caller]
fn succeeded(output: &Output) -> String {
    assert!(output.status.success(), "{}", stderr(output));
    stderr(output)
}

fn this_program() -> String {
    std::fs::canonicalize(env!("CARGO_BIN_EXE_aleph-tools"))
        .unwrap()
        .to_str()
        .unwrap()
        .to_owned()
}

#[test]
fn each_client_gets_its_file_at_its_place_in_its_format_with_absolute_paths() {
    let machine = Machine::new();
    let space = machine.path("work/space");
    let space = space.to_str().unwrap();
    let project = machine.path("project");
    let project = project.to_str().unwrap();
    let serving = |flags: &[&str], client: &[&str]| {
        let mut args = flags.to_vec();
        args.push("install-client");
        args.extend(client);
        succeeded(&machine.run(&args))
    };
    let builtin = ["--builtin", "--allowed-path", "space"];
    let expected_args = ["serve", "--stdio", "--builtin", "--allowed-path", space];

    // Claude Desktop: the user's configuration directory, `mcpServers`, and this PATH.
    serving(&builtin, &["claude"]);
    let claude = machine.json("xdg/Claude/claude_desktop_config.json");
    let entry = &claude["mcpServers"]["aleph-tools"];
    assert_eq!(entry["command"], this_program());
    assert_eq!(entry["args"], serde_json::json!(expected_args));
    assert!(
        entry["env"]["PATH"]
            .as_str()
            .is_some_and(|path| !path.is_empty())
    );
    assert!(entry.get("type").is_none(), "{entry}");

    // Cursor: the user's ~/.cursor/mcp.json, or the project's.
    serving(&builtin, &["cursor"]);
    serving(
        &["--browser"],
        &["cursor", "--project", project, "--name", "web"],
    );
    let cursor = machine.json("home/.cursor/mcp.json");
    assert_eq!(
        cursor["mcpServers"]["aleph-tools"]["args"],
        serde_json::json!(expected_args)
    );
    let cursor = machine.json("project/.cursor/mcp.json");
    assert_eq!(
        cursor["mcpServers"]["web"]["args"],
        serde_json::json!(["serve", "--stdio", "--browser"])
    );

    // VS Code: `servers`, each with its type; the user's file, or the project's.
    serving(&builtin, &["vscode"]);
    serving(&builtin, &["vscode", "--project", project]);
    for file in ["xdg/Code/User/mcp.json", "project/.vscode/mcp.json"] {
        let vscode = machine.json(file);
        let entry = &vscode["servers"]["aleph-tools"];
        assert_eq!(entry["type"], "stdio", "{file}");
        assert_eq!(entry["command"], this_program(), "{file}");
        assert_eq!(entry["args"], serde_json::json!(expected_args), "{file}");
        assert!(vscode.get("mcpServers").is_none(), "{file}");
    }

    // Claude Code: the user's ~/.claude.json (whose other keys are Claude Code's own, kept),
    // or the project's .mcp.json; --yes and the config file read are carried.
    std::fs::write(
        machine.path("work/tools.toml"),
        "[tools]\nblocked = [\"bash\"]\n",
    )
    .unwrap();
    std::fs::write(
        machine.path("home/.claude.json"),
        "{\"numStartups\": 3, \"projects\": {\"/src\": {\"mcpServers\": {}}}}",
    )
    .unwrap();
    serving(&["--config", "tools.toml"], &["claude-code", "--yes"]);
    let code = machine.json("home/.claude.json");
    let config = machine.path("work/tools.toml");
    let expected = serde_json::json!([
        "serve",
        "--stdio",
        "--yes",
        "--config",
        config.to_str().unwrap()
    ]);
    assert_eq!(code["mcpServers"]["aleph-tools"]["args"], expected);
    assert_eq!(code["mcpServers"]["aleph-tools"]["type"], "stdio");
    assert_eq!(code["numStartups"], 3);
    assert_eq!(
        code["projects"]["/src"]["mcpServers"],
        serde_json::json!({})
    );
    serving(
        &["--config", "tools.toml"],
        &["claude-code", "--yes", "--project", "."],
    );
    let project = machine.json("work/.mcp.json");
    assert_eq!(project["mcpServers"]["aleph-tools"]["args"], expected);
    assert_eq!(project["mcpServers"]["aleph-tools"]["type"], "stdio");
}

#[test]
fn what_the_file_held_is_kept_a_namesake_replaced_and_a_broken_file_left_alone() {
    let machine = Machine::new();
    let file = machine.path("project/.vscode/mcp.json");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    let theirs = "{\n  // keys the user keeps\n  \"inputs\": [],\n  \"servers\": {\n    \"github\": { \"type\": \"http\", \"url\": \"https://api.example.com/mcp\" },\n  },\n}\n";
    std::fs::write(&file, theirs).unwrap();
    let project = machine.path("project");
    let project = project.to_str().unwrap();
    let said = succeeded(&machine.run(&["install-client", "vscode", "--project", project]));
    assert!(said.contains("added `aleph-tools` in VS Code"), "{said}");
    let written = std::fs::read_to_string(&file).unwrap();
    assert!(written.contains("// keys the user keeps"), "{written}");
    assert!(
        written.contains("\"url\": \"https://api.example.com/mcp\""),
        "{written}"
    );
    assert!(written.contains("\"inputs\": []"), "{written}");
    let said = succeeded(&machine.run(&[
        "--browser",
        "install-client",
        "vscode",
        "--project",
        project,
    ]));
    assert!(said.contains("replaced `aleph-tools`"), "{said}");
    let written = std::fs::read_to_string(&file).unwrap();
    assert_eq!(written.matches("\"aleph-tools\"").count(), 1, "{written}");
    assert!(written.contains("\"--browser\""), "{written}");

    // --print shows the file and writes nothing.
    let printed = machine.run(&[
        "--builtin",
        "install-client",
        "vscode",
        "--project",
        project,
        "--print",
        "--name",
        "other",
    ]);
    assert!(printed.status.success(), "{}", stderr(&printed));
    assert!(String::from_utf8_lossy(&printed.stdout).contains("\"other\""));
    assert!(
        !std::fs::read_to_string(&file)
            .unwrap()
            .contains("\"other\"")
    );

    // A file that is not an object to add to is left as it was, and the error says how to
    // go on.
    std::fs::write(&file, "{ \"servers\": [1, 2] }").unwrap();
    let refused = machine.run(&["install-client", "vscode", "--project", project]);
    assert!(!refused.status.success());
    assert!(
        stderr(&refused).contains("mcp.json"),
        "{}",
        stderr(&refused)
    );
    assert!(stderr(&refused).contains("--print"), "{}", stderr(&refused));
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "{ \"servers\": [1, 2] }"
    );

    for (args, says) in [
        (
            vec!["install-client", "claude", "--project", project],
            "leave out --project",
        ),
        (
            vec!["install-client", "cursor", "--project", "nowhere"],
            "`nowhere` is not a directory",
        ),
        (
            vec!["install-client", "cursor", "--name", " "],
            "--name is empty",
        ),
        (
            vec!["--allowed-path", "space", "install-client", "cursor"],
            "give one of them too",
        ),
        (vec!["install-client", "notepad"], "claude-code"),
    ] {
        let refused = machine.run(&args);
        assert!(!refused.status.success(), "{args:?}");
        assert!(
            stderr(&refused).contains(says),
            "{args:?}: {}",
            stderr(&refused)
        );
    }
}

#[test]
fn the_entry_written_starts_a_server_the_official_python_client_lists() {
    let machine = Machine::new();
    std::fs::write(machine.path("work/space/notes.txt"), "hello").unwrap();
    let project = machine.path("project");
    succeeded(&machine.run(&[
        "--builtin",
        "--allowed-path",
        "space",
        "install-client",
        "cursor",
        "--project",
        project.to_str().unwrap(),
    ]));
    let entry = machine.json("project/.cursor/mcp.json")["mcpServers"]["aleph-tools"].clone();
    // Started the way the client starts it: from a directory of its own, by the entry alone.
    let script = r#"
import json, sys, anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters

entry = json.loads(sys.argv[1])

async def main():
    server = StdioServerParameters(command=entry["command"], args=entry["args"], env=entry.get("env"))
    async with Client(server, mode="legacy") as client:
        names = sorted(tool.name for tool in (await client.list_tools()).tools)
        read = await client.call_tool("file_read", {"path": sys.argv[2]})
        text = "".join(block.text for block in read.content if block.type == "text")
        print(json.dumps({"tools": names, "read": text, "error": read.is_error}))

anyio.run(main)
"#;
    let peers = interop_peers();
    let output = Command::new(peers.join(".venv/bin/python"))
        .arg("-c")
        .arg(script)
        .arg(entry.to_string())
        .arg(machine.path("work/space/notes.txt"))
        .current_dir("/")
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let answer: Value = serde_json::from_slice(&output.stdout).unwrap();
    let tools: Vec<&str> = answer["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        tools.contains(&"file_read") && tools.contains(&"bash"),
        "{tools:?}"
    );
    assert_eq!(answer["error"], false, "{answer}");
    assert!(
        answer["read"].as_str().unwrap().contains("hello"),
        "{answer}"
    );
}
