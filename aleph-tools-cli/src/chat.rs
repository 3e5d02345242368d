//! `aleph-tools chat`: the agent loop in a terminal, against OpenAI (chat completions and
//! every server that speaks it, or responses), Anthropic or Gemini, with the plugins',
//! wrapped MCP servers' and built-in tools.

use std::io::{IsTerminal as _, Read as _, Write as _};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use aleph_tools::agent::clients::{Anthropic, Gemini, OpenAiChat, OpenAiResponses};
use aleph_tools::agent::{Agent, AgentEvent, ChatModel, Conversation, StreamDelta};
use anyhow::{Context as _, bail};

use crate::approval::Approval;
use crate::config::Config;
use crate::host::{Host, Plugins, secret_from};

/// The model APIs `chat` speaks.
#[derive(Clone, Copy, clap::ValueEnum)]
#[allow(
    clippy::doc_markdown,
    reason = "doc comments here are --help text, shown as written"
)]
pub enum Api {
    /// OpenAI's Chat Completions API, and every server that speaks it (key: OPENAI_API_KEY)
    Openai,
    /// OpenAI's Responses API (key: OPENAI_API_KEY)
    OpenaiResponses,
    /// Anthropic's Messages API (key: ANTHROPIC_API_KEY)
    Anthropic,
    /// The Gemini API (key: GEMINI_API_KEY)
    Gemini,
}

/// What `chat` was asked.
pub struct Chat {
    /// The model's API.
    pub api: Api,
    /// The model's name.
    pub model: String,
    /// The API's base URL, when not the environment's or OpenAI's.
    pub base_url: Option<String>,
    /// The environment variable holding the key for `base_url`.
    pub api_key_env: Option<String>,
    /// Instructions for the model.
    pub system: Option<String>,
    /// The prompt; read from standard input when `None`.
    pub prompt: Option<String>,
    /// The most rounds.
    pub max_rounds: usize,
    /// The tools whose calls are approved without asking (names or `prefix*` patterns).
    pub approve: Vec<String>,
}

/// Runs the loop once: the answer streams to standard output, each tool call and its result
/// to standard error as it finishes.
pub async fn run(config: &Config, chat: Chat) -> anyhow::Result<()> {
    let prompt = match chat.prompt {
        Some(prompt) => prompt,
        None => read_prompt()?,
    };
    // A model's shell or program reaches past the allowed directories: the person decides.
    let mut config = config.clone();
    if config.builtin.is_some() {
        for tool in ["bash", "code_exec"] {
            config.tools.require_confirmation.insert(tool.to_owned());
        }
    }
    let host = Host::start(&config, Plugins::All, true, Approval::Named(chat.approve)).await?;
    let key = chat.api_key_env.as_deref().map(secret_from).transpose()?;
    let model = model(chat.api, &chat.model, chat.base_url.as_deref(), key);
    let mut conversation = Conversation::new(model.provider());
    if let Some(system) = chat.system {
        conversation = conversation.with_system(system);
    }
    conversation.push_user(prompt);

    let streamed = Arc::new(AtomicBool::new(false));
    let printed = Arc::clone(&streamed);
    let outcome = Agent::new()
        .max_rounds(chat.max_rounds)
        .on_event(move |event| match event {
            AgentEvent::Delta(StreamDelta::Text(text)) => {
                printed.store(true, Ordering::Relaxed);
                let mut out = std::io::stdout().lock();
                let _ = out.write_all(text.as_bytes());
                let _ = out.flush();
            }
            // Text written before calling tools ends its line.
            AgentEvent::ModelTurn { turn, .. }
                if !turn.tool_calls.is_empty() && printed.swap(false, Ordering::Relaxed) =>
            {
                println!();
            }
            AgentEvent::ToolFinished { call, result, .. } => {
                let arguments = call
                    .arguments
                    .as_ref()
                    .map_or_else(|bad| bad.raw.clone(), ToString::to_string);
                let mark = if result.success { "->" } else { "-> error:" };
                eprintln!(
                    "[{}({})] {mark} {}",
                    call.name,
                    shorten(&arguments, 200),
                    shorten(&result.model_text(), 300)
                );
            }
            _ => {}
        })
        .run(&host.server, model.as_ref(), &mut conversation)
        .await
        .with_context(|| format!("the chat with `{}` stopped", chat.model))?;
    if streamed.load(Ordering::Relaxed) {
        println!();
    } else {
        println!("{}", outcome.text);
    }
    Ok(())
}

/// The client for `api`, at `base_url` with `key` when given.
fn model(api: Api, name: &str, base_url: Option<&str>, key: Option<String>) -> Box<dyn ChatModel> {
    macro_rules! client {
        ($client:ty) => {{
            let mut client = <$client>::new(name);
            if let Some(url) = base_url {
                client = client.base_url(url);
            }
            if let Some(key) = key {
                client = client.api_key(key);
            }
            Box::new(client)
        }};
    }
    match api {
        Api::Openai => client!(OpenAiChat),
        Api::OpenaiResponses => client!(OpenAiResponses),
        Api::Anthropic => client!(Anthropic),
        Api::Gemini => client!(Gemini),
    }
}

/// The prompt from standard input, which must not be a terminal left empty.
fn read_prompt() -> anyhow::Result<String> {
    let stdin = std::io::stdin();
    if stdin.is_terminal() {
        eprintln!("Type the prompt, then Ctrl-D:");
    }
    let mut prompt = String::new();
    stdin
        .lock()
        .read_to_string(&mut prompt)
        .context("cannot read the prompt from standard input")?;
    if prompt.trim().is_empty() {
        bail!("no prompt: give it as an argument or on standard input");
    }
    Ok(prompt)
}

/// `text` on one line, at most `max` characters.
fn shorten(text: &str, max: usize) -> String {
    let line = text.replace('\n', " ");
    match line.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line,
    }
}
