//! [`McpEndpoint`]: where an MCP server is, a command or a URL.

#![cfg_attr(
    not(feature = "mcp-http"),
    allow(
        irrefutable_let_patterns,
        reason = "without `mcp-http` a command is the only endpoint"
    )
)]

use std::fmt;
use std::path::PathBuf;

use crate::sandbox::Sandbox;

/// The host's variables a command is given (when set), beside those set with
/// [`McpEndpoint::env`]: what a program needs to find its way, none of the host's secrets.
pub(super) const KEPT_ENV: &[&str] = &[
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "LANG", "LC_ALL", "LC_CTYPE", "TZ",
];

/// Where an MCP server is: a command that speaks MCP on its stdin and stdout, or a
/// streamable HTTP URL.
///
/// ```
/// use aleph_tools::mcp::McpEndpoint;
///
/// let local = McpEndpoint::command("npx")
///     .args(["-y", "@modelcontextprotocol/server-everything"])
///     .env("LOG_LEVEL", "warn");
/// let remote = McpEndpoint::url("http://127.0.0.1:8080/mcp");
/// assert_eq!(local.to_string(), "npx -y @modelcontextprotocol/server-everything");
/// assert_eq!(remote.to_string(), "http://127.0.0.1:8080/mcp");
/// ```
#[derive(Debug, Clone)]
pub struct McpEndpoint {
    pub(super) kind: EndpointKind,
}

#[derive(Debug, Clone)]
pub(super) enum EndpointKind {
    Command {
        program: String,
        args: Vec<String>,
        /// Values may be secrets: `Debug` shows the names only.
        env: Vec<(String, Secret)>,
        dir: Option<PathBuf>,
        sandbox: Sandbox,
    },
    #[cfg(feature = "mcp-http")]
    Url { url: String, token: Option<Secret> },
}

/// A bearer token, kept out of `Debug` output.
#[derive(Clone)]
pub(super) struct Secret(pub(super) String);

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<secret>")
    }
}

impl McpEndpoint {
    /// A server started as `program`, speaking MCP over its stdin and stdout. Its stderr
    /// goes to this process's stderr.
    ///
    /// It runs confined by the default [`Sandbox`] (system directories read-only, its
    /// working directory writable, no network; see [`sandbox`](Self::sandbox)), and its
    /// environment holds only `PATH`, `HOME`, `USER`, `LOGNAME`, `SHELL`, `TERM`, `LANG`,
    /// `LC_ALL`, `LC_CTYPE` and `TZ` from this process's, and what [`env`](Self::env) sets.
    pub fn command(program: impl Into<String>) -> Self {
        Self {
            kind: EndpointKind::Command {
                program: program.into(),
                args: Vec::new(),
                env: Vec::new(),
                dir: None,
                sandbox: Sandbox::new(),
            },
        }
    }

    /// A server at a streamable HTTP URL (`http://host:port/mcp`). Feature `mcp-http`.
    #[cfg(feature = "mcp-http")]
    #[cfg_attr(docsrs, doc(cfg(feature = "mcp-http")))]
    pub fn url(url: impl Into<String>) -> Self {
        Self {
            kind: EndpointKind::Url {
                url: url.into(),
                token: None,
            },
        }
    }

    /// Adds an argument to the command. No effect on a URL.
    #[must_use]
    pub fn arg(self, arg: impl Into<String>) -> Self {
        self.args([arg])
    }

    /// Adds arguments to the command. No effect on a URL.
    #[must_use]
    pub fn args(mut self, more: impl IntoIterator<Item = impl Into<String>>) -> Self {
        if let EndpointKind::Command { args, .. } = &mut self.kind {
            args.extend(more.into_iter().map(Into::into));
        }
        self
    }

    /// Sets an environment variable for the command. No effect on a URL.
    #[must_use]
    pub fn env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        if let EndpointKind::Command { env, .. } = &mut self.kind {
            env.push((key.into(), Secret(value.into())));
        }
        self
    }

    /// Sends `Authorization: Bearer <token>` with every request, for a server that
    /// requires a token. No effect on a command. The token never appears in `Debug` output.
    ///
    /// ```
    /// use aleph_tools::mcp::McpEndpoint;
    ///
    /// let remote = McpEndpoint::url("https://tools.example.com/mcp").bearer_token("s3cr3t");
    /// assert!(!format!("{remote:?}").contains("s3cr3t"));
    /// ```
    #[cfg(feature = "mcp-http")]
    #[cfg_attr(docsrs, doc(cfg(feature = "mcp-http")))]
    #[must_use]
    pub fn bearer_token(mut self, token: impl Into<String>) -> Self {
        if let EndpointKind::Url { token: slot, .. } = &mut self.kind {
            *slot = Some(Secret(token.into()));
        }
        self
    }

    /// The sandbox policy the command runs under: what it may read and write beside the
    /// system directories and its working directory, its network and its limits. A server
    /// that fetches from the web needs [`Network::Full`](crate::sandbox::Network::Full); one
    /// started through `npx` or `uvx` needs their caches (`~/.npm`, `~/.cache/uv`) writable
    /// and the network to download. [`Sandbox::none`] runs it with this process's rights.
    /// No effect on a URL.
    #[must_use]
    pub fn sandbox(mut self, policy: Sandbox) -> Self {
        if let EndpointKind::Command { sandbox: slot, .. } = &mut self.kind {
            *slot = policy;
        }
        self
    }

    /// Sets the command's working directory. No effect on a URL.
    #[must_use]
    pub fn current_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        if let EndpointKind::Command { dir: slot, .. } = &mut self.kind {
            *slot = Some(dir.into());
        }
        self
    }
}

impl fmt::Display for McpEndpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            EndpointKind::Command { program, args, .. } => {
                f.write_str(program)?;
                for arg in args {
                    write!(f, " {arg}")?;
                }
                Ok(())
            }
            #[cfg(feature = "mcp-http")]
            EndpointKind::Url { url, .. } => f.write_str(url),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::McpEndpoint;

    #[test]
    #[cfg(feature = "mcp-http")]
    fn debug_shows_no_secret() {
        let shown = format!(
            "{:?} {:?}",
            McpEndpoint::command("server").env("API_TOKEN", "sk-hidden-1"),
            McpEndpoint::url("http://127.0.0.1:1/mcp").bearer_token("sk-hidden-2")
        );
        assert!(shown.contains("API_TOKEN"), "{shown}");
        assert!(!shown.contains("sk-hidden"), "{shown}");
    }
}
