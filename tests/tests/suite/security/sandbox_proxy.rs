//! The sandbox's network proxy holds against a hostile program: with `Network::Proxy`, the
//! program's only way out is the proxy the host runs, which admits a granted host, resolves
//! names itself, checks every address (loopback, private and IPv6-embedded ones refused
//! unless a pattern names them), checks a redirect's next hop as a new request, and names
//! each refusal on the program's standard error. Going around the proxy reaches nothing:
//! the sandbox's network has loopback alone, and Landlock lets TCP reach the proxy's port
//! and no other. No request here leaves the machine: every refusal happens before a
//! connection, and the one host granted is the host's own loopback.
#![cfg(target_os = "linux")]

use aleph_tools::sandbox::{Network, Sandbox};
use aleph_tools_tests::{command_lines, eventually};
use serde_json::json;

use super::sandbox::{LoopbackServer, Space, bash_server, python};

/// Asks the proxy named by `HTTP_PROXY` for each target after the port: a `CONNECT`
/// tunnel (`tunnel <target>`) and a plain request (`plain <target>`); then tries the server
/// directly, around the proxy.
const ASK: &str = r"
import os, socket, sys, urllib.parse
proxy = urllib.parse.urlsplit(os.environ['HTTP_PROXY'])
port = int(sys.argv[1])
def exchange(request):
    s = socket.create_connection((proxy.hostname, proxy.port), timeout=20)
    s.sendall(request.encode())
    data = b''
    while chunk := s.recv(65536):
        data += chunk
        if request.startswith('CONNECT') and b'\r\n\r\n' in data:
            break
    return s, data.decode(errors='replace')
def said(data):
    status, _, rest = data.partition('\r\n')
    return status.split(' ', 1)[1] + ' | ' + rest.partition('\r\n\r\n')[2].strip()
for target in sys.argv[2:]:
    authority = f'{target}:{port}'
    s, data = exchange(f'CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n\r\n')
    if ' 200 ' in data.partition('\r\n')[0]:
        s.sendall(b'GET / HTTP/1.0\r\n\r\n')
        body = b''
        while chunk := s.recv(65536):
            body += chunk
        print(f'tunnel {target} ok', body.decode().split('\r\n\r\n', 1)[-1].strip())
    else:
        print(f'tunnel {target}', said(data))
    _, data = exchange(f'GET http://{authority}/ HTTP/1.1\r\nHost: {authority}\r\n\r\n')
    if ' 200 ' in data.partition('\r\n')[0]:
        print(f'plain {target} ok', data.split('\r\n\r\n', 1)[-1].strip())
    else:
        print(f'plain {target}', said(data))
direct = socket.socket()
direct.settimeout(5)
try:
    direct.connect(('127.0.0.1', port))
    print('direct connected')
except OSError as error:
    print('direct refused', error)
";

#[tokio::test]
async fn the_proxy_admits_a_granted_host_and_refuses_the_rest_naming_each_refusal() {
    let space = Space::new();
    let server = LoopbackServer::start();
    // A host nobody asks for marks this sandbox's proxy among those of tests running beside
    // it: the plan the proxy is started with, on its command line, names it.
    let marker = format!(
        "proxy-{}-{}.invalid",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos()
    );
    let policy = Sandbox::new().network(Network::proxy(["127.0.0.1", marker.as_str()]));
    let port = server.port.to_string();
    let ran = python(
        &policy,
        &space.work,
        ASK,
        &[&port, "127.0.0.1", "localhost", "example.com"],
    )
    .await;
    assert_eq!(ran.code, Some(0), "{}", ran.shown());
    for way in ["tunnel", "plain"] {
        assert_eq!(
            ran.line(&format!("{way} 127.0.0.1 ok")),
            server.secret,
            "a granted host is reached through the proxy, by {way}:\n{}",
            ran.shown()
        );
        for host in ["localhost", "example.com"] {
            let line = ran.line(&format!("{way} {host}"));
            assert!(
                line.starts_with("403 Forbidden")
                    && line.contains(&format!("`{host}` is not among the allowed hosts")),
                "a host no pattern covers is refused in words, by {way}:\n{}",
                ran.shown()
            );
        }
    }
    assert!(
        ran.line("direct").starts_with("refused"),
        "going around the proxy must reach nothing (Landlock refuses every port but the proxy's):\n{}",
        ran.shown()
    );
    assert_eq!(
        server.connections(),
        2,
        "only the two granted requests reach the server"
    );
    for host in ["localhost", "example.com"] {
        assert!(
            ran.stderr.contains(&format!(
                "aleph-sandbox: the sandbox's network proxy refused {host}:{port}"
            )),
            "each refusal is named on standard error:\n{}",
            ran.shown()
        );
    }
    eventually("the proxy ends with the sandbox", || {
        !command_lines()
            .iter()
            .any(|line| line.contains("aleph-sandbox-proxy") && line.contains(&marker))
    })
    .await;
}

#[tokio::test]
async fn the_proxy_resolves_names_itself_and_refuses_loopback_private_and_embedded_addresses() {
    let space = Space::new();
    let server = LoopbackServer::start();
    // `*` grants every host; an address that is not public still needs a pattern naming it.
    let policy = Sandbox::new().network(Network::proxy(["*"]));
    let port = server.port.to_string();
    let targets = [
        // Names that resolve to loopback: only `localhost`, granted by name, would pass.
        "localhost",
        "127.1",
        "2130706433",
        // Addresses written out: loopback, private, link-local, IPv6-embedded loopback.
        "127.0.0.1",
        "10.0.0.1",
        "169.254.169.254",
        "[::1]",
        "[::ffff:127.0.0.1]",
        "[::ffff:7f00:1]",
        "[64:ff9b::7f00:1]",
    ];
    let mut args = vec![port.as_str()];
    args.extend(targets);
    let ran = python(&policy, &space.work, ASK, &args).await;
    assert_eq!(ran.code, Some(0), "{}", ran.shown());
    for target in targets {
        for way in ["tunnel", "plain"] {
            let line = ran.line(&format!("{way} {target} "));
            assert!(
                line.starts_with("403 Forbidden") && line.contains("address"),
                "{target} must be refused as an address that is not public, by {way}:\n{}",
                ran.shown()
            );
        }
    }
    assert!(
        ran.line("tunnel 127.1 ").contains("resolves to"),
        "a name is judged by what it resolves to:\n{}",
        ran.shown()
    );
    assert_eq!(
        server.connections(),
        0,
        "no refused request may reach the server"
    );
}

#[tokio::test]
async fn a_redirect_to_a_host_not_granted_is_refused_at_its_next_hop() {
    let space = Space::new();
    let target = LoopbackServer::start();
    let redirect = LoopbackServer::answering(
        format!(
            "HTTP/1.0 302 Found\r\nLocation: http://localhost:{}/\r\nContent-Length: 0\r\n\r\n",
            target.port
        ),
        String::new(),
    );
    let policy = Sandbox::new().network(Network::proxy(["127.0.0.1"]));
    let code = r"
import sys, urllib.request, urllib.error
try:
    with urllib.request.urlopen(f'http://127.0.0.1:{sys.argv[1]}/', timeout=20) as answer:
        print('followed', answer.read().decode().strip())
except urllib.error.HTTPError as error:
    print('refused', error.code, error.read().decode().strip())
";
    let ran = python(&policy, &space.work, code, &[&redirect.port.to_string()]).await;
    let line = ran.line("refused");
    assert!(
        line.starts_with("403") && line.contains("`localhost` is not among the allowed hosts"),
        "the redirect's next hop is a new request, checked again:\n{}",
        ran.shown()
    );
    assert_eq!(redirect.connections(), 1);
    assert_eq!(
        target.connections(),
        0,
        "the redirect must not reach its target"
    );
}

#[tokio::test]
async fn the_bash_tool_reaches_a_granted_host_with_curl_through_the_proxy() {
    assert!(
        super::sandbox::installed("curl"),
        "curl is needed (CI installs it from Debian)"
    );
    let space = Space::new();
    let server = LoopbackServer::start();
    let policy = Sandbox::new().network(Network::proxy(["127.0.0.1"]));
    let tools = bash_server(&space.work, policy);
    let script = format!(
        "curl -sS http://127.0.0.1:{port}/; curl -sS --noproxy '*' --max-time 5 http://127.0.0.1:{port}/ || echo around-refused",
        port = server.port
    );
    let result = tools.call("bash", json!({ "command": script })).await;
    assert!(result.success, "{:?}", result.error);
    let text = result.model_text();
    assert!(
        text.contains(&server.secret),
        "curl follows HTTP_PROXY to the granted host:\n{text}"
    );
    assert!(
        text.contains("around-refused"),
        "curl told to skip the proxy reaches nothing:\n{text}"
    );
    assert_eq!(server.connections(), 1);
}

#[tokio::test]
async fn a_pattern_with_a_port_opens_that_port_and_no_other_service_of_the_host() {
    let space = Space::new();
    let granted = LoopbackServer::start();
    // Another service on the host's loopback (a database, say), on a port not granted.
    let other = LoopbackServer::start();
    let policy = Sandbox::new().network(Network::proxy([format!("127.0.0.1:{}", granted.port)]));
    let reached = python(
        &policy,
        &space.work,
        ASK,
        &[&granted.port.to_string(), "127.0.0.1"],
    )
    .await;
    assert_eq!(
        reached.line("tunnel 127.0.0.1 ok"),
        granted.secret,
        "{}",
        reached.shown()
    );
    let refused = python(
        &policy,
        &space.work,
        ASK,
        &[&other.port.to_string(), "127.0.0.1"],
    )
    .await;
    for way in ["tunnel", "plain"] {
        let line = refused.line(&format!("{way} 127.0.0.1"));
        assert!(
            line.starts_with("403 Forbidden")
                && line.contains(&format!(
                    "port {} of `127.0.0.1` is not granted",
                    other.port
                )),
            "the proxy must hold a pattern to the port it names, by {way}:\n{}",
            refused.shown()
        );
    }
    assert_eq!(other.connections(), 0, "the other service must see nothing");
}
