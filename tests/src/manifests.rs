//! Broken plugin manifests, one per rule, shared by the manifest tests and the command's
//! `plugins check` tests.

use std::path::Path;

/// A manifest that breaks one rule, with the files beside it and what its error must say.
#[derive(Debug, Clone)]
pub struct BrokenManifest {
    /// The rule, in a few words.
    pub what: &'static str,
    /// The text of `aleph_plugin.toml`.
    pub manifest: String,
    /// Other files of the plugin: `(path, text)`.
    pub files: &'static [(&'static str, &'static str)],
    /// The key the error names (empty for the file as a whole).
    pub key: &'static str,
    /// Words the error must contain.
    pub words: &'static str,
}

impl BrokenManifest {
    /// Writes the plugin into `dir`.
    ///
    /// # Panics
    ///
    /// On an I/O error.
    pub fn write(&self, dir: &Path) {
        write_files(dir, &[("aleph_plugin.toml", self.manifest.as_str())]);
        write_files(dir, self.files);
    }
}

/// Writes `(path, text)` files under `dir`, creating directories as needed.
///
/// # Panics
///
/// On an I/O error.
pub fn write_files(dir: &Path, files: &[(&str, &str)]) {
    for (name, text) in files {
        let path = dir.join(name);
        std::fs::create_dir_all(path.parent().expect("a file has a parent"))
            .expect("create a directory");
        std::fs::write(path, text).expect("write a file");
    }
}

/// A `wasm` plugin `p` with `extra_plugin` lines in `[plugin]` and `rest` after it.
pub fn wasm_manifest(extra_plugin: &str, rest: &str) -> String {
    format!(
        "[plugin]\nid = \"p\"\nversion = \"1.0.0\"\nkind = \"wasm\"\nentry = \"p.wasm\"\n{extra_plugin}\n{rest}"
    )
}

/// A `[[tools]]` entry `t` with `fields`.
pub fn tool(fields: &str) -> String {
    format!("[[tools]]\nname = \"t\"\ndescription = \"does t\"\n{fields}\n")
}

/// One broken manifest per rule the manifest check enforces.
#[allow(clippy::too_many_lines, reason = "a table: one entry per rule")]
pub fn broken_manifests() -> Vec<BrokenManifest> {
    let wasm: &[(&str, &str)] = &[("p.wasm", "(module)")];
    vec![
        BrokenManifest {
            what: "missing id",
            manifest: "[plugin]\nversion = \"1.0.0\"\nkind = \"static\"\n".into(),
            files: &[],
            key: "",
            words: "missing field `id`",
        },
        BrokenManifest {
            what: "bad id",
            manifest: "[plugin]\nid = \"My Plugin\"\nversion = \"1.0.0\"\nkind = \"static\"\n".into(),
            files: &[],
            key: "plugin.id",
            words: "lowercase letter",
        },
        BrokenManifest {
            what: "bad version",
            manifest: "[plugin]\nid = \"p\"\nversion = \"1.0\"\nkind = \"static\"\n".into(),
            files: &[],
            key: "",
            words: "version",
        },
        BrokenManifest {
            what: "bad kind",
            manifest: "[plugin]\nid = \"p\"\nversion = \"1.0.0\"\nkind = \"python\"\n".into(),
            files: &[],
            key: "",
            words: "unknown variant `python`",
        },
        BrokenManifest {
            what: "api too new",
            manifest: wasm_manifest("api_version = \"^2\"", ""),
            files: wasm,
            key: "plugin.api_version",
            words: "this host implements 1.0.0",
        },
        BrokenManifest {
            what: "no entry",
            manifest: "[plugin]\nid = \"p\"\nversion = \"1.0.0\"\nkind = \"wasm\"\n".into(),
            files: &[],
            key: "plugin.entry",
            words: "needs `entry`",
        },
        BrokenManifest {
            what: "entry missing",
            manifest: wasm_manifest("", ""),
            files: &[],
            key: "plugin.entry",
            words: "does not exist",
        },
        BrokenManifest {
            what: "entry outside",
            manifest: "[plugin]\nid = \"p\"\nversion = \"1.0.0\"\nkind = \"wasm\"\nentry = \"../p.wasm\"\n"
                    .into(),
            files: &[],
            key: "plugin.entry",
            words: "outside the plugin's directory",
        },
        BrokenManifest {
            what: "static with entry",
            manifest: "[plugin]\nid = \"p\"\nversion = \"1.0.0\"\nkind = \"static\"\nentry = \"p.wasm\"\n"
                    .into(),
            files: wasm,
            key: "plugin.entry",
            words: "runs no code",
        },
        BrokenManifest {
            what: "static with tools",
            manifest: format!(
                    "[plugin]\nid = \"p\"\nversion = \"1.0.0\"\nkind = \"static\"\n{}",
                    tool("")
                ),
            files: &[],
            key: "tools",
            words: "cannot have tools",
        },
        BrokenManifest {
            what: "unknown key",
            manifest: wasm_manifest("", &tool("handlr = \"x\"")),
            files: wasm,
            key: "",
            words: "unknown field `handlr`",
        },
        BrokenManifest {
            what: "icon that is not a URL",
            manifest: wasm_manifest("", &tool("[[tools.icons]]\nsrc = \"icons/t.svg\"")),
            files: wasm,
            key: "tools[0].icons[0].src",
            words: "not an `https:` or `data:` URL",
        },
        BrokenManifest {
            what: "unknown icon key",
            manifest: wasm_manifest(
                "",
                &tool("[[tools.icons]]\nsrc = \"https://e.com/t.svg\"\nsize = \"48x48\""),
            ),
            files: wasm,
            key: "",
            words: "unknown field `size`",
        },
        BrokenManifest {
            what: "empty title",
            manifest: wasm_manifest("", &tool("title = \"\"")),
            files: wasm,
            key: "tools[0].title",
            words: "is empty",
        },
        BrokenManifest {
            what: "bad tool name",
            manifest: wasm_manifest("", "[[tools]]\nname = \"no spaces\"\ndescription = \"d\"\n"),
            files: wasm,
            key: "tools[0].name",
            words: "is not a tool name model providers accept: use 1 to 64 characters",
        },
        BrokenManifest {
            what: "same tool twice",
            manifest: wasm_manifest("", &format!("{}{}", tool(""), tool(""))),
            files: wasm,
            key: "tools[1].name",
            words: "declared twice",
        },
        BrokenManifest {
            what: "empty description",
            manifest: wasm_manifest("", "[[tools]]\nname = \"t\"\ndescription = \" \"\n"),
            files: wasm,
            key: "tools[0].description",
            words: "is empty",
        },
        BrokenManifest {
            what: "bad handler",
            manifest: wasm_manifest("", &tool("handler = \"two words\"")),
            files: wasm,
            key: "tools[0].handler",
            words: "not a function name",
        },
        BrokenManifest {
            what: "schema not an object",
            manifest: wasm_manifest("", &tool("input_schema = { type = \"string\" }")),
            files: wasm,
            key: "tools[0].input_schema",
            words: "must describe an object",
        },
        BrokenManifest {
            what: "schema file missing",
            manifest: wasm_manifest("", &tool("input_schema = \"schemas/t.json\"")),
            files: wasm,
            key: "tools[0].input_schema",
            words: "cannot read",
        },
        BrokenManifest {
            what: "schema file not JSON",
            manifest: wasm_manifest("", &tool("input_schema = \"t.json\"")),
            files: &[("p.wasm", "(module)"), ("t.json", "{ nope")],
            key: "tools[0].input_schema",
            words: "is not JSON",
        },
        BrokenManifest {
            what: "instructions missing",
            manifest: wasm_manifest("", &tool("instruction_file = \"docs/t.md\"")),
            files: wasm,
            key: "tools[0].instruction_file",
            words: "does not exist",
        },
        BrokenManifest {
            what: "network rule",
            manifest: wasm_manifest(
                    "",
                    "[permissions]\nnetwork = [\"https://api.example.com\"]\n",
                ),
            files: wasm,
            key: "permissions.network[0]",
            words: "must start with `connect:`",
        },
        BrokenManifest {
            what: "filesystem rule",
            manifest: wasm_manifest("", "[permissions]\nfilesystem = [\"./data\"]\n"),
            files: wasm,
            key: "permissions.filesystem[0]",
            words: "`read:` or `write:`",
        },
        BrokenManifest {
            what: "filesystem escape",
            manifest: wasm_manifest("", "[permissions]\nfilesystem = [\"read:../../etc\"]\n"),
            files: wasm,
            key: "permissions.filesystem[0]",
            words: "leaves the plugin's directory",
        },
        BrokenManifest {
            what: "env name",
            manifest: wasm_manifest("", "[permissions]\nenv = [\"API-KEY\"]\n"),
            files: wasm,
            key: "permissions.env[0]",
            words: "not an environment variable name",
        },
        BrokenManifest {
            what: "prompt missing",
            manifest: wasm_manifest("", "[prompt]\nfile = \"SKILL.md\"\n"),
            files: wasm,
            key: "prompt.file",
            words: "does not exist",
        },
        BrokenManifest {
            what: "prompt scope",
            manifest: wasm_manifest("", "[prompt]\nfile = \"SKILL.md\"\nscope = \"always\"\n"),
            files: wasm,
            key: "",
            words: "unknown variant `always`",
        },
        BrokenManifest {
            what: "hook event",
            manifest: wasm_manifest(
                    "",
                    "[[hooks]]\nevent = \"on_everything\"\nhandler = \"h\"\n",
                ),
            files: wasm,
            key: "",
            words: "unknown variant `on_everything`",
        },
        BrokenManifest {
            what: "same command twice",
            manifest: wasm_manifest(
                    "",
                    "[[commands]]\nname = \"c\"\nhandler = \"h\"\n[[commands]]\nname = \"c\"\nhandler = \"h\"\n",
                ),
            files: wasm,
            key: "commands[1].name",
            words: "declared twice",
        },
        BrokenManifest {
            what: "service handler",
            manifest: wasm_manifest(
                    "",
                    "[[services]]\nname = \"s\"\nstart_handler = \"\"\nstop_handler = \"stop\"\n",
                ),
            files: wasm,
            key: "services[0].start_handler",
            words: "not a function name",
        },
        BrokenManifest {
            what: "route method",
            manifest: wasm_manifest(
                    "",
                    "[[http_routes]]\nmethod = \"FETCH\"\npath = \"/x\"\nhandler = \"h\"\n",
                ),
            files: wasm,
            key: "http_routes[0].method",
            words: "not one of GET",
        },
        BrokenManifest {
            what: "route path",
            manifest: wasm_manifest(
                    "",
                    "[[http_routes]]\nmethod = \"GET\"\npath = \"x\"\nhandler = \"h\"\n",
                ),
            files: wasm,
            key: "http_routes[0].path",
            words: "must start with `/`",
        },
        BrokenManifest {
            what: "route parameter",
            manifest: wasm_manifest(
                "",
                "[[http_routes]]\nmethod = \"GET\"\npath = \"/items/{id\"\nhandler = \"h\"\n",
            ),
            files: wasm,
            key: "http_routes[0].path",
            words: "is not a parameter",
        },
        BrokenManifest {
            what: "route twice",
            manifest: wasm_manifest(
                "",
                "[[http_routes]]\nmethod = \"GET\"\npath = \"/a\"\nhandler = \"h\"\n[[http_routes]]\nmethod = \"GET\"\npath = \"/a\"\nhandler = \"g\"\n",
            ),
            files: wasm,
            key: "http_routes[1]",
            words: "is declared twice",
        },
    ]
}
