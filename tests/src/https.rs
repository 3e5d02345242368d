//! An HTTPS server on loopback for download tests: Python's `http.server` behind TLS, with a
//! certificate authority and a certificate for `127.0.0.1` and `localhost` made by
//! `openssl` for the test.
//!
//! It serves `/files/NAME` from a directory (with `?unsized`, without `Content-Length`),
//! `/redirect?to=URL` as a `302`, and `/slow`, which answers after a minute.

use std::io::{BufRead as _, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

const SERVER: &str = r#"
import http.server, os, ssl, sys, time, urllib.parse
root, cert, key = sys.argv[1:4]

class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):
        url = urllib.parse.urlsplit(self.path)
        query = urllib.parse.parse_qs(url.query, keep_blank_values=True)
        if url.path == "/redirect":
            self.send_response(302)
            self.send_header("Location", query["to"][0])
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if url.path == "/slow":
            time.sleep(60)
        path = os.path.join(root, url.path[len("/files/"):]) if url.path.startswith("/files/") else ""
        if not os.path.isfile(path):
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        data = open(path, "rb").read()
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        if "unsized" in query:
            self.send_header("Connection", "close")
            self.close_connection = True
        else:
            self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(cert, key)
server.socket = context.wrap_socket(server.socket, server_side=True)
print(server.server_address[1], flush=True)
server.serve_forever()
"#;

/// The server; stopped when dropped.
pub struct HttpsFiles {
    child: Child,
    port: u16,
    ca: Vec<u8>,
    _keys: tempfile::TempDir,
}

impl HttpsFiles {
    /// Serves the files in `root` over HTTPS on a free loopback port.
    ///
    /// # Panics
    ///
    /// When `openssl` or `python3` fails.
    pub fn start(root: &Path) -> Self {
        let keys = tempfile::tempdir().unwrap();
        let dir = keys.path();
        let openssl = |args: &[&str]| {
            let output = Command::new("openssl")
                .args(args)
                .current_dir(dir)
                .output()
                .unwrap();
            assert!(output.status.success(), "openssl {args:?}: {output:?}");
        };
        let ec = [
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
        ];
        openssl(
            &[
                &["req", "-x509"][..],
                &ec,
                &["-keyout", "ca.key", "-out", "ca.pem", "-days", "2"],
                &["-subj", "/CN=aleph-tools test authority"],
            ]
            .concat(),
        );
        openssl(
            &[
                &["req"][..],
                &ec,
                &[
                    "-keyout",
                    "leaf.key",
                    "-out",
                    "leaf.csr",
                    "-subj",
                    "/CN=127.0.0.1",
                ],
            ]
            .concat(),
        );
        std::fs::write(
            dir.join("leaf.ext"),
            "basicConstraints=CA:FALSE\nsubjectAltName=IP:127.0.0.1,DNS:localhost\n",
        )
        .unwrap();
        openssl(&[
            "x509",
            "-req",
            "-in",
            "leaf.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            "leaf.pem",
            "-days",
            "2",
            "-extfile",
            "leaf.ext",
        ]);
        let mut child = Command::new("python3")
            .args(["-c", SERVER])
            .arg(root)
            .arg(dir.join("leaf.pem"))
            .arg(dir.join("leaf.key"))
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("no port: {line:?}"));
        Self {
            child,
            port,
            ca: std::fs::read(dir.join("ca.pem")).unwrap(),
            _keys: keys,
        }
    }

    /// `https://127.0.0.1:PORT` followed by `path`.
    pub fn url(&self, path: &str) -> String {
        format!("https://127.0.0.1:{}{path}", self.port)
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The certificate authority that signed its certificate, as PEM.
    pub fn ca_pem(&self) -> &[u8] {
        &self.ca
    }
}

impl Drop for HttpsFiles {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
