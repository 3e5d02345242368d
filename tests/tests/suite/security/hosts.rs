//! One host rule for everything that connects: a WebAssembly plugin's HTTP and `web_fetch`
//! check every redirect hop, and reach no private address (nor any IPv6 form of one) unless a
//! rule names it.
//!
//! Every test here runs its body in a network namespace of its own: the test runs again as a
//! child (`unshare --user --map-root-user --net --mount`) where only loopback is up and
//! `/etc/hosts` is the test's own (bind-mounted inside the namespace), so a bug cannot send a
//! packet off the machine, and names lead where the test says. The parent asserts the child
//! passed. Needs `unshare` (util-linux) and `ip` (iproute2).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::Command;
use std::sync::{Arc, Mutex};

use aleph_tools::builtin::WebFetch;
use aleph_tools::plugin::{PluginManager, PluginsConfig};
use aleph_tools::prelude::*;
use aleph_tools::{AlephToolServer, ToolErrorKind};
use aleph_tools_tests::{copy_dir, example_plugins};
use serde_json::{Value, json};

/// Set in the child a test runs as, inside its namespace.
const INSIDE: &str = "ALEPH_TOOLS_TEST_NETNS";
/// The example plugin `http-fetch`, built by the parent (the child has no network to build).
const HTTP_FETCH: &str = "ALEPH_TOOLS_TEST_HTTP_FETCH";

/// Runs the test `test` again in a network namespace of its own, with only loopback up and
/// `hosts` as `/etc/hosts`, and `env` set. In the child, returns `true`: run the body. In the
/// parent, asserts that the child ran the test and passed, and returns `false`.
fn in_namespace(test: &str, hosts: &str, env: &[(&str, &str)]) -> bool {
    if std::env::var_os(INSIDE).is_some() {
        return true;
    }
    let plugin = example_plugins().join("http-fetch");
    let dir = tempfile::tempdir().unwrap();
    let hosts_file = dir.path().join("hosts");
    std::fs::write(&hosts_file, hosts).unwrap();
    let (_, module) = module_path!().split_once("::").unwrap();
    let name = format!("{module}::{test}");
    let output = Command::new("unshare")
        .args(["--user", "--map-root-user", "--net", "--mount", "sh", "-c"])
        .arg(r#"PATH="$PATH:/usr/sbin:/sbin" && mount --bind "$0" /etc/hosts && ip link set lo up && exec "$@""#)
        .arg(&hosts_file)
        .arg(std::env::current_exe().unwrap())
        .args(["--exact", &name, "--nocapture", "--test-threads=1"])
        .env(INSIDE, "1")
        .env(HTTP_FETCH, &plugin)
        .envs(env.iter().copied())
        .output()
        .expect("`unshare` (util-linux) runs the test in a namespace");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success() && stdout.contains("1 passed"),
        "`{name}` in its namespace: {}\n--- stdout\n{stdout}\n--- stderr\n{stderr}",
        output.status
    );
    false
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// A loopback HTTP server (IPv4 and IPv6) that records each request's line and headers
/// before it answers, so whatever a call sent has been recorded when the call returns.
#[derive(Clone)]
struct Web {
    port: u16,
    seen: Arc<Mutex<Vec<String>>>,
}

impl Web {
    /// Serves `answer(path, own port)`, a whole HTTP response, to every request.
    fn start(answer: impl Fn(&str, u16) -> String + Send + 'static) -> Self {
        let listener = TcpListener::bind("[::]:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let web = Self {
            port,
            seen: Arc::clone(&seen),
        };
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") {
                    match stream.read(&mut byte) {
                        Ok(1) => head.push(byte[0]),
                        _ => break,
                    }
                }
                let head = String::from_utf8_lossy(&head).into_owned();
                let path = head.split_whitespace().nth(1).unwrap_or("/").to_owned();
                seen.lock().unwrap().push(head);
                let _ = stream.write_all(answer(&path, port).as_bytes());
            }
        });
        web
    }

    /// A server that answers `200 OK` with `body`.
    fn body(body: &'static str) -> Self {
        Self::start(move |_, _| ok(body))
    }

    /// The request heads seen so far.
    fn seen(&self) -> Vec<String> {
        self.seen.lock().unwrap().clone()
    }
}

fn ok(body: &str) -> String {
    response("200 OK", &[], body)
}

fn redirect(status: &str, to: &str) -> String {
    response(status, &[("Location", to)], "")
}

fn response(status: &str, headers: &[(&str, &str)], body: &str) -> String {
    let mut out = format!("HTTP/1.1 {status}\r\nContent-Length: {}\r\n", body.len());
    for (name, value) in headers {
        let _ = write!(out, "{name}: {value}\r\n");
    }
    out.push_str("Connection: close\r\n\r\n");
    out.push_str(body);
    out
}

/// A server with the example plugin `http-fetch` loaded, granted `network` (and `env`).
struct Fetcher {
    _root: tempfile::TempDir,
    server: AlephToolServer,
    _manager: PluginManager,
}

impl Fetcher {
    fn granted(network: &[&str], env: &[&str]) -> Self {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("http-fetch");
        copy_dir(&PathBuf::from(std::env::var_os(HTTP_FETCH).unwrap()), &dir);
        let manifest = dir.join("aleph_plugin.json");
        let mut text: Value =
            serde_json::from_str(&std::fs::read_to_string(&manifest).unwrap()).unwrap();
        text["permissions"] = json!({ "network": network, "env": env });
        std::fs::write(&manifest, text.to_string()).unwrap();
        let server = AlephToolServer::new();
        let manager = PluginManager::new(&server, PluginsConfig::with_search_paths([root.path()]));
        let report = manager.load_all();
        assert!(report.failed.is_empty(), "{:?}", report.failed);
        Self {
            _root: root,
            server,
            _manager: manager,
        }
    }

    async fn fetch(&self, url: &str) -> ToolResult {
        self.server.call("fetch", json!({ "url": url })).await
    }
}

/// The error of a call that must have failed.
fn refused(result: &ToolResult, url: &str) -> String {
    assert!(!result.success, "{url} was fetched: {:?}", result.output);
    result.error.clone().unwrap_or_default()
}

/// The redirect bypass: a plugin granted only `localhost` asks an allowed server, which
/// answers `302` to another port on `127.0.0.1`, or to a name that resolves to loopback. The
/// call fails with the reason and the other server never sees a request.
#[test]
fn a_redirect_cannot_take_a_plugin_past_its_hosts() {
    let hosts = "127.0.0.1 localhost\n127.0.0.1 evil.example.com\n";
    if !in_namespace("a_redirect_cannot_take_a_plugin_past_its_hosts", hosts, &[]) {
        return;
    }
    runtime().block_on(async {
        let secret = Web::body("the other server's secret");
        let to_secret = format!("http://127.0.0.1:{}/secret", secret.port);
        let by_name = format!("http://evil.example.com:{}/secret", secret.port);
        let allowed = {
            let (to_secret, by_name) = (to_secret.clone(), by_name.clone());
            Web::start(move |path, _| match path {
                "/by-name" => redirect("302 Found", &by_name),
                _ => redirect("302 Found", &to_secret),
            })
        };
        let plugin = Fetcher::granted(&["connect:localhost", "connect:*.example.com"], &[]);

        let url = format!("http://localhost:{}/start", allowed.port);
        let result = plugin.fetch(&url).await;
        let error = refused(&result, &url);
        assert!(
            error.contains(&format!(
                "the plugin was refused: redirected to `{to_secret}`: the host `127.0.0.1` is \
                 not among the allowed hosts"
            )),
            "{error}"
        );

        // A hop to a granted name is resolved under the rule too: the name leads to loopback,
        // which no rule names.
        let url = format!("http://localhost:{}/by-name", allowed.port);
        let error = refused(&plugin.fetch(&url).await, &url);
        assert!(
            error.contains(&format!(
                "redirected to `{by_name}`: `evil.example.com` resolves to 127.0.0.1, a \
                 loopback address; no name but `localhost` reaches"
            )),
            "{error}"
        );

        assert_eq!(allowed.seen().len(), 2);
        assert_eq!(
            secret.seen(),
            Vec::<String>::new(),
            "the other server was reached"
        );
    });
}

/// `connect:*` and `connect:*.example.com` cover names, never loopback: not by address, not
/// by a name that resolves there, not by an IPv6 form of `127.0.0.1`.
#[test]
fn a_plugin_granted_every_host_reaches_no_private_address() {
    let hosts =
        "127.0.0.1 localhost\n127.0.0.1 evil.example.com\n2002:7f00:1::1 tunnel.example.com\n";
    if !in_namespace(
        "a_plugin_granted_every_host_reaches_no_private_address",
        hosts,
        &[],
    ) {
        return;
    }
    runtime().block_on(async {
        let web = Web::body("loopback content");
        let port = web.port;
        let any = Fetcher::granted(&["connect:*"], &[]);
        for (url, why) in [
            (
                format!("http://127.0.0.1:{port}/"),
                "`127.0.0.1` is a loopback address",
            ),
            (
                format!("http://[::1]:{port}/"),
                "`::1` is a loopback address",
            ),
            (
                format!("http://[::ffff:127.0.0.1]:{port}/"),
                "carries 127.0.0.1 (IPv4-mapped), a loopback address",
            ),
            (
                format!("http://[::7f00:1]:{port}/"),
                "carries 127.0.0.1 (IPv4-compatible), a loopback address",
            ),
            (
                format!("http://localhost:{port}/"),
                "`localhost` resolves to 127.0.0.1, a loopback address",
            ),
            (
                format!("http://evil.example.com:{port}/"),
                "`evil.example.com` resolves to 127.0.0.1, a loopback address",
            ),
            (
                format!("http://tunnel.example.com:{port}/"),
                "which carries 127.0.0.1 (6to4), a loopback address",
            ),
            (
                "http://169.254.169.254/latest/meta-data".to_owned(),
                "a link-local address",
            ),
        ] {
            let error = refused(&any.fetch(&url).await, &url);
            assert!(error.contains("the plugin was refused: "), "{url}: {error}");
            assert!(error.contains(why), "{url}: {error}");
        }
        let sub = Fetcher::granted(&["connect:*.example.com"], &[]);
        let url = format!("http://evil.example.com:{port}/");
        let error = refused(&sub.fetch(&url).await, &url);
        assert!(error.contains("resolves to 127.0.0.1"), "{error}");
        assert_eq!(web.seen(), Vec::<String>::new(), "loopback was reached");

        // Named, loopback is reached.
        let named = Fetcher::granted(&["connect:localhost"], &[]);
        let fetched = named.fetch(&format!("http://localhost:{port}/")).await;
        assert!(fetched.success, "{:?}", fetched.error);
        assert_eq!(fetched.output["body"], "loopback content");
    });
}

/// Redirects that stay on granted hosts are followed, each hop checked: across hosts, to a
/// relative `Location`, up to ten; credentials are not carried to the next hop, and the
/// status of the last answer reaches the plugin.
#[test]
fn a_redirect_chain_within_the_granted_hosts_is_followed() {
    if !in_namespace(
        "a_redirect_chain_within_the_granted_hosts_is_followed",
        "127.0.0.1 localhost\n",
        &[("FETCH_TOKEN", "s3cret")],
    ) {
        return;
    }
    runtime().block_on(async {
        let second = Web::start(|path, _| match path {
            "/hop" => redirect("301 Moved Permanently", "/final"),
            "/final" => ok("arrived"),
            "/loop" => redirect("302 Found", "/loop"),
            _ => response("404 Not Found", &[], "nope"),
        });
        let first = {
            let next = format!("http://127.0.0.1:{}/hop", second.port);
            Web::start(move |_, _| redirect("307 Temporary Redirect", &next))
        };
        let plugin = Fetcher::granted(
            &["connect:localhost", "connect:127.0.0.1"],
            &["FETCH_TOKEN"],
        );

        let fetched = plugin
            .fetch(&format!("http://localhost:{}/start", first.port))
            .await;
        assert!(fetched.success, "{:?}", fetched.error);
        assert_eq!(fetched.output["status"], 200);
        assert_eq!(fetched.output["body"], "arrived");
        assert_eq!(fetched.output["sent_token"], true);
        let heads: BTreeMap<usize, String> = second.seen().into_iter().enumerate().collect();
        assert!(heads[&0].starts_with("GET /hop "), "{heads:?}");
        assert!(heads[&1].starts_with("GET /final "), "{heads:?}");
        assert!(first.seen()[0].contains("Bearer s3cret"));
        assert!(
            heads.values().all(|head| !head.contains("s3cret")),
            "the token was carried across a redirect: {heads:?}"
        );

        let missing = plugin
            .fetch(&format!("http://127.0.0.1:{}/missing", second.port))
            .await;
        assert!(missing.success, "{:?}", missing.error);
        assert_eq!(missing.output["status"], 404);
        assert_eq!(missing.output["body"], "nope");

        let url = format!("http://127.0.0.1:{}/loop", second.port);
        let error = refused(&plugin.fetch(&url).await, &url);
        assert!(
            error.contains(&format!(
                "the plugin's HTTP request failed: `{url}` redirected more than 10 times"
            )),
            "{error}"
        );
        let loops = second
            .seen()
            .iter()
            .filter(|h| h.starts_with("GET /loop "))
            .count();
        assert_eq!(loops, 11);

        // The plugin keeps serving after every refusal and failure.
        let again = plugin
            .fetch(&format!("http://127.0.0.1:{}/final", second.port))
            .await;
        assert_eq!(again.output["body"], "arrived");
    });
}

/// Every IPv6 form that carries a private IPv4 address, and IPv6's special ranges, are refused
/// by `web_fetch` before it connects, whether written in the URL or what a name resolves to;
/// the same forms carrying a public address are not refused (here they fail to connect, as the
/// namespace has no route).
#[test]
fn web_fetch_refuses_every_ipv6_form_of_a_private_ipv4() {
    let hosts = "2002:7f00:1::1 tunnel.example.com\n::ffff:0:a00:1 translated.example.com\n";
    if !in_namespace(
        "web_fetch_refuses_every_ipv6_form_of_a_private_ipv4",
        hosts,
        &[],
    ) {
        return;
    }
    runtime().block_on(async {
        let server = AlephToolServer::builder()
            .with_builtin(WebFetch::default())
            .build()
            .unwrap();
        let fetch = |url: &str| server.call("web_fetch", json!({ "url": url }));
        for (url, why) in [
            ("http://[::7f00:1]/", "carries 127.0.0.1 (IPv4-compatible)"),
            (
                "http://[::ffff:0:7f00:1]/",
                "carries 127.0.0.1 (IPv4-translated)",
            ),
            (
                "http://[::ffff:127.0.0.1]/",
                "carries 127.0.0.1 (IPv4-mapped)",
            ),
            ("http://[2002:7f00:1::1]/", "carries 127.0.0.1 (6to4)"),
            (
                "http://[2002:a9fe:a9fe::]/",
                "carries 169.254.169.254 (6to4)",
            ),
            ("http://[64:ff9b::7f00:1]/", "carries 127.0.0.1 (NAT64)"),
            (
                "http://[64:ff9b::a00:1]/",
                "carries 10.0.0.1 (NAT64), a private address",
            ),
            (
                "http://[64:ff9b:1::a00:1]/",
                "local-use IPv4/IPv6 translation",
            ),
            (
                "http://[2001:0:7f00:1::]/",
                "carries 127.0.0.1 (Teredo server)",
            ),
            (
                "http://[2001:0:808:808::f5ff:fffe]/",
                "carries 10.0.0.1 (Teredo client)",
            ),
            (
                "http://[2606:4700::5efe:7f00:1]/",
                "carries 127.0.0.1 (ISATAP)",
            ),
            ("http://[fec0::1]/", "site-local"),
            ("http://[fd00::1]/", "unique local"),
            ("http://[fe80::1]/", "link-local"),
            ("http://[100::1]/", "discard-only"),
            ("http://[2001:db8::1]/", "documentation"),
            ("http://[::]/", "unspecified"),
            (
                "http://tunnel.example.com/",
                "`tunnel.example.com` resolves to 2002:7f00:1::1, which carries 127.0.0.1 (6to4)",
            ),
            (
                "http://translated.example.com/",
                "which carries 10.0.0.1 (IPv4-translated), a private address",
            ),
        ] {
            let result = fetch(url).await;
            assert_eq!(
                result.error_kind,
                Some(ToolErrorKind::PermissionDenied),
                "{url}: {:?}",
                result.error
            );
            let error = result.error.unwrap_or_default();
            assert!(error.contains(why), "{url}: {error}");
        }
        for url in [
            "http://[2606:4700::1111]/",
            "http://[64:ff9b::808:808]/",
            "http://[2002:808:808::1]/",
            "http://[::ffff:8.8.8.8]/",
        ] {
            let result = fetch(url).await;
            assert!(!result.success, "{url}");
            assert_ne!(
                result.error_kind,
                Some(ToolErrorKind::PermissionDenied),
                "{url} was refused as private: {:?}",
                result.error
            );
        }
    });
}

/// `web_fetch` follows the same rule as plugins: a rule naming loopback reaches it without
/// opening private addresses to every host, a wildcard never does, and a redirect to a host
/// the rule does not grant is refused before the other server sees anything.
#[test]
fn web_fetch_follows_the_plugins_host_rule() {
    let hosts = "127.0.0.1 localhost\n127.0.0.1 evil.example.com\n";
    if !in_namespace("web_fetch_follows_the_plugins_host_rule", hosts, &[]) {
        return;
    }
    runtime().block_on(async {
        let secret = Web::body("the other server's secret");
        let to_secret = format!("http://127.0.0.1:{}/secret", secret.port);
        let page = {
            let to_secret = to_secret.clone();
            Web::start(move |path, _| match path {
                "/away" => redirect("302 Found", &to_secret),
                _ => response("200 OK", &[("Content-Type", "text/plain")], "page"),
            })
        };
        let serving = |rules: &[&str]| {
            AlephToolServer::builder()
                .with_builtin(WebFetch::new().allow_hosts(rules.to_vec()))
                .build()
                .unwrap()
        };
        let fetch = |server: &AlephToolServer, url: String| {
            let server = server.clone();
            async move { server.call("web_fetch", json!({ "url": url })).await }
        };

        let named = serving(&["connect:localhost"]);
        let fetched = fetch(&named, format!("http://localhost:{}/", page.port)).await;
        assert!(fetched.success, "{:?}", fetched.error);
        assert_eq!(fetched.output["text"], "page");
        let away = fetch(&named, format!("http://localhost:{}/away", page.port)).await;
        assert_eq!(away.error_kind, Some(ToolErrorKind::PermissionDenied));
        assert!(
            away.error.as_deref().unwrap().contains(&format!(
                "redirected to `{to_secret}`: the host `127.0.0.1` is not among the allowed \
                 hosts (`localhost`)"
            )),
            "{:?}",
            away.error
        );

        let wild = serving(&["connect:*.example.com"]);
        let evil = fetch(&wild, format!("http://evil.example.com:{}/", page.port)).await;
        assert_eq!(evil.error_kind, Some(ToolErrorKind::PermissionDenied));
        assert!(
            evil.error
                .as_deref()
                .unwrap()
                .contains("`evil.example.com` resolves to 127.0.0.1, a loopback address"),
            "{:?}",
            evil.error
        );
        assert_eq!(page.seen().len(), 2);
        assert_eq!(
            secret.seen(),
            Vec::<String>::new(),
            "the other server was reached"
        );
    });
}
