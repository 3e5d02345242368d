//! `aleph-tools serve`: the tools over MCP, on standard input and output or streamable HTTP
//! (with the plugins' HTTP routes beside `/mcp`), with hot reload; skills and the plugins'
//! `standalone` prompts as MCP prompts.

use std::time::Duration;

use aleph_tools::Identity;
use aleph_tools::builtin::Skills;
use aleph_tools::mcp::{McpAuth, McpServer, McpTasks, RedisStore, StaticTokens};
use aleph_tools::middleware::Metrics;
use aleph_tools::plugin::{ADMIN_PATH, ADMIN_SCOPE};
use anyhow::Context as _;

use crate::approval::Approval;
use crate::config::{Config, ServerSection, TokenSection};
use crate::host::{Host, Plugins, secret_from};

/// How long running calls may take to finish once the server is told to stop, unless
/// `server.drain_timeout_secs` says: less than the 30 s an orchestrator such as Kubernetes
/// waits before it kills the process.
const DEFAULT_DRAIN_SECS: u64 = 25;

/// Where to serve.
pub enum Transport {
    /// Standard input and output, for a client that starts the command.
    Stdio,
    /// Streamable HTTP at `http://ADDR/mcp`.
    Http(String),
}

/// Serves until the client goes away (stdio) or the process is interrupted (HTTP: then it
/// drains, letting running calls finish).
pub async fn run(
    config: &Config,
    transport: Transport,
    watch: bool,
    approve: bool,
) -> anyhow::Result<()> {
    // Tokens are read first, so a missing one stops the command before plugins start.
    let auth = match &transport {
        Transport::Http(_) => auth_from(&config.server.tokens)?,
        Transport::Stdio => {
            if !config.server.tokens.is_empty() || config.server.cors_origins.is_some() {
                eprintln!(
                    "aleph-tools: `[[server.tokens]]` and `cors_origins` apply to `serve --http`; over stdio the client is whoever started this process"
                );
            }
            None
        }
    };
    let guarded = if auth.is_some() {
        " (bearer tokens required)"
    } else {
        ""
    };
    // Over HTTP every call is counted and timed, for `/metrics`; the recorder is installed
    // before the layer that describes its metrics to it.
    let scrape = match &transport {
        Transport::Http(_) => Some(crate::metrics::install()?),
        Transport::Stdio => None,
    };
    let counted = scrape.is_some();
    let host = Host::start_with(
        config,
        Plugins::All,
        false,
        Approval::when(approve),
        |builder| {
            if counted {
                builder.with_middleware(Metrics::new())
            } else {
                builder
            }
        },
    )
    .await?;
    // The management API: over HTTP at `/admin` behind the tokens' `admin` scope; over stdio
    // as tools, when the config asks.
    let admin = config.admin.admin(&host.manager)?;
    match &transport {
        Transport::Stdio if config.admin.tools => {
            for tool in admin.tools() {
                host.server
                    .add(tool)
                    .context("the management tools cannot be added")?;
            }
        }
        Transport::Http(_) if config.admin.tools => eprintln!(
            "aleph-tools: `[admin] tools` applies to `serve --stdio`; over HTTP the management API answers at {ADMIN_PATH} for tokens with the scope `{ADMIN_SCOPE}`"
        ),
        _ => {}
    }
    // Wrapped MCP servers join while the server runs: a client is answered at once, whatever
    // they take to start.
    host.wrap_in_background(config)?;
    let _watcher = if watch && config.plugins.hot_reload {
        Some(
            host.manager
                .watch()
                .context("cannot watch the plugins for changes")?,
        )
    } else {
        None
    };
    let mut mcp = McpServer::new(&host.server).with_name(
        config.server.name.as_deref().unwrap_or("aleph-tools"),
        env!("CARGO_PKG_VERSION"),
    );
    mcp = with_settings(mcp, &config.server);
    if let Some(auth) = auth {
        mcp = mcp.with_auth(auth);
    }
    // With Redis, replicas over HTTP share their sessions' handshakes and their tasks.
    if matches!(transport, Transport::Http(_))
        && let Some(store) = shared_store(config).await?
    {
        mcp = mcp
            .with_session_store(store.clone())
            .with_tasks(McpTasks::new().with_store(store));
    }
    // Skills are prompts as well as tools; so are the plugins' `standalone` prompts.
    for dir in &config.skills {
        mcp = mcp.with_prompts(Skills::new(dir));
    }
    mcp = mcp.with_prompts(host.manager.clone());
    match transport {
        Transport::Stdio => mcp.serve_stdio().await?,
        Transport::Http(addr) => {
            let mcp = mcp.with_router(admin.router());
            serve_http(config, &host, mcp, scrape, &addr, guarded).await?;
        }
    }
    Ok(())
}

/// Serves over streamable HTTP until SIGTERM or Ctrl-C, then drains.
async fn serve_http(
    config: &Config,
    host: &Host,
    mcp: McpServer,
    scrape: Option<axum::Router>,
    addr: &str,
    guarded: &str,
) -> anyhow::Result<()> {
    let mut mcp = mcp.with_router(host.manager.router());
    if let Some(scrape) = scrape {
        mcp = mcp.with_router(scrape);
    }
    let http = mcp.serve_http(addr).await?;
    let addr = http.local_addr();
    eprintln!(
        "aleph-tools: serving {} tools over MCP at {}, plugin routes under http://{addr}/plugins/, metrics at http://{addr}{}, the management API at http://{addr}{ADMIN_PATH}{guarded}",
        host.server.tools().names().len(),
        http.url(),
        crate::metrics::PATH,
    );
    stopped().await;
    let within = Duration::from_secs(
        config
            .server
            .drain_timeout_secs
            .unwrap_or(DEFAULT_DRAIN_SECS),
    );
    eprintln!(
        "aleph-tools: draining: new requests are refused, running calls have {} s to finish",
        within.as_secs()
    );
    let drained = http.drain(within).await?;
    eprintln!(
        "aleph-tools: stopped after {:.1} s: {} calls were running, {} cut off",
        drained.took.as_secs_f64(),
        drained.running,
        drained.cut_off
    );
    Ok(())
}

/// `mcp` with what `[server]` says of it: instructions, hosts, origins and session limits.
fn with_settings(mut mcp: McpServer, server: &ServerSection) -> McpServer {
    if let Some(instructions) = &server.instructions {
        mcp = mcp.with_instructions(instructions);
    }
    if let Some(hosts) = &server.allowed_hosts {
        mcp = mcp.with_allowed_hosts(hosts.iter().cloned());
    }
    if let Some(origins) = &server.cors_origins {
        mcp = mcp.with_cors_origins(origins.iter().cloned());
    }
    if let Some(secs) = server.session_idle_timeout_secs {
        mcp = mcp.with_session_idle_timeout(Duration::from_secs(secs));
    }
    if let Some(sessions) = server.max_sessions {
        mcp = mcp.with_max_sessions(sessions);
    }
    if let Some(sessions) = server.max_sessions_per_identity {
        mcp = mcp.with_max_sessions_per_identity(sessions);
    }
    mcp
}

/// The Redis that `[server] redis_url` (or the variable `redis_url_env` names) points to,
/// connected; none when neither is set.
async fn shared_store(config: &Config) -> anyhow::Result<Option<RedisStore>> {
    let url = match (&config.server.redis_url, &config.server.redis_url_env) {
        (Some(_), Some(_)) => {
            anyhow::bail!("`[server]` has both `redis_url` and `redis_url_env`; keep one")
        }
        (Some(url), None) => url.clone(),
        (None, Some(name)) => secret_from(name).context("`server.redis_url_env`")?,
        (None, None) => return Ok(None),
    };
    let store = RedisStore::connect(&url)
        .await
        .context("`[server]` names a Redis that cannot be reached")?;
    Ok(Some(store))
}

/// Bearer-token auth for `[[server.tokens]]`, each read from its environment variable; none
/// when the list is empty.
fn auth_from(tokens: &[TokenSection]) -> anyhow::Result<Option<McpAuth>> {
    if tokens.is_empty() {
        return Ok(None);
    }
    let mut known = StaticTokens::new();
    for (i, token) in tokens.iter().enumerate() {
        let secret = secret_from(&token.env)
            .with_context(|| format!("`server.tokens[{i}]` (`{}`)", token.subject))?;
        let identity = Identity::new(&token.subject).with_scopes(token.scopes.iter().cloned());
        known = known.with_token(secret, identity);
    }
    Ok(Some(McpAuth::new(known)))
}

/// Waits for Ctrl-C, or on Unix for SIGTERM too.
async fn stopped() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}
