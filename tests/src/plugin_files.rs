//! Plugins written and packed by the tests: a static plugin (a manifest and a prompt, no
//! code), and archives of a plugin directory as release pages ship them.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Writes a static plugin `id` (version 1.2.3, a system prompt) in `root/id`, with
/// `permissions` as its `[permissions]` section's body; its directory.
///
/// # Panics
///
/// When the files cannot be written.
pub fn static_plugin(root: &Path, id: &str, permissions: &str) -> PathBuf {
    let dir = root.join(id);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("aleph_plugin.toml"),
        format!(
            "[plugin]\nid = \"{id}\"\nversion = \"1.2.3\"\nkind = \"static\"\n\n[prompt]\nfile = \"PROMPT.md\"\nscope = \"system\"\n\n[permissions]\n{permissions}\n"
        ),
    )
    .unwrap();
    std::fs::write(dir.join("PROMPT.md"), format!("Prompt of {id}.")).unwrap();
    dir
}

/// Packs `dir` with Python's standard library: `format` is `gztar` or `zip`; `wrapped` puts
/// the plugin in a top-level directory, as release archives do. The archive's path.
///
/// # Panics
///
/// When Python cannot pack it.
pub fn archive(dir: &Path, format: &str, wrapped: bool) -> PathBuf {
    let out = dir.with_extension("packed");
    let (root, base) = if wrapped {
        (dir.parent().unwrap(), dir.file_name().unwrap())
    } else {
        (dir, Path::new(".").as_os_str())
    };
    let script = "import shutil, sys; print(shutil.make_archive(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]))";
    let output = Command::new("python3")
        .args(["-c", script])
        .arg(&out)
        .arg(format)
        .arg(root)
        .arg(base)
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    PathBuf::from(String::from_utf8(output.stdout).unwrap().trim())
}
