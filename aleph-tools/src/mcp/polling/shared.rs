//! Request streams shared between replicas through an [`EventLog`]: the replica answering
//! a request logs its events as it sends them ([`Writer`]), and any replica a client resumes
//! the stream on reads them back ([`read_log`]), polling for the rest until the answer.
//!
//! The answering replica renews a lease on the stream while the request runs. A reader that
//! finds the lease run out and no answer ends the stream with an error answer to the request,
//! written to the log so that every reader sees the same end.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use rmcp::model::ServerJsonRpcMessage;
use rmcp::transport::streamable_http_server::session::ServerSseMessage;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::sync::mpsc::{self, Receiver};
use tokio::time::Instant;

use super::KEEP_ANSWERED;
use crate::mcp::store::{EventLog, LEASE, LogRead, LoggedEvent, StreamState, epoch_millis};

/// How often the answering replica renews its lease on a stream.
const RENEW_EVERY: Duration = Duration::from_secs(3);

/// How often a reader looks for new events.
const POLL_EVERY: Duration = Duration::from_millis(100);

/// The most events one read brings.
const READ_AT_MOST: usize = 256;

/// The most events a writer holds while the log cannot be reached.
const MOST_UNSENT: usize = 4096;

/// An event as the log keeps it.
#[derive(Serialize, Deserialize)]
struct Stored {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    message: Option<ServerJsonRpcMessage>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    retry_ms: Option<u64>,
}

fn to_logged(index: usize, event: &ServerSseMessage) -> Option<LoggedEvent> {
    let stored = Stored {
        message: event.message.as_deref().cloned(),
        retry_ms: event
            .retry
            .map(|retry| u64::try_from(retry.as_millis()).unwrap_or(u64::MAX)),
    };
    let text = serde_json::to_string(&stored).ok()?;
    Some(LoggedEvent::new(u64::try_from(index).ok()?, text))
}

fn from_logged(logged: &LoggedEvent, stream: &str) -> Option<ServerSseMessage> {
    let stored: Stored = serde_json::from_str(&logged.event).ok()?;
    let id = format!("{}/{stream}", logged.index);
    let retry = stored.retry_ms.map(Duration::from_millis);
    let mut event = match stored.message {
        Some(message) => ServerSseMessage::new(id, message),
        None => ServerSseMessage::priming(id, retry?),
    };
    event.retry = retry;
    Some(event)
}

/// Whether `event` answers the request (its last event).
fn is_answer(event: &ServerSseMessage) -> bool {
    matches!(
        event.message.as_deref(),
        Some(ServerJsonRpcMessage::Response(_) | ServerJsonRpcMessage::Error(_))
    )
}

/// Logs one request's events for the replicas a client may resume its stream on.
pub(super) struct Writer {
    log: Arc<dyn EventLog>,
    session: Arc<str>,
    stream: Arc<str>,
    state: StreamState,
    /// Events not yet in the log (it could not be reached), oldest first.
    unsent: Vec<LoggedEvent>,
    /// The number after the last event seen.
    next: u64,
    /// A reader ended the stream (this replica's lease ran out); nothing more is written.
    overtaken: bool,
    warned: bool,
}

impl Writer {
    pub(super) fn new(
        log: Arc<dyn EventLog>,
        session: Arc<str>,
        stream: Arc<str>,
        request_id: Value,
    ) -> Self {
        Self {
            log,
            session,
            stream,
            state: StreamState::new(request_id),
            unsent: Vec::new(),
            next: 0,
            overtaken: false,
            warned: false,
        }
    }

    /// Writes what is sent on the returned channel to the log, on a task of its own,
    /// renewing the lease meanwhile; ends the stream in the log when the channel closes.
    pub(super) fn spawn(mut self) -> mpsc::Sender<Vec<(usize, ServerSseMessage)>> {
        let (sender, mut batches) = mpsc::channel::<Vec<(usize, ServerSseMessage)>>(64);
        tokio::spawn(async move {
            let mut renew = tokio::time::interval(RENEW_EVERY);
            renew.tick().await;
            loop {
                tokio::select! {
                    batch = batches.recv() => match batch {
                        Some(batch) => self.append(&batch).await,
                        None => break,
                    },
                    _ = renew.tick() => self.renew().await,
                }
            }
            self.end().await;
        });
        sender
    }

    /// Logs `events` (numbered, as sent), with the lease renewed; the stream ends with its
    /// answer.
    async fn append(&mut self, events: &[(usize, ServerSseMessage)]) {
        if self.overtaken {
            return;
        }
        for (index, event) in events {
            self.state.ended |= is_answer(event);
            self.next = self
                .next
                .max(u64::try_from(*index).unwrap_or(u64::MAX).saturating_add(1));
            if let Some(logged) = to_logged(*index, event) {
                self.unsent.push(logged);
            }
        }
        if self.unsent.len() > MOST_UNSENT {
            let extra = self.unsent.len() - MOST_UNSENT;
            self.unsent.drain(..extra);
        }
        self.send().await;
    }

    /// Renews the lease (and sends what could not be sent before).
    async fn renew(&mut self) {
        if !self.overtaken && !self.state.ended {
            self.send().await;
        }
    }

    /// The request's events have all been sent. A stream that ends without its answer
    /// (cancelled, or its session or server ended first) ends with an error answer, as a
    /// stream whose process stopped does, so a client that resumes it elsewhere is told.
    /// Sent again a few times while the log cannot be reached.
    async fn end(&mut self) {
        // Nothing left when the answer is in the log already.
        if self.overtaken || (self.state.ended && self.unsent.is_empty()) {
            return;
        }
        if !self.state.ended {
            let index = self.next;
            self.unsent.push(LoggedEvent::new(
                index,
                unanswered(&self.state.request_id, ENDED_UNANSWERED),
            ));
            self.state.ended = true;
        }
        for attempt in 0..5 {
            if attempt > 0 {
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            if self.send().await {
                return;
            }
        }
    }

    /// Sends what is unsent with the state; whether the log took it (or refused it for
    /// good: a reader ended the stream).
    async fn send(&mut self) -> bool {
        self.state.lease_until_ms = epoch_millis(SystemTime::now() + LEASE);
        let sent = self
            .log
            .append(
                &self.session,
                &self.stream,
                &self.unsent,
                &self.state,
                KEEP_ANSWERED,
            )
            .await;
        match sent {
            Ok(true) => {
                self.unsent.clear();
                true
            }
            Ok(false) => {
                self.overtaken = true;
                tracing::warn!(
                    stream = %self.stream,
                    "another replica ended this request's stream when its lease ran out; \
                     its later events are not shared"
                );
                true
            }
            Err(error) => {
                if !self.warned {
                    self.warned = true;
                    tracing::warn!(
                        stream = %self.stream,
                        %error,
                        "the event log cannot be reached; a client resuming this stream \
                         elsewhere may miss events until it can"
                    );
                }
                false
            }
        }
    }
}

/// Why a stream ended without its answer, as the error answering it says.
const ENDED_UNANSWERED: &str = "this request ended on the server without an answer (it was \
    cancelled, or its session or the server ended); send it again if it is still needed";
const PROCESS_STOPPED: &str = "the server process answering this request stopped before it \
    answered; send the request again";

/// The error answer to `request_id` that ends its stream, as the log keeps it.
fn unanswered(request_id: &Value, why: &str) -> String {
    let message = json!({
        "jsonrpc": "2.0",
        "id": request_id,
        "error": { "code": -32603, "message": why },
    });
    json!({ "message": message }).to_string()
}

/// Where a reader is.
struct Reading {
    log: Arc<dyn EventLog>,
    session: Arc<str>,
    stream: Arc<str>,
    /// The number of the next event to send.
    from: u64,
    pending: VecDeque<ServerSseMessage>,
    /// The log has no events past those pending, and none will come.
    done: bool,
    deadline: Option<Instant>,
    retry: Duration,
}

impl Reading {
    /// Takes in what a read found; `true` when it found events.
    fn take(&mut self, read: &LogRead) -> bool {
        let found = read.events.len();
        for logged in &read.events {
            if logged.index < self.from {
                continue;
            }
            self.from = logged.index + 1;
            if let Some(event) = from_logged(logged, &self.stream) {
                self.pending.push_back(event);
            }
        }
        if read.state.ended && found < READ_AT_MOST {
            self.done = true;
        }
        found > 0
    }

    /// The hint that ends a stream cut at its deadline: the id of the last event sent, so
    /// the client resumes after it.
    fn hint(&self) -> ServerSseMessage {
        match self.from.checked_sub(1) {
            Some(last) => ServerSseMessage::priming(format!("{last}/{}", self.stream), self.retry),
            None => ServerSseMessage::retry(self.retry),
        }
    }

    /// Ends the stream with an error when its lease ran out without an answer.
    async fn end_if_lapsed(&self, state: &StreamState) {
        let now = epoch_millis(SystemTime::now());
        if state.ended || state.lease_until_ms >= now {
            return;
        }
        let answer = unanswered(&state.request_id, PROCESS_STOPPED);
        if let Err(error) = self
            .log
            .end_lapsed(&self.session, &self.stream, &answer, now, self.from)
            .await
        {
            tracing::warn!(stream = %self.stream, %error, "a lapsed stream could not be ended");
        }
    }
}

/// Reads the stream `stream` of `session` from event `from` on, beginning with `first` (a
/// read already made), until its answer, or until `close_after` with a hint to come back.
/// The reads run on a task of their own, which ends when the client goes.
pub(super) fn read_log(
    log: Arc<dyn EventLog>,
    (session, stream): (Arc<str>, Arc<str>),
    from: u64,
    first: LogRead,
    (close_after, retry): (Option<Duration>, Duration),
) -> Receiver<ServerSseMessage> {
    let mut reading = Reading {
        log,
        session,
        stream,
        from,
        pending: VecDeque::new(),
        done: false,
        deadline: close_after.map(|after| Instant::now() + after),
        retry,
    };
    let (sender, receiver) = mpsc::channel(16);
    tokio::spawn(async move {
        let mut look_at = (!reading.take(&first)).then_some(first.state);
        loop {
            while let Some(event) = reading.pending.pop_front() {
                if sender.send(event).await.is_err() {
                    return;
                }
            }
            if reading.done {
                return;
            }
            if let Some(state) = look_at.take() {
                reading.end_if_lapsed(&state).await;
            }
            let deadline = reading.deadline;
            let cut = async move {
                if let Some(deadline) = deadline {
                    tokio::time::sleep_until(deadline).await;
                } else {
                    std::future::pending::<()>().await;
                }
            };
            tokio::select! {
                () = tokio::time::sleep(POLL_EVERY) => {}
                () = cut => {
                    let _ = sender.send(reading.hint()).await;
                    return;
                }
                () = sender.closed() => return,
            }
            let read = reading
                .log
                .read(
                    &reading.session,
                    &reading.stream,
                    reading.from,
                    READ_AT_MOST,
                )
                .await;
            match read {
                Ok(Some(read)) => {
                    if !reading.take(&read) {
                        look_at = Some(read.state);
                    }
                }
                // Expired: nothing more to send.
                Ok(None) => return,
                // The client comes back later.
                Err(error) => {
                    tracing::warn!(
                        stream = %reading.stream,
                        %error,
                        "a resumed stream stops: the event log cannot be read"
                    );
                    return;
                }
            }
        }
    });
    receiver
}

/// How long a resumed stream the log does not keep yet is looked for: its process sends
/// each event to the client and to the log at once, and the client may be quicker.
const FIRST_READ_WITHIN: Duration = Duration::from_secs(1);

/// The first read of a stream a client resumes: `None` when the log does not keep it within
/// [`FIRST_READ_WITHIN`] (or cannot be read).
pub(super) async fn first_read(
    log: &dyn EventLog,
    session: &str,
    stream: &str,
    from: u64,
) -> Option<LogRead> {
    let give_up = Instant::now() + FIRST_READ_WITHIN;
    loop {
        match log.read(session, stream, from, READ_AT_MOST).await {
            Ok(Some(found)) => return Some(found),
            Ok(None) if Instant::now() < give_up => tokio::time::sleep(POLL_EVERY).await,
            Ok(None) => return None,
            Err(error) => {
                tracing::warn!(
                    %stream,
                    %error,
                    "a stream cannot be resumed: the event log cannot be read"
                );
                return None;
            }
        }
    }
}
