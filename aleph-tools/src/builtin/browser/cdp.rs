//! The Chrome `DevTools` Protocol over the browser's debugging pipe: JSON messages, each ended
//! by a NUL byte, commands answered by id, events routed to the session they belong to.
//!
//! The pipe (`--remote-debugging-pipe`) is the browser's standard input and output turned
//! into descriptors 3 and 4: unlike a debugging port, no other process on the machine can
//! reach it, and it needs no network, so the browser can run in a sandbox without one.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWrite, AsyncWriteExt as _};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

/// The largest message read from the browser; a larger one ends the connection (a
/// screenshot of the largest page allowed is far smaller).
const MAX_MESSAGE: usize = 96 * 1024 * 1024;

/// An event the browser sent: its method, parameters, and the session it came from (`None`
/// for the browser's own).
#[derive(Debug)]
pub(super) struct Event {
    pub(super) method: String,
    pub(super) params: Value,
    pub(super) session: Option<String>,
}

/// Why a command got no result.
#[derive(Debug, Clone, thiserror::Error)]
pub(super) enum CdpError {
    /// The browser answered with an error.
    #[error("{0}")]
    Protocol(String),
    /// The connection ended: the browser exited or was closed.
    #[error("the browser is gone ({0})")]
    Closed(String),
}

type Reply = oneshot::Sender<Result<Value, CdpError>>;

#[derive(Default)]
struct Routes {
    pending: HashMap<u64, Reply>,
    sessions: HashMap<String, mpsc::UnboundedSender<Event>>,
    /// Why the connection ended, once it has.
    ended: Option<String>,
}

/// One connection to a browser.
pub(super) struct Connection {
    outgoing: mpsc::UnboundedSender<Vec<u8>>,
    routes: Arc<Mutex<Routes>>,
    next_id: AtomicU64,
    closed: CancellationToken,
}

impl Connection {
    /// Speaks CDP over `reader` (the browser's descriptor 4) and `writer` (its descriptor 3);
    /// the browser's own events go to the receiver returned.
    pub(super) fn new(
        reader: impl AsyncRead + Unpin + Send + 'static,
        writer: impl AsyncWrite + Unpin + Send + 'static,
    ) -> (Arc<Self>, mpsc::UnboundedReceiver<Event>) {
        let (outgoing, queue) = mpsc::unbounded_channel();
        let (browser_events, events) = mpsc::unbounded_channel();
        let routes = Arc::new(Mutex::new(Routes::default()));
        let closed = CancellationToken::new();
        tokio::spawn(write_loop(writer, queue, closed.clone()));
        tokio::spawn(read_loop(
            reader,
            Arc::clone(&routes),
            browser_events,
            closed.clone(),
        ));
        let connection = Arc::new(Self {
            outgoing,
            routes,
            next_id: AtomicU64::new(1),
            closed,
        });
        (connection, events)
    }

    /// Sends `method` to the browser (`session` `None`) or to one of its pages, and waits for
    /// the answer.
    pub(super) async fn call(
        &self,
        session: Option<&str>,
        method: &str,
        params: Value,
    ) -> Result<Value, CdpError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut message = json!({ "id": id, "method": method, "params": params });
        if let Some(session) = session {
            message["sessionId"] = Value::from(session);
        }
        let (reply, answer) = oneshot::channel();
        {
            let mut routes = self.lock();
            if let Some(why) = &routes.ended {
                return Err(CdpError::Closed(why.clone()));
            }
            routes.pending.insert(id, reply);
        }
        // Given up (a time limit, a cancelled call): the entry goes with it.
        let forget = Forget {
            routes: &self.routes,
            id,
        };
        let mut bytes = serde_json::to_vec(&message).unwrap_or_default();
        bytes.push(0);
        if self.outgoing.send(bytes).is_err() {
            return Err(CdpError::Closed("its pipe is closed".to_owned()));
        }
        let result = answer
            .await
            .unwrap_or_else(|_| Err(CdpError::Closed("the connection ended".to_owned())));
        drop(forget);
        result
    }

    /// Routes the events of `session` (a page attached to) to the receiver returned.
    pub(super) fn subscribe(&self, session: &str) -> mpsc::UnboundedReceiver<Event> {
        let (sender, receiver) = mpsc::unbounded_channel();
        self.lock().sessions.insert(session.to_owned(), sender);
        receiver
    }

    /// Stops routing the events of `session`.
    pub(super) fn unsubscribe(&self, session: &str) {
        self.lock().sessions.remove(session);
    }

    /// Whether the connection has ended.
    pub(super) fn is_closed(&self) -> bool {
        self.closed.is_cancelled()
    }

    /// Resolves when the connection ends.
    #[cfg(test)]
    pub(super) async fn closed(&self) {
        self.closed.cancelled().await;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Routes> {
        self.routes.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.closed.cancel();
    }
}

/// Removes a command's entry when its caller stops waiting.
struct Forget<'a> {
    routes: &'a Mutex<Routes>,
    id: u64,
}

impl Drop for Forget<'_> {
    fn drop(&mut self) {
        self.routes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pending
            .remove(&self.id);
    }
}

async fn write_loop(
    mut writer: impl AsyncWrite + Unpin,
    mut queue: mpsc::UnboundedReceiver<Vec<u8>>,
    closed: CancellationToken,
) {
    loop {
        let message = tokio::select! {
            () = closed.cancelled() => return,
            message = queue.recv() => message,
        };
        let Some(message) = message else { return };
        if writer.write_all(&message).await.is_err() || writer.flush().await.is_err() {
            closed.cancel();
            return;
        }
    }
}

async fn read_loop(
    mut reader: impl AsyncRead + Unpin,
    routes: Arc<Mutex<Routes>>,
    browser_events: mpsc::UnboundedSender<Event>,
    closed: CancellationToken,
) {
    let mut buffer: Vec<u8> = Vec::with_capacity(64 * 1024);
    let mut chunk = vec![0_u8; 64 * 1024];
    let mut scanned = 0;
    let why = loop {
        if let Some(end) = buffer[scanned..].iter().position(|&byte| byte == 0) {
            let end = scanned + end;
            dispatch(&buffer[..end], &routes, &browser_events);
            buffer.drain(..=end);
            scanned = 0;
            continue;
        }
        scanned = buffer.len();
        if buffer.len() > MAX_MESSAGE {
            break format!("it sent a message over {} MiB", MAX_MESSAGE >> 20);
        }
        let read = tokio::select! {
            () = closed.cancelled() => break "it was closed".to_owned(),
            read = reader.read(&mut chunk) => read,
        };
        match read {
            Ok(0) => break "it exited".to_owned(),
            Ok(count) => buffer.extend_from_slice(&chunk[..count]),
            Err(error) => break format!("its pipe failed: {error}"),
        }
    };
    closed.cancel();
    let mut routes = routes.lock().unwrap_or_else(PoisonError::into_inner);
    routes.ended = Some(why.clone());
    for (_, reply) in routes.pending.drain() {
        let _ = reply.send(Err(CdpError::Closed(why.clone())));
    }
    routes.sessions.clear();
}

/// Hands one message to whoever waits for it: a command's caller, or a session's events.
fn dispatch(bytes: &[u8], routes: &Mutex<Routes>, browser_events: &mpsc::UnboundedSender<Event>) {
    let Ok(Value::Object(mut message)) = serde_json::from_slice::<Value>(bytes) else {
        tracing::debug!("the browser sent a message that is not a JSON object");
        return;
    };
    let mut routes = routes.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(id) = message.get("id").and_then(Value::as_u64) {
        let Some(reply) = routes.pending.remove(&id) else {
            return;
        };
        let result = match message.remove("error") {
            Some(error) => Err(CdpError::Protocol(
                error
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("the browser refused the command")
                    .to_owned(),
            )),
            None => Ok(message.remove("result").unwrap_or(Value::Null)),
        };
        let _ = reply.send(result);
        return;
    }
    let Some(Value::String(method)) = message.remove("method") else {
        return;
    };
    let session = match message.remove("sessionId") {
        Some(Value::String(session)) => Some(session),
        _ => None,
    };
    let event = Event {
        method,
        params: message.remove("params").unwrap_or(Value::Null),
        session,
    };
    match &event.session {
        Some(session) => {
            if let Some(events) = routes.sessions.get(session) {
                let _ = events.send(event);
            }
        }
        None => {
            let _ = browser_events.send(event);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn commands_are_answered_by_id_and_events_reach_their_session() {
        let (ours, theirs) = tokio::io::duplex(1024);
        let (read, write) = tokio::io::split(ours);
        let (connection, mut browser_events) = Connection::new(read, write);
        let (mut their_read, mut their_write) = tokio::io::split(theirs);
        let mut page = connection.subscribe("S1");
        let asking = {
            let connection = Arc::clone(&connection);
            tokio::spawn(async move {
                connection
                    .call(Some("S1"), "Page.navigate", json!({"url": "x"}))
                    .await
            })
        };
        let mut asked = Vec::new();
        while !asked.ends_with(&[0]) {
            let mut byte = [0_u8; 1];
            their_read.read_exact(&mut byte).await.unwrap();
            asked.push(byte[0]);
        }
        let asked: Value = serde_json::from_slice(&asked[..asked.len() - 1]).unwrap();
        assert_eq!(asked["method"], "Page.navigate");
        assert_eq!(asked["sessionId"], "S1");
        let id = asked["id"].as_u64().unwrap();
        let answer = format!(
            "{{\"method\":\"Page.loadEventFired\",\"params\":{{}},\"sessionId\":\"S1\"}}\0\
             {{\"method\":\"Target.targetCreated\",\"params\":{{}}}}\0\
             {{\"id\":{id},\"result\":{{\"frameId\":\"F\"}}}}\0"
        );
        their_write.write_all(answer.as_bytes()).await.unwrap();
        assert_eq!(asking.await.unwrap().unwrap()["frameId"], "F");
        assert_eq!(page.recv().await.unwrap().method, "Page.loadEventFired");
        assert_eq!(
            browser_events.recv().await.unwrap().method,
            "Target.targetCreated"
        );
        // An error answer, then the browser going away.
        let failing = {
            let connection = Arc::clone(&connection);
            tokio::spawn(async move { connection.call(None, "Nope.nothing", json!({})).await })
        };
        let mut asked = Vec::new();
        while !asked.ends_with(&[0]) {
            let mut byte = [0_u8; 1];
            their_read.read_exact(&mut byte).await.unwrap();
            asked.push(byte[0]);
        }
        let asked: Value = serde_json::from_slice(&asked[..asked.len() - 1]).unwrap();
        let id = asked["id"].as_u64().unwrap();
        their_write
            .write_all(
                format!(
                    "{{\"id\":{id},\"error\":{{\"message\":\"'Nope.nothing' wasn't found\"}}}}\0"
                )
                .as_bytes(),
            )
            .await
            .unwrap();
        let error = failing.await.unwrap().unwrap_err();
        assert!(error.to_string().contains("wasn't found"), "{error}");
        drop((their_read, their_write));
        connection.closed().await;
        let after = connection.call(None, "Browser.getVersion", json!({})).await;
        assert!(matches!(after, Err(CdpError::Closed(_))), "{after:?}");
    }
}
