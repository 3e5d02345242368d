//! Downloads for `plugins.install`: https only, the URL and every redirect held to the host
//! rule (and the connection to an address the rule admitted), a size cap, one time limit for
//! the whole, and the SHA-256 checked before anything is unpacked.

use std::fmt;
use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use reqwest::Url;
use reqwest::header::{CONTENT_LENGTH, LOCATION};
use sha2::{Digest as _, Sha256};
use tokio::io::AsyncWriteExt as _;
use tokio::sync::Semaphore;

use super::AdminError;
use crate::util::hosts::{GuardedResolver, HostRule, why_failed};

/// The most redirects a download follows.
const MAX_REDIRECTS: usize = 5;

/// How many downloads run at once; more wait their turn.
const AT_ONCE: usize = 2;

/// The largest archive on the server's machine copied to be checked against a digest.
const MAX_COPIED: u64 = 1 << 30;

/// A SHA-256 digest.
pub(super) type Digest = [u8; 32];

/// Where downloads may come from, and how much and how long they may take.
#[derive(Clone)]
pub(super) struct Downloads {
    /// `connect:` rules; any public host when `None`.
    pub hosts: Option<Vec<String>>,
    pub max_bytes: u64,
    pub timeout: Duration,
    /// Certificate authorities (PEM) trusted beside the system's.
    pub roots: Vec<Vec<u8>>,
    /// Turns for downloads, shared by the clones of one API.
    turns: Arc<Semaphore>,
}

impl Default for Downloads {
    fn default() -> Self {
        Self {
            hosts: None,
            max_bytes: 64 << 20,
            timeout: Duration::from_mins(1),
            roots: Vec::new(),
            turns: Arc::new(Semaphore::new(AT_ONCE)),
        }
    }
}

impl fmt::Debug for Downloads {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Downloads")
            .field("hosts", &self.hosts)
            .field("max_bytes", &self.max_bytes)
            .field("timeout", &self.timeout)
            .field("roots", &self.roots.len())
            .finish_non_exhaustive()
    }
}

/// A downloaded archive, in a temporary directory removed when `dir` is dropped.
pub(super) struct Downloaded {
    pub dir: tempfile::TempDir,
    /// `plugin.tar.gz` or `plugin.zip` in `dir`, named for what the archive is.
    pub path: PathBuf,
}

/// Downloads the archive at `url` under `settings`; checks it against `sha256` when given.
pub(super) async fn fetch(
    settings: &Downloads,
    url: &str,
    sha256: Option<Digest>,
) -> Result<Downloaded, AdminError> {
    let fail = |message: String| AdminError::Download {
        url: url.to_owned(),
        message,
    };
    let parsed = Url::parse(url).map_err(|e| fail(format!("it is not a URL: {e}")))?;
    if !parsed.username().is_empty() || parsed.password().is_some() {
        // Said without the URL, which holds the secret.
        return Err(AdminError::Download {
            url: "(a URL with credentials)".to_owned(),
            message: "it carries credentials, which would be logged and sent on redirects; give a URL without them".to_owned(),
        });
    }
    let (rule, client) = client(settings).map_err(fail)?;
    let _turn = settings
        .turns
        .acquire()
        .await
        .map_err(|_| fail("the downloads are closed".to_owned()))?;
    let dir = tempfile::Builder::new()
        .prefix("aleph-tools-download-")
        .tempdir()
        .map_err(|e| fail(format!("cannot make a directory to download into: {e}")))?;
    let part = dir.path().join("download.part");
    let (found, head) = tokio::time::timeout(
        settings.timeout,
        get(&rule, &client, parsed, settings, &part),
    )
    .await
    .map_err(|_| {
        fail(format!(
            "it did not arrive in full within {} s",
            settings.timeout.as_secs_f64()
        ))
    })?
    .map_err(fail)?;
    if let Some(expected) = sha256 {
        compare(&expected, &found).map_err(fail)?;
    }
    let name = if head.starts_with(&[0x1f, 0x8b]) {
        "plugin.tar.gz"
    } else if head.starts_with(b"PK\x03\x04") {
        "plugin.zip"
    } else {
        return Err(fail(
            "it is neither a gzip-compressed tar nor a zip archive; a plugin is downloaded as a `.tar.gz`, `.tgz` or `.zip`".to_owned(),
        ));
    };
    let path = dir.path().join(name);
    tokio::fs::rename(&part, &path)
        .await
        .map_err(|e| fail(format!("cannot keep the download: {e}")))?;
    tracing::info!(%url, sha256 = %hex(&found), "plugin archive downloaded");
    Ok(Downloaded { dir, path })
}

/// The host rule and an HTTP client held to it.
fn client(settings: &Downloads) -> Result<(HostRule, reqwest::Client), String> {
    let every = ["connect:*".to_owned()];
    let patterns = settings
        .hosts
        .as_deref()
        .unwrap_or(&every)
        .iter()
        .map(|rule| crate::util::hosts::parse_rule(rule))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|problem| format!("the download hosts are misconfigured: {problem}"))?;
    let rule = HostRule::new(patterns);
    let roots = settings
        .roots
        .iter()
        .map(|pem| reqwest::Certificate::from_pem(pem))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("a root certificate given for downloads cannot be read: {e}"))?;
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .https_only(true)
        .no_proxy()
        .dns_resolver(GuardedResolver { rule: rule.clone() })
        .tls_certs_merge(roots)
        .connect_timeout(settings.timeout.min(Duration::from_secs(10)))
        .user_agent(concat!("aleph-tools/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| format!("the HTTP client cannot be made: {e}"))?;
    Ok((rule, client))
}

/// Follows redirects, each hop checked, and writes the body to `into` within the size cap;
/// its digest and first bytes.
async fn get(
    rule: &HostRule,
    client: &reqwest::Client,
    mut url: Url,
    settings: &Downloads,
    into: &Path,
) -> Result<(Digest, Vec<u8>), String> {
    let mut hops = 0;
    let mut response = loop {
        let redirected = |why: String| {
            if hops > 0 {
                format!("it redirected to `{url}`: {why}")
            } else {
                why
            }
        };
        if url.scheme() != "https" {
            return Err(redirected(format!(
                "`{}:` URLs are refused: plugins are downloaded over https only",
                url.scheme()
            )));
        }
        if let Err(refusal) = rule.check(url.scheme(), url.host_str()) {
            return Err(redirected(refusal.to_string()));
        }
        let response = client
            .get(url.clone())
            .send()
            .await
            .map_err(|e| redirected(request_error(&e)))?;
        let status = response.status().as_u16();
        if !matches!(status, 301 | 302 | 303 | 307 | 308) {
            break response;
        }
        let Some(location) = response
            .headers()
            .get(LOCATION)
            .and_then(|l| l.to_str().ok())
        else {
            break response;
        };
        if hops == MAX_REDIRECTS {
            return Err(format!("it redirected more than {MAX_REDIRECTS} times"));
        }
        url = url
            .join(location)
            .map_err(|e| format!("it redirected to `{location}`, which is not a URL: {e}"))?;
        hops += 1;
    };
    let status = response.status();
    if !status.is_success() {
        return Err(format!("the server answered {status}"));
    }
    let max = settings.max_bytes;
    let too_big = || format!("it is larger than the {max} bytes a plugin download may be");
    let announced = response
        .headers()
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    if announced.is_some_and(|len| len > max) {
        return Err(too_big());
    }
    let mut file = tokio::fs::File::create(into)
        .await
        .map_err(|e| format!("cannot write the download: {e}"))?;
    let mut hasher = Sha256::new();
    let mut head = Vec::new();
    let mut read: u64 = 0;
    while let Some(chunk) = response.chunk().await.map_err(|e| request_error(&e))? {
        read += chunk.len() as u64;
        if read > max {
            return Err(too_big());
        }
        if head.len() < 4 {
            head.extend(chunk.iter().take(4 - head.len()));
        }
        hasher.update(&chunk);
        file.write_all(&chunk)
            .await
            .map_err(|e| format!("cannot write the download: {e}"))?;
    }
    file.flush()
        .await
        .map_err(|e| format!("cannot write the download: {e}"))?;
    Ok((hasher.finalize().into(), head))
}

/// Why a request failed: the host rule's refusal when that was it, else what went wrong.
fn request_error(error: &reqwest::Error) -> String {
    match why_failed(error) {
        Ok(refused) => refused.to_string(),
        Err((what, deepest)) => format!("it {what}: {deepest}"),
    }
}

/// The digest written in `text`: 64 hex digits, `sha256:` before them allowed.
pub(super) fn digest_from_hex(text: &str) -> Result<Digest, String> {
    let text = text.trim();
    let digits = text.strip_prefix("sha256:").unwrap_or(text);
    let bad = || format!("must be 64 hex digits, not `{text}`");
    if digits.len() != 64 || !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(bad());
    }
    let mut digest = [0; 32];
    for (byte, pair) in digest.iter_mut().zip(digits.as_bytes().chunks(2)) {
        let pair = std::str::from_utf8(pair).map_err(|_| bad())?;
        *byte = u8::from_str_radix(pair, 16).map_err(|_| bad())?;
    }
    Ok(digest)
}

/// Why an archive on this machine could not be copied and checked.
pub(super) enum Refused {
    /// It is a directory, which has no digest.
    Directory,
    /// Anything else, said.
    Other(String),
}

/// Copies the archive at `path` (a regular file, at most 1 GiB) into a new temporary
/// directory, hashing it as it goes, and keeps the copy when its digest is `expected`.
pub(super) fn copy_checked(
    path: &Path,
    expected: &Digest,
) -> Result<(tempfile::TempDir, PathBuf), Refused> {
    let failed = |what: &str, e: std::io::Error| Refused::Other(format!("cannot {what}: {e}"));
    let meta = std::fs::metadata(path).map_err(|e| failed("read it", e))?;
    if meta.is_dir() {
        return Err(Refused::Directory);
    }
    if !meta.is_file() {
        return Err(Refused::Other(
            "it is not a regular file (a pipe or a device has no digest to check)".to_owned(),
        ));
    }
    if meta.len() > MAX_COPIED {
        return Err(Refused::Other(format!(
            "it is larger than the {} GiB an archive may be",
            MAX_COPIED >> 30
        )));
    }
    let dir = tempfile::Builder::new()
        .prefix("aleph-tools-checked-")
        .tempdir()
        .map_err(|e| failed("make a directory to copy it into", e))?;
    // The copy keeps the name, which says what kind of archive it is.
    let name = path.file_name().unwrap_or(std::ffi::OsStr::new("archive"));
    let copy = dir.path().join(name);
    let mut from = std::fs::File::open(path).map_err(|e| failed("read it", e))?;
    let mut to = std::fs::File::create(&copy).map_err(|e| failed("copy it", e))?;
    let mut hasher = Sha256::new();
    let mut buffer = vec![0; 64 * 1024];
    let mut copied: u64 = 0;
    loop {
        let read = from.read(&mut buffer).map_err(|e| failed("read it", e))?;
        if read == 0 {
            break;
        }
        copied += read as u64;
        if copied > MAX_COPIED {
            return Err(Refused::Other(
                "it grew past 1 GiB while it was read".to_owned(),
            ));
        }
        hasher.update(&buffer[..read]);
        to.write_all(&buffer[..read])
            .map_err(|e| failed("copy it", e))?;
    }
    let found: Digest = hasher.finalize().into();
    compare(expected, &found).map_err(Refused::Other)?;
    Ok((dir, copy))
}

/// Refuses an archive whose digest is not the one given.
pub(super) fn compare(expected: &Digest, found: &Digest) -> Result<(), String> {
    if expected == found {
        return Ok(());
    }
    Err(format!(
        "its SHA-256 is {}, not the {} given; nothing was installed",
        hex(found),
        hex(expected)
    ))
}

fn hex(digest: &Digest) -> String {
    use std::fmt::Write as _;
    digest
        .iter()
        .fold(String::with_capacity(64), |mut text, byte| {
            let _ = write!(text, "{byte:02x}");
            text
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digests_are_read_from_hex_and_compared() {
        let text = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
        let digest = digest_from_hex(text).unwrap();
        assert_eq!(hex(&digest), text);
        assert_eq!(
            digest_from_hex(&format!("sha256:{}", text.to_uppercase())).unwrap(),
            digest
        );
        assert_eq!(digest, <Digest>::from(Sha256::digest(b"")));
        for wrong in [
            "",
            "abc",
            &text[1..],
            &format!("{}zz", &text[2..]),
            "é".repeat(32).as_str(),
        ] {
            assert!(digest_from_hex(wrong).is_err(), "{wrong}");
        }
        let other = [0; 32];
        let refused = compare(&other, &digest).unwrap_err();
        assert!(
            refused.contains(text) && refused.contains("nothing was installed"),
            "{refused}"
        );
    }
}
