//! The Chrome `DevTools` Protocol over the browser's debugging pipe: JSON messages, each ended
//! by a NUL byte, commands answered by id, events routed to the session they belong to.
//!
//! The pipe (`--remote-debugging-pipe`) is the browser's standard input and output turned
//! into descriptors 3 and 4: unlike a debugging port, no other process on the machine can
//! reach it, and it needs no network, so the browser can run in a sandbox without one.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWrite, AsyncWriteExt as _};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

/// The largest message read from the browser (a screenshot of the largest page allowed is
/// far smaller). A larger one is skipped, and the command it answered fails; the connection
/// goes on.
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
    /// The page the command was sent to crashed (its renderer died); until it navigates, it
    /// takes nothing else.
    #[error("its page crashed")]
    Crashed,
    /// The page the command was sent to was closed before it answered.
    #[error("its page was closed")]
    Detached,
    /// The answer was larger than the connection reads.
    #[error("its answer was over {} MiB, more than is read", MAX_MESSAGE >> 20)]
    TooLarge,
}

type Reply = oneshot::Sender<Result<Value, CdpError>>;

#[derive(Default)]
struct Routes {
    /// The commands waiting for an answer, with the session each was sent to.
    pending: HashMap<u64, (Option<String>, Reply)>,
    sessions: HashMap<String, mpsc::UnboundedSender<Event>>,
    /// Why the connection ended, once it has.
    ended: Option<String>,
    /// The sessions whose renderer crashed and has not been replaced.
    crashed: HashSet<String>,
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
            // Only a navigation brings a crashed page back.
            if let Some(session) = session
                && method != "Page.navigate"
                && routes.crashed.contains(session)
            {
                return Err(CdpError::Crashed);
            }
            routes
                .pending
                .insert(id, (session.map(str::to_owned), reply));
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

    /// Whether the page `session` is attached to crashed and has not navigated since.
    pub(super) fn crashed(&self, session: &str) -> bool {
        self.lock().crashed.contains(session)
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
    // A message too large to keep is read to its end and dropped: `Some` while one is, with
    // the command it answers.
    let mut skipping: Option<Option<u64>> = None;
    let why = loop {
        if let Some(end) = buffer[scanned..].iter().position(|&byte| byte == 0) {
            let end = scanned + end;
            match skipping.take() {
                Some(answered) => refuse_too_large(answered, &routes),
                None => dispatch(&buffer[..end], &routes, &browser_events),
            }
            buffer.drain(..=end);
            scanned = 0;
            // A large message read is not kept room for.
            if buffer.capacity() > 1024 * 1024 && buffer.len() < 64 * 1024 {
                buffer.shrink_to(64 * 1024);
            }
            continue;
        }
        if skipping.is_some() {
            buffer.clear();
        } else if buffer.len() > MAX_MESSAGE {
            skipping = Some(answered_id(&buffer));
            buffer.clear();
        }
        scanned = buffer.len();
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
    for (_, (_, reply)) in routes.pending.drain() {
        let _ = reply.send(Err(CdpError::Closed(why.clone())));
    }
    routes.sessions.clear();
}

/// The id of the command a message answers, read from its start: the browser writes a
/// command's answer as `{"id":N,…`.
fn answered_id(start: &[u8]) -> Option<u64> {
    let rest = start.strip_prefix(b"{\"id\":")?;
    let digits = rest.iter().take_while(|byte| byte.is_ascii_digit()).count();
    std::str::from_utf8(&rest[..digits]).ok()?.parse().ok()
}

/// Fails the command whose answer was too large to read.
fn refuse_too_large(answered: Option<u64>, routes: &Mutex<Routes>) {
    tracing::warn!(
        ?answered,
        "the browser sent a message too large to read; skipped"
    );
    let Some(id) = answered else { return };
    let reply = routes
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .pending
        .remove(&id);
    if let Some((_, reply)) = reply {
        let _ = reply.send(Err(CdpError::TooLarge));
    }
}

/// Hands one message to whoever waits for it: a command's caller, or a session's events.
fn dispatch(bytes: &[u8], routes: &Mutex<Routes>, browser_events: &mpsc::UnboundedSender<Event>) {
    let Ok(Value::Object(mut message)) = serde_json::from_slice::<Value>(bytes) else {
        tracing::debug!("the browser sent a message that is not a JSON object");
        return;
    };
    let mut routes = routes.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(id) = message.get("id").and_then(Value::as_u64) {
        let Some((_, reply)) = routes.pending.remove(&id) else {
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
    // A page whose renderer died, or that was detached, answers nothing more.
    let gone = match (event.method.as_str(), &event.session) {
        ("Inspector.targetCrashed", Some(session)) => {
            routes.crashed.insert(session.clone());
            Some((session.clone(), CdpError::Crashed))
        }
        ("Inspector.targetReloadedAfterCrash", Some(session)) => {
            routes.crashed.remove(session);
            None
        }
        // Said by the session that was attached to it: the browser's, or a page's for its
        // frames and workers.
        ("Target.detachedFromTarget", _) => event.params["sessionId"].as_str().map(|session| {
            routes.crashed.remove(session);
            routes.sessions.remove(session);
            (session.to_owned(), CdpError::Detached)
        }),
        _ => None,
    };
    if let Some((session, error)) = gone {
        let failed: Vec<u64> = routes
            .pending
            .iter()
            .filter(|(_, (sent_to, _))| sent_to.as_deref() == Some(session.as_str()))
            .map(|(id, _)| *id)
            .collect();
        for id in failed {
            if let Some((_, reply)) = routes.pending.remove(&id) {
                let _ = reply.send(Err(error.clone()));
            }
        }
    }
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

    /// Reads one command the connection sent and gives its id.
    async fn read_id(from: &mut (impl AsyncRead + Unpin)) -> u64 {
        let mut asked = Vec::new();
        while !asked.ends_with(&[0]) {
            let mut byte = [0_u8; 1];
            from.read_exact(&mut byte).await.unwrap();
            asked.push(byte[0]);
        }
        let asked: Value = serde_json::from_slice(&asked[..asked.len() - 1]).unwrap();
        asked["id"].as_u64().unwrap()
    }

    #[tokio::test]
    async fn commands_are_answered_by_id_and_events_reach_their_session() {
        let (ours, theirs) = tokio::io::duplex(1 << 20);
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

        // An answer too large to read fails its command alone; the connection goes on.
        let huge = {
            let connection = Arc::clone(&connection);
            tokio::spawn(async move {
                connection
                    .call(None, "Accessibility.getFullAXTree", json!({}))
                    .await
            })
        };
        let id = read_id(&mut their_read).await;
        their_write
            .write_all(format!("{{\"id\":{id},\"result\":{{\"nodes\":\"").as_bytes())
            .await
            .unwrap();
        let filler = vec![b'x'; 1024 * 1024];
        for _ in 0..=(MAX_MESSAGE >> 20) {
            their_write.write_all(&filler).await.unwrap();
        }
        let next = {
            let connection = Arc::clone(&connection);
            tokio::spawn(
                async move { connection.call(None, "Browser.getVersion", json!({})).await },
            )
        };
        let next_id = read_id(&mut their_read).await;
        // The next answer comes in the same write as the end of the skipped one.
        their_write
            .write_all(
                format!("\"}}}}\0{{\"id\":{next_id},\"result\":{{\"product\":\"Chrome\"}}}}\0")
                    .as_bytes(),
            )
            .await
            .unwrap();
        let error = huge.await.unwrap().unwrap_err();
        assert!(matches!(error, CdpError::TooLarge), "{error:?}");
        assert_eq!(next.await.unwrap().unwrap()["product"], "Chrome");
        drop((their_read, their_write));
        connection.closed().await;
        let after = connection.call(None, "Browser.getVersion", json!({})).await;
        assert!(matches!(after, Err(CdpError::Closed(_))), "{after:?}");
    }

    #[tokio::test]
    async fn a_crashed_or_detached_page_fails_its_commands_and_a_crashed_one_takes_only_navigations()
     {
        let (ours, theirs) = tokio::io::duplex(1 << 16);
        let (read, write) = tokio::io::split(ours);
        let (connection, _browser_events) = Connection::new(read, write);
        let (mut their_read, mut their_write) = tokio::io::split(theirs);
        let ask = |session: &'static str, method: &'static str| {
            let connection = Arc::clone(&connection);
            tokio::spawn(async move { connection.call(Some(session), method, json!({})).await })
        };
        let waiting = ask("S1", "Runtime.evaluate");
        read_id(&mut their_read).await;
        their_write
            .write_all(
                b"{\"method\":\"Inspector.targetCrashed\",\"params\":{},\"sessionId\":\"S1\"}\0",
            )
            .await
            .unwrap();
        assert!(matches!(waiting.await.unwrap(), Err(CdpError::Crashed)));
        assert!(connection.crashed("S1"));
        let refused = ask("S1", "Accessibility.getFullAXTree").await.unwrap();
        assert!(matches!(refused, Err(CdpError::Crashed)), "{refused:?}");
        // A navigation goes through, and the page is whole again once the browser says so.
        let navigating = ask("S1", "Page.navigate");
        let id = read_id(&mut their_read).await;
        their_write
            .write_all(
                format!(
                    "{{\"method\":\"Inspector.targetReloadedAfterCrash\",\"params\":{{}},\"sessionId\":\"S1\"}}\0\
                     {{\"id\":{id},\"result\":{{}}}}\0"
                )
                .as_bytes(),
            )
            .await
            .unwrap();
        assert!(navigating.await.unwrap().is_ok());
        assert!(!connection.crashed("S1"));
        // A worker's session detached, as its page's session says.
        let mut worker = connection.subscribe("W1");
        let waiting = ask("W1", "Runtime.runIfWaitingForDebugger");
        read_id(&mut their_read).await;
        their_write
            .write_all(b"{\"method\":\"Target.detachedFromTarget\",\"params\":{\"sessionId\":\"W1\"},\"sessionId\":\"S1\"}\0")
            .await
            .unwrap();
        assert!(matches!(waiting.await.unwrap(), Err(CdpError::Detached)));
        assert!(worker.recv().await.is_none(), "its events end");
    }
}
