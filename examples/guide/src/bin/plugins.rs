//! The "Plugins" chapter: a host that loads the example plugins in `examples/plugins/`,
//! WebAssembly and Node.js side by side, serves their tools beside its own, and reloads one
//! when its files change.
//!
//! Build the plugins first: `bash examples/plugins/build.sh`.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use aleph_tools::mcp::McpServer;
use aleph_tools::plugin::{Channel, ModelProvider, PluginManager, PluginStatus, PluginsConfig};
use aleph_tools::prelude::*;
use aleph_tools::provider::Provider;
use futures_util::StreamExt;
use serde_json::json;

/// Add two integers.
#[tool(read_only)]
fn add(
    /// First addend
    a: i64,
    /// Second addend
    b: i64,
) -> i64 {
    a + b
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../plugins");
    if !examples.join("text-tools/text_tools.wasm").exists()
        || !examples
            .join("notes-node/node_modules/@aleph/plugin-sdk")
            .exists()
    {
        return Err(
            "the example plugins are not built; run `bash examples/plugins/build.sh`".into(),
        );
    }
    let plugins = copy_plugins(&examples)?;

    let server = AlephToolServer::from_registry()?;
    let mut config = PluginsConfig::with_search_paths([&plugins]);
    config.runtimes.wasm.timeout_ms = 5_000;
    let manager = PluginManager::new(&server, config);
    let report = manager.load_all();
    for (dir, error) in &report.failed {
        println!("skipped {}: {error}", dir.display());
    }
    for plugin in manager.list() {
        println!(
            "{} {} [{}]: {}",
            plugin.id,
            plugin.version.map(|v| v.to_string()).unwrap_or_default(),
            plugin.status,
            plugin.tools.join(", ")
        );
        if let Some(sandbox) = plugin.sandbox {
            println!("  sandbox: {sandbox}");
        }
    }
    println!("served: {}", server.tools().names().join(", "));
    let tools = server.tools().for_provider(Provider::Anthropic);
    let word_count = tools
        .as_array()
        .and_then(|tools| tools.iter().find(|t| t["name"] == "word_count"))
        .ok_or("word_count is not offered")?;
    println!("word_count as Anthropic sees it: {word_count}");

    for (name, args) in [
        ("word_count", json!({ "text": "plugins are sandboxed" })),
        // call-guard's hook redacts passwords before any tool sees them.
        ("echo", json!({ "user": "ada", "password": "hunter2" })),
        ("WordCount", json!({ "text": "repaired name" })),
        ("slugify", json!({ "text": "Hello, Plugins!" })),
        ("slugify", json!({ "text": "?!" })),
        ("slugify", json!({ "txt": "typo" })),
        ("fetch", json!({ "url": "http://example.com/" })),
        ("forecast", json!({ "city": "Lisbon", "days": 2 })),
        ("forecast", json!({ "city": "Atlantis" })),
        ("forecast", json!({ "city": "Lisbon", "days": 30 })),
        ("note_add", json!({ "text": "plugins run side by side" })),
        ("note_list", json!({})),
        ("add", json!({ "a": 2, "b": 40 })),
    ] {
        let result = server.call(name, args).await;
        match result.error {
            None => println!("{name} -> {}", result.output),
            Some(error) => println!("{name} failed: {}", error.lines().next().unwrap_or("")),
        }
    }
    let version = manager
        .plugin("text-tools")
        .execute_command("version", &json!({}))
        .await?;
    println!("command text-tools/version -> {version}");
    let exported = manager
        .plugin("notes-node")
        .execute_command("export", &json!({}))
        .await?;
    println!("command notes-node/export -> {exported}");
    let backup = manager.plugin("notes-node").start_service("backup").await?;
    println!("service notes-node/backup: {}", backup.state);
    let backup = manager.plugin("notes-node").stop_service("backup").await?;
    println!(
        "service notes-node/backup: {} (backup written: {})",
        backup.state,
        plugins.join("notes-node/data/notes.backup.json").is_file()
    );

    routes(&server, &manager).await?;
    channel_and_provider(&manager).await?;

    hot_reload(&server, &manager, &plugins).await?;

    manager.plugin("text-tools").unload()?;
    println!("after unload: {}", server.tools().names().join(", "));
    std::fs::remove_dir_all(&plugins)?;
    Ok(())
}

/// A plugin's channel and model provider, used as the host's own `Channel` and
/// `ModelProvider`.
async fn channel_and_provider(manager: &PluginManager) -> Result<(), Box<dyn std::error::Error>> {
    let channel: Arc<dyn Channel> = Arc::new(manager.plugin("echo-bridge").channel("loopback")?);
    let mut inbound = channel.inbound();
    let joined = channel.connect(json!({ "room": "guide" })).await?;
    println!("channel loopback: connect -> {joined}");
    let sent = channel.send(json!({ "text": "hello, channel" })).await?;
    let received = tokio::time::timeout(Duration::from_secs(5), inbound.next()).await?;
    println!(
        "channel loopback: send -> {sent}, received {}",
        received.unwrap_or_default()
    );
    channel.disconnect().await?;

    let model: Arc<dyn ModelProvider> = Arc::new(manager.plugin("echo-bridge").provider("echo")?);
    println!(
        "provider echo: models {}",
        json!(model.list_models().await?)
    );
    let request =
        json!({ "model": "echo-1", "messages": [{ "role": "user", "content": "stream me back" }] });
    println!(
        "provider echo: chat -> {}",
        model.chat(request.clone()).await?
    );
    let mut pieces = model.stream(request).await?;
    let mut streamed = Vec::new();
    while let Some(piece) = pieces.next().await {
        streamed.push(piece?["delta"].as_str().unwrap_or_default().to_owned());
    }
    println!("provider echo: streamed {streamed:?}");
    println!(
        "provider echo: embed -> {}",
        model.embed(json!(["a b", "c"])).await?
    );
    Ok(())
}

/// HTTP routes: the plugins' `[[http_routes]]` served beside `/mcp`, called over loopback.
async fn routes(
    server: &AlephToolServer,
    manager: &PluginManager,
) -> Result<(), Box<dyn std::error::Error>> {
    let http = McpServer::new(server)
        .with_router(manager.router())
        .serve_http("127.0.0.1:0")
        .await?;
    let addr = http.local_addr();
    for (method, path, body) in [
        (
            "POST",
            "/plugins/notes-node/notes",
            r#"{"text": "sent over HTTP"}"#,
        ),
        ("GET", "/plugins/notes-node/notes/1", ""),
        ("POST", "/plugins/text-tools/count", "three little words"),
        ("DELETE", "/plugins/notes-node/notes", ""),
    ] {
        let answer =
            tokio::task::spawn_blocking(move || request(addr, method, path, body)).await??;
        println!("{method} {path} -> {answer}");
    }
    http.shutdown().await?;
    Ok(())
}

/// One HTTP/1.1 request; the status line and the body, on one line.
fn request(
    addr: std::net::SocketAddr,
    method: &str,
    path: &str,
    body: &str,
) -> std::io::Result<String> {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr)?;
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )?;
    let mut response = String::new();
    stream.read_to_string(&mut response)?;
    let status = response.lines().next().unwrap_or_default().to_owned();
    let body = response.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    Ok(format!("{status}: {body}"))
}

/// Hot reload: a description changed on disk is served at once; a broken update keeps the
/// previous version serving.
async fn hot_reload(
    server: &AlephToolServer,
    manager: &PluginManager,
    plugins: &Path,
) -> Result<(), Box<dyn std::error::Error>> {
    // Hot reload: change a description on disk and watch the served definition follow.
    let _watcher = manager.watch_with(Duration::from_millis(100))?;
    let manifest = plugins.join("text-tools/aleph_plugin.toml");
    let text = std::fs::read_to_string(&manifest)?;
    std::fs::write(
        &manifest,
        text.replace(
            "Turn a title into a URL slug.",
            "Make a URL slug (reloaded).",
        ),
    )?;
    let start = Instant::now();
    while server
        .tools()
        .get("slugify")
        .is_none_or(|d| !d.description.contains("reloaded"))
    {
        if start.elapsed() > Duration::from_secs(20) {
            return Err("the plugin was not reloaded".into());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    println!(
        "reloaded: slugify is now \"{}\"",
        server
            .tools()
            .get("slugify")
            .map(|d| d.description.clone())
            .unwrap_or_default()
    );
    std::fs::write(&manifest, "[plugin")?;
    tokio::time::sleep(Duration::from_millis(600)).await;
    if let Some(PluginStatus::Error(message)) =
        manager.plugin("text-tools").info().map(|p| p.status)
    {
        println!("broken update: {}", message.lines().next().unwrap_or(""));
    }
    let still = server
        .call("slugify", json!({ "text": "Still Serving" }))
        .await;
    println!("slugify after the broken update -> {}", still.output);

    Ok(())
}

/// Copies the example plugins to a directory of their own, so the hot-reload demo never
/// touches the repository, and points the weather plugin at an API on loopback.
fn copy_plugins(examples: &Path) -> Result<std::path::PathBuf, Box<dyn std::error::Error>> {
    let plugins = std::env::temp_dir().join(format!("aleph-plugins-{}", std::process::id()));
    for name in [
        "text-tools",
        "http-fetch",
        "call-guard",
        "weather-node",
        "notes-node",
        "echo-bridge",
    ] {
        copy_dir(&examples.join(name), &plugins.join(name))?;
    }
    // The weather plugin asks a weather API; this one answers on loopback.
    let api = weather_api()?;
    std::fs::write(
        plugins.join("weather-node/settings.json"),
        format!("{{ \"baseUrl\": \"{api}\" }}"),
    )?;

    Ok(plugins)
}

/// A weather API on loopback: `GET /forecast?city=..&days=..` answers with made-up days,
/// and 404 for a city it does not know.
fn weather_api() -> std::io::Result<String> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let address = listener.local_addr()?;
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let _ = answer_forecast(stream);
        }
    });
    Ok(format!("http://{address}"))
}

fn answer_forecast(mut stream: std::net::TcpStream) -> std::io::Result<()> {
    use std::io::{BufRead, BufReader, Write};
    let mut request = String::new();
    BufReader::new(&stream).read_line(&mut request)?;
    let query = request
        .split_whitespace()
        .nth(1)
        .and_then(|target| target.split_once('?'))
        .map_or("", |(_, query)| query);
    let param = |name: &str| {
        query
            .split('&')
            .find_map(|pair| pair.strip_prefix(name)?.strip_prefix('='))
            .unwrap_or_default()
    };
    let days: usize = param("days").parse().unwrap_or(3);
    let (status, body) = if param("city") == "Lisbon" {
        let forecast: Vec<_> = (1..=days)
            .map(|day| json!({ "day": day, "high_c": 20 + day, "sky": "clear" }))
            .collect();
        ("200 OK", json!({ "days": forecast }).to_string())
    } else {
        (
            "404 Not Found",
            json!({ "error": "unknown city" }).to_string(),
        )
    };
    write!(
        stream,
        "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
}

fn copy_dir(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        if entry.file_type()?.is_dir() {
            copy_dir(&entry.path(), &to.join(entry.file_name()))?;
        } else {
            std::fs::copy(entry.path(), to.join(entry.file_name()))?;
        }
    }
    Ok(())
}
