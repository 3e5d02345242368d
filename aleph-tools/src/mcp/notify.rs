//! Progress and log notifications from running tools to the client that called them.
//!
//! MCP's 2026-07-28 revision deprecates logging (`logging/setLevel`,
//! `notifications/message`); clients of the earlier revisions use it, so it is served.
#![allow(deprecated)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};

use rmcp::model::{
    LoggingLevel, LoggingMessageNotificationParam, ProgressNotificationParam, ProgressToken,
};
use rmcp::service::RequestContext;
use rmcp::{Peer, RoleServer};
use tokio::sync::{mpsc, oneshot};

use crate::{LogLevel, ProgressEvent};

/// Sends a session's progress and log notifications to its client, in the order the tools
/// reported them.
#[derive(Clone)]
pub(super) struct Notifier {
    events: mpsc::UnboundedSender<Forward>,
}

enum Forward {
    Progress(ProgressNotificationParam),
    Log(LoggingMessageNotificationParam),
    Flush(oneshot::Sender<()>),
}

/// The least severe log message one call sends.
pub(super) enum LogFloor {
    /// The session's, set by `logging/setLevel` and read at each message so that a change
    /// applies at once: clients that connected with the handshake.
    Session(Arc<AtomicU8>),
    /// The request's own, from `_meta` (`io.modelcontextprotocol/logLevel`).
    Request(LogLevel),
    /// None: a 2026-07-28 request that did not opt in.
    Off,
}

impl LogFloor {
    /// The floor for a request: its own level if it gives one; else nothing for requests
    /// without a handshake (`stateless`: they carry the protocol version), the session's
    /// for the rest.
    pub(super) fn of(
        context: &RequestContext<RoleServer>,
        stateless: bool,
        session: &Arc<AtomicU8>,
    ) -> Self {
        match context.meta.log_level() {
            Some(level) => Self::Request(log_level_from_mcp(level)),
            None if stateless => Self::Off,
            None => Self::Session(Arc::clone(session)),
        }
    }

    fn admits(&self, level: LogLevel) -> bool {
        match self {
            Self::Session(floor) => level as u8 >= floor.load(Ordering::Relaxed),
            Self::Request(floor) => level >= *floor,
            Self::Off => false,
        }
    }
}

/// What one call's progress function needs.
pub(super) struct CallEvents {
    notifier: Notifier,
    token: Option<ProgressToken>,
    log_floor: LogFloor,
    /// Whether anything was queued for the client, which the result then waits for.
    queued: AtomicBool,
}

impl Notifier {
    pub(super) fn start(peer: Peer<RoleServer>) -> Self {
        let (events, mut queue) = mpsc::unbounded_channel::<Forward>();
        tokio::spawn(async move {
            let mut connected = true;
            while let Some(event) = queue.recv().await {
                // After a failed send the client is gone: later events are dropped, and
                // flushes still answer.
                connected &= match event {
                    Forward::Progress(param) => {
                        connected && peer.notify_progress(param).await.is_ok()
                    }
                    Forward::Log(param) => {
                        connected && peer.notify_logging_message(param).await.is_ok()
                    }
                    Forward::Flush(done) => {
                        let _ = done.send(());
                        true
                    }
                };
            }
        });
        Self { events }
    }

    /// One call's progress function: progress reports become progress notifications when
    /// the client gave a token; log messages at or above the session's level become
    /// `notifications/message`; streamed chunks have no MCP counterpart and stay local.
    pub(super) fn for_call(
        &self,
        token: Option<ProgressToken>,
        log_floor: LogFloor,
    ) -> (
        Arc<CallEvents>,
        impl Fn(&str, ProgressEvent) + Send + Sync + 'static,
    ) {
        let call = Arc::new(CallEvents {
            notifier: self.clone(),
            token,
            log_floor,
            queued: AtomicBool::new(false),
        });
        let events = Arc::clone(&call);
        let callback = move |tool: &str, event: ProgressEvent| {
            let forward = match event {
                ProgressEvent::Progress {
                    progress,
                    total,
                    message,
                } => {
                    let Some(token) = &events.token else { return };
                    let mut param = ProgressNotificationParam::new(token.clone(), progress);
                    param.total = total;
                    param.message = message;
                    Forward::Progress(param)
                }
                ProgressEvent::Log {
                    level,
                    logger,
                    data,
                } => {
                    if !events.log_floor.admits(level) {
                        return;
                    }
                    let mut param =
                        LoggingMessageNotificationParam::new(log_level_to_mcp(level), data);
                    param.logger = Some(logger.unwrap_or_else(|| tool.to_owned()));
                    Forward::Log(param)
                }
                _ => return,
            };
            events.queued.store(true, Ordering::Relaxed);
            let _ = events.notifier.events.send(forward);
        };
        (call, callback)
    }
}

impl CallEvents {
    /// Waits until every notification this call queued is sent, so that they reach the
    /// client before the result.
    pub(super) async fn flush(&self) {
        if !self.queued.load(Ordering::Relaxed) {
            return;
        }
        let (done, sent) = oneshot::channel();
        if self.notifier.events.send(Forward::Flush(done)).is_ok() {
            let _ = sent.await;
        }
    }
}

fn log_level_to_mcp(level: LogLevel) -> LoggingLevel {
    match level {
        LogLevel::Debug => LoggingLevel::Debug,
        LogLevel::Info => LoggingLevel::Info,
        LogLevel::Notice => LoggingLevel::Notice,
        LogLevel::Warning => LoggingLevel::Warning,
        LogLevel::Error => LoggingLevel::Error,
        LogLevel::Critical => LoggingLevel::Critical,
        LogLevel::Alert => LoggingLevel::Alert,
        LogLevel::Emergency => LoggingLevel::Emergency,
    }
}

pub(super) fn log_level_from_mcp(level: LoggingLevel) -> LogLevel {
    match level {
        LoggingLevel::Debug => LogLevel::Debug,
        LoggingLevel::Info => LogLevel::Info,
        LoggingLevel::Notice => LogLevel::Notice,
        LoggingLevel::Warning => LogLevel::Warning,
        LoggingLevel::Error => LogLevel::Error,
        LoggingLevel::Critical => LogLevel::Critical,
        LoggingLevel::Alert => LogLevel::Alert,
        LoggingLevel::Emergency => LogLevel::Emergency,
    }
}
