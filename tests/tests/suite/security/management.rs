//! The management API as an attacker meets it: a caller without the `admin` scope, and
//! downloads that try to leave the host rule, https, the size cap, the time limit or the
//! digest. Every address tried is a loopback one, refused before any connection.

use std::time::Duration;

use aleph_tools::plugin::{AdminError, PluginAdmin};
use aleph_tools_tests::https::HttpsFiles;
use aleph_tools_tests::plugin_files::{archive, static_plugin};
use serde_json::{Value, json};

use crate::admin::{AGENT, OPS, entries, error_of, manager, post, serve, sha256_of};

#[tokio::test(flavor = "multi_thread")]
async fn only_an_identity_with_the_admin_scope_is_answered() {
    let search = tempfile::tempdir().unwrap();
    let (server, manager) = manager(search.path());
    let admin = PluginAdmin::new(&manager);
    let list = r#"{"jsonrpc":"2.0","id":1,"method":"plugins.list"}"#;

    let (http, url) = serve(&server, &admin, true).await;
    // No token: the server's own gate answers, before the API.
    let (status, _, _) = post(&url, None, list).await;
    assert_eq!(status, 401);
    let (status, headers, answer) = post(&url, Some(AGENT), list).await;
    assert_eq!(status, 403, "{answer}");
    let challenge = headers["www-authenticate"].to_str().unwrap();
    assert!(
        challenge.contains("insufficient_scope") && challenge.contains("scope=\"admin\""),
        "{challenge}"
    );
    let (_, message) = error_of(&answer);
    assert!(
        message.contains("`agent`") && message.contains("`admin`"),
        "{message}"
    );
    let (status, _, answer) = post(&url, Some(OPS), list).await;
    assert_eq!(
        (status, &answer["result"]),
        (200, &json!({ "plugins": [] })),
        "{answer}"
    );
    // GET is not a method of the API.
    let got = reqwest::Client::new()
        .get(&url)
        .bearer_auth(OPS)
        .send()
        .await
        .unwrap();
    assert_eq!(got.status(), 405);
    drop(http);

    // A server without tokens authenticates nobody: the API refuses everyone, saying how
    // to open it.
    let (http, url) = serve(&server, &admin, false).await;
    let (status, _, answer) = post(&url, None, list).await;
    assert_eq!(status, 401, "{answer}");
    let (_, message) = error_of(&answer);
    assert!(
        message.contains("[[server.tokens]]") && message.contains("`admin`"),
        "{message}"
    );
    drop(http);

    // Another scope, when the application names one.
    let (http, url) = serve(&server, &admin.clone().with_scope("plugins:manage"), true).await;
    let (status, headers, _) = post(&url, Some(OPS), list).await;
    assert_eq!(status, 403);
    assert!(
        headers["www-authenticate"]
            .to_str()
            .unwrap()
            .contains("scope=\"plugins:manage\"")
    );
    drop(http);
}

/// Calls `plugins.install` with `source` on `admin`; the error's text.
async fn refused(admin: &PluginAdmin, params: Value) -> String {
    match admin.call("plugins.install", params).await {
        Ok(installed) => panic!("installed: {installed}"),
        Err(error) => {
            assert!(
                matches!(error, AdminError::Download { .. } | AdminError::Plugin(_)),
                "{error:?}"
            );
            error.to_string()
        }
    }
}

/// An HTTPS server holding a plugin's zip (and a text file), a manager whose search path is
/// empty, and the API granted `127.0.0.1` with the server's authority trusted.
struct Downloads {
    _dirs: [tempfile::TempDir; 3],
    installed: std::path::PathBuf,
    digest: String,
    files: HttpsFiles,
    manager: aleph_tools::plugin::PluginManager,
    admin: PluginAdmin,
    good: String,
}

fn downloads() -> Downloads {
    let sources = tempfile::tempdir().unwrap();
    let served = tempfile::tempdir().unwrap();
    let search = tempfile::tempdir().unwrap();
    let installed = search.path().join("plugins");
    let dir = static_plugin(sources.path(), "notes", "");
    let packed = archive(&dir, "zip", false);
    std::fs::copy(&packed, served.path().join("notes.zip")).unwrap();
    std::fs::write(served.path().join("notes.txt"), "just text, no archive").unwrap();
    let digest = sha256_of(&packed);
    let files = HttpsFiles::start(served.path());
    let (_server, manager) = manager(&installed);
    let admin = PluginAdmin::new(&manager)
        .with_root_certificate(files.ca_pem())
        .with_download_hosts(["connect:127.0.0.1"])
        .with_download_timeout(Duration::from_secs(3));
    let good = files.url("/files/notes.zip");
    Downloads {
        _dirs: [sources, served, search],
        installed,
        digest,
        files,
        manager,
        admin,
        good,
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn downloads_go_over_https_to_granted_hosts_only() {
    let Downloads {
        files,
        manager,
        admin,
        good,
        // The directories live as long as the test.
        _dirs,
        ..
    } = downloads();
    // Over http, or redirected to it.
    let plain = format!("http://127.0.0.1:{}/files/notes.zip", files.port());
    let why = refused(&admin, json!({ "source": plain })).await;
    assert!(why.contains("https only"), "{why}");
    let to_plain = files.url(&format!("/redirect?to={plain}"));
    let why = refused(&admin, json!({ "source": to_plain })).await;
    assert!(
        why.contains("redirected to") && why.contains("https only"),
        "{why}"
    );
    // A host the rule does not grant, asked for or redirected to.
    let named = format!("https://localhost:{}/files/notes.zip", files.port());
    let why = refused(&admin, json!({ "source": named })).await;
    assert!(
        why.contains("`localhost` is not among the allowed hosts"),
        "{why}"
    );
    let why = refused(
        &admin,
        json!({ "source": files.url(&format!("/redirect?to={named}")) }),
    )
    .await;
    assert!(
        why.contains("redirected to") && why.contains("not among"),
        "{why}"
    );
    // The default rule reaches public hosts only: loopback is refused before connecting.
    let open = PluginAdmin::new(&manager).with_root_certificate(files.ca_pem());
    for url in [
        good.clone(),
        format!("https://localhost:{}/files/notes.zip", files.port()),
        format!(
            "https://[::ffff:127.0.0.1]:{}/files/notes.zip",
            files.port()
        ),
        format!("https://[::1]:{}/files/notes.zip", files.port()),
    ] {
        let why = refused(&open, json!({ "source": url })).await;
        assert!(
            why.contains("reached only through a rule") || why.contains("no name but `localhost`"),
            "{url}: {why}"
        );
    }
    // A server whose certificate nobody vouches for.
    let untrusting = PluginAdmin::new(&manager).with_download_hosts(["connect:127.0.0.1"]);
    let why = refused(&untrusting, json!({ "source": good })).await;
    assert!(
        why.contains("could not be reached") && why.contains("UnknownIssuer"),
        "{why}"
    );

    // Credentials in the URL are refused, and not repeated in the error.
    let secret = format!(
        "https://user:hunter2@127.0.0.1:{}/files/notes.zip",
        files.port()
    );
    let why = refused(&admin, json!({ "source": secret })).await;
    assert!(
        why.contains("carries credentials") && !why.contains("hunter2"),
        "{why}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn downloads_hold_to_the_size_cap_the_time_and_the_digest() {
    let Downloads {
        installed,
        digest,
        files,
        manager,
        admin,
        good,
        // The directories live as long as the test.
        _dirs,
        ..
    } = downloads();
    // Larger than the cap, announced or not.
    let small = admin.clone().with_max_download(64);
    for url in [good.clone(), format!("{good}?unsized")] {
        let why = refused(&small, json!({ "source": url })).await;
        assert!(why.contains("larger than the 64 bytes"), "{why}");
    }
    // Slow, missing, or not an archive.
    let why = refused(&admin, json!({ "source": files.url("/slow") })).await;
    assert!(why.contains("within 3 s"), "{why}");
    let why = refused(&admin, json!({ "source": files.url("/files/gone.zip") })).await;
    assert!(why.contains("404"), "{why}");
    let why = refused(&admin, json!({ "source": files.url("/files/notes.txt") })).await;
    assert!(
        why.contains("neither a gzip-compressed tar nor a zip"),
        "{why}"
    );
    // A digest that differs: nothing lands in the search path.
    let why = refused(&admin, json!({ "source": good, "sha256": "1".repeat(64) })).await;
    assert!(
        why.contains(&digest) && why.contains("nothing was installed"),
        "{why}"
    );
    assert!(entries(&installed).is_empty(), "{:?}", entries(&installed));
    assert!(manager.list().is_empty());

    // The digest that matches, through a redirect the rule allows.
    let redirected = files.url("/redirect?to=/files/notes.zip");
    let plugin = admin
        .call(
            "plugins.install",
            json!({ "source": redirected, "sha256": digest }),
        )
        .await
        .unwrap();
    assert_eq!(plugin["status"], "running", "{plugin}");
    assert_eq!(entries(&installed), ["notes"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_archive_checked_by_its_digest_is_the_one_installed() {
    let sources = tempfile::tempdir().unwrap();
    let search = tempfile::tempdir().unwrap();
    let installed = search.path().join("plugins");
    let (_server, manager) = manager(&installed);
    let admin = PluginAdmin::new(&manager);
    let packed = archive(&static_plugin(sources.path(), "notes", ""), "zip", false);
    let digest = sha256_of(&packed);

    // A named pipe has no digest: refused at once, not read forever.
    let pipe = sources.path().join("pipe.zip");
    let made = std::process::Command::new("mkfifo")
        .arg(&pipe)
        .status()
        .unwrap();
    assert!(made.success());
    let why = refused(&admin, json!({ "source": pipe, "sha256": digest })).await;
    assert!(why.contains("not a regular file"), "{why}");
    let why = refused(&admin, json!({ "source": pipe })).await;
    assert!(
        why.contains("neither a directory nor a regular file"),
        "{why}"
    );

    // The copy is what is checked and installed: the file is read once.
    let plugin = admin
        .call(
            "plugins.install",
            json!({ "source": packed, "sha256": digest }),
        )
        .await
        .unwrap();
    assert_eq!(plugin["id"], "notes", "{plugin}");
    assert_eq!(entries(&installed), ["notes"]);
}
