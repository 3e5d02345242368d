//! Keeps a plugin's process running: starts it, restarts it with backoff when it dies, gives
//! up after too many crashes in a row, and stops it gracefully when the plugin is dropped.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::sync::{broadcast, oneshot, watch};
use tokio_util::sync::CancellationToken;

use super::super::config::NodeConfig;
use super::NodeCallError;
use super::connection::{Connection, Spawn};
use super::protocol::{InitializeResult, PROTOCOL_VERSION};

/// A process that ran this long before it died starts the crash count again.
const STABLE: Duration = Duration::from_mins(1);

/// Where a plugin's process is.
#[derive(Clone)]
pub(super) enum Phase {
    /// Starting, the first time or again after a crash.
    Starting,
    /// Answering calls.
    Ready(Arc<Connection>),
    /// Died; a restart is due.
    Restarting { reason: String, attempt: u32 },
    /// Died too often in a row; stays down until the plugin is reloaded.
    Failed(String),
    /// Stopped on purpose.
    Stopped,
}

pub(super) struct Supervisor {
    pub(super) id: String,
    pub(super) spawn: Spawn,
    pub(super) initialize: Value,
    pub(super) config: NodeConfig,
    pub(super) phase: watch::Sender<Phase>,
    /// Messages the plugin's channels receive, from whichever process is running.
    pub(super) inbound: broadcast::Sender<(Arc<str>, Value)>,
}

impl Supervisor {
    /// Runs the plugin until `stop`. The first start's outcome goes to `first`; when it fails,
    /// the plugin does not load and nothing is retried.
    pub(super) async fn run(
        self,
        stop: CancellationToken,
        first: oneshot::Sender<Result<InitializeResult, String>>,
    ) {
        let mut first = Some(first);
        let mut crashes = 0u32;
        loop {
            self.phase.send_replace(Phase::Starting);
            let started = tokio::select! {
                started = self.start() => started,
                () = stop.cancelled() => Err("the plugin was stopped while it started".into()),
            };
            let reason = match started {
                Ok((connection, init)) => {
                    if let Some(first) = first.take() {
                        let _ = first.send(Ok(init));
                    }
                    self.phase
                        .send_replace(Phase::Ready(Arc::clone(&connection)));
                    let up = Instant::now();
                    tokio::select! {
                        reason = connection.exited() => {
                            if up.elapsed() >= STABLE {
                                crashes = 0;
                            }
                            with_output(&format!("crashed: {reason}"), &connection)
                        }
                        () = stop.cancelled() => {
                            self.phase.send_replace(Phase::Stopped);
                            connection.shutdown(self.config.shutdown_grace()).await;
                            return;
                        }
                    }
                }
                Err(error) => {
                    if let Some(first) = first.take() {
                        let _ = first.send(Err(error));
                        self.phase.send_replace(Phase::Stopped);
                        return;
                    }
                    error
                }
            };
            if stop.is_cancelled() {
                self.phase.send_replace(Phase::Stopped);
                return;
            }
            crashes += 1;
            let policy = &self.config.restart;
            if crashes > policy.max_restarts {
                let message = format!(
                    "{reason}; gave up after {} restart(s) in a row; fix the plugin and reload it",
                    policy.max_restarts
                );
                tracing::error!(plugin = %self.id, "{message}");
                self.phase.send_replace(Phase::Failed(message));
                stop.cancelled().await;
                self.phase.send_replace(Phase::Stopped);
                return;
            }
            let wait = policy.backoff(crashes);
            tracing::warn!(
                plugin = %self.id,
                "{reason}; restarting in {}ms (restart {crashes} of at most {})",
                wait.as_millis(),
                policy.max_restarts
            );
            self.phase.send_replace(Phase::Restarting {
                reason,
                attempt: crashes,
            });
            tokio::select! {
                () = tokio::time::sleep(wait) => {}
                () = stop.cancelled() => {
                    self.phase.send_replace(Phase::Stopped);
                    return;
                }
            }
        }
    }

    /// Starts one process and waits for its answer to `initialize`.
    async fn start(&self) -> Result<(Arc<Connection>, InitializeResult), String> {
        let connection = Connection::spawn(
            &self.id,
            &self.spawn,
            self.config.max_message.bytes(),
            self.inbound.clone(),
        )?;
        let timeout = Duration::from_millis(self.config.start_timeout_ms);
        let answered = tokio::select! {
            answer = tokio::time::timeout(
                timeout,
                connection.request("initialize", &self.initialize, None),
            ) => answer,
            reason = connection.exited() => {
                return Err(with_output(
                    &format!("it ended before answering `initialize`: {reason}"),
                    &connection,
                ));
            }
        };
        let fail = |message: String| {
            connection.kill();
            Err(with_output(&message, &connection))
        };
        let answer = match answered {
            Err(_) => {
                return fail(format!(
                    "it did not answer `initialize` within {}ms (`[plugins.runtimes.nodejs] start_timeout_ms`); does its entry call `server.start()`?",
                    timeout.as_millis()
                ));
            }
            Ok(Err(NodeCallError::Exited(reason))) => {
                return fail(format!("it ended before answering `initialize`: {reason}"));
            }
            Ok(Err(error)) => return fail(format!("its answer to `initialize` failed: {error}")),
            Ok(Ok(answer)) => answer,
        };
        let init = match serde_json::from_value::<InitializeResult>(answer) {
            Ok(init) => init,
            Err(e) => return fail(format!("its answer to `initialize` is malformed: {e}")),
        };
        if init.protocol_version != PROTOCOL_VERSION {
            return fail(format!(
                "it speaks plugin protocol {}, and this host speaks {PROTOCOL_VERSION}; update @aleph/plugin-sdk or the host",
                init.protocol_version
            ));
        }
        if !init.missing.is_empty() {
            return fail(format!(
                "it has no handler for {}; add them to `createServer` or fix the manifest",
                init.missing.join(", ")
            ));
        }
        tracing::info!(
            plugin = %self.id,
            pid = connection.pid().unwrap_or_default(),
            sdk = init.sdk.as_deref().unwrap_or("unknown"),
            "plugin process started"
        );
        Ok((connection, init))
    }
}

impl NodeConfig {
    fn shutdown_grace(&self) -> Duration {
        Duration::from_millis(self.shutdown_grace_ms)
    }
}

/// `message`, followed by the last lines the process wrote to stderr.
fn with_output(message: &str, connection: &Connection) -> String {
    let tail = connection.stderr_tail();
    if tail.trim().is_empty() {
        message.to_owned()
    } else {
        format!("{message}; its last output:\n{tail}")
    }
}
