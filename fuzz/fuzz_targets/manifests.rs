//! Arbitrary manifest text, read and checked the way plugin discovery reads it: the first
//! byte picks the file (`aleph_plugin.toml`, `aleph_plugin.json` or `package.json`), the
//! rest is its text. Every input is a manifest or an error naming the file, never a panic.
#![no_main]

use std::path::Path;
use std::sync::OnceLock;

use aleph_tools::plugin::{MANIFEST_FILES, PluginManifest};
use libfuzzer_sys::fuzz_target;

fn plugin_dir() -> &'static Path {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| tempfile::tempdir().expect("a temporary directory"))
        .path()
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, text)) = data.split_first() else {
        return;
    };
    let dir = plugin_dir();
    for name in MANIFEST_FILES {
        let _ = std::fs::remove_file(dir.join(name));
    }
    let file = MANIFEST_FILES[usize::from(pick) % MANIFEST_FILES.len()];
    std::fs::write(dir.join(file), text).expect("write the manifest");
    if let Err(err) = PluginManifest::read_dir(dir) {
        assert!(!err.to_string().is_empty());
    }
});
