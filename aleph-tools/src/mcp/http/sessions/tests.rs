//! The ledger's caps, sleep and wake, tried on their own.

use super::*;
use rmcp::model::ServerJsonRpcMessage;

fn limits(max_sessions: usize, max_per_identity: usize) -> SessionLimits {
    SessionLimits {
        idle_timeout: Duration::from_secs(10),
        max_sessions,
        max_per_identity,
    }
}

#[test]
fn caps_count_sessions_and_places_held() {
    let ledger = Ledger::new(limits(3, 2), None);
    let ann: Arc<str> = Arc::from("ann");
    let first = ledger.reserve(Some(Arc::clone(&ann))).unwrap();
    let id: SessionId = Arc::from("s1");
    ledger.opened(&id);
    ledger.initialized(&id, Some(Arc::clone(&ann)), None);
    drop(first);
    let _second = ledger.reserve(Some(Arc::clone(&ann))).unwrap();
    assert!(matches!(
        ledger.reserve(Some(Arc::clone(&ann))),
        Err(Full::Identity { limit: 2, .. })
    ));
    let _third = ledger.reserve(Some(Arc::from("bob"))).unwrap();
    assert!(matches!(
        ledger.reserve(None),
        Err(Full::Server { limit: 3 })
    ));
    ledger.closed(&id);
    assert!(ledger.reserve(Some(ann)).is_ok());
}

#[tokio::test]
async fn idle_sessions_sleep_then_end_and_busy_ones_do_not() {
    let ledger = Ledger::new(limits(10, 10), None);
    let (idle, used): (SessionId, SessionId) = (Arc::from("idle"), Arc::from("used"));
    for id in [&idle, &used] {
        ledger.opened(id);
        ledger.initialized(id, None, Some(InitializeRequestParams::default()));
    }
    let stream = ledger.busy(&used);
    let later = Instant::now() + Duration::from_secs(6);
    assert_eq!(ledger.due(later), [(idle.clone(), Due::Sleep)]);
    assert!(ledger.carry_out(&idle, Due::Sleep, later));
    assert!(ledger.due(later).is_empty(), "falling asleep");
    ledger.closed(&idle);
    assert_eq!(ledger.count(), SessionCount { held: 2, awake: 1 });
    assert!(ledger.to_wake(&idle).await.is_some());
    assert!(ledger.waking(&idle));
    ledger.woke(&idle);
    let much_later = Instant::now() + Duration::from_secs(11);
    assert_eq!(ledger.due(much_later), [(idle.clone(), Due::End)]);
    ledger.touch(&idle);
    assert!(
        !ledger.carry_out(&idle, Due::End, Instant::now()),
        "used since it was found"
    );
    assert!(ledger.carry_out(&idle, Due::End, much_later));
    assert_eq!(ledger.count(), SessionCount { held: 1, awake: 1 });
    assert!(ledger.to_wake(&idle).await.is_none(), "ended");
    drop(stream);
    assert!(ledger.due(Instant::now()).is_empty(), "just used");
}

#[test]
fn a_session_with_nothing_to_resume_sleeps_sooner() {
    let ledger = Ledger::new(
        SessionLimits {
            idle_timeout: Duration::from_mins(5),
            max_sessions: 10,
            max_per_identity: 10,
        },
        None,
    );
    let ids: [SessionId; 3] = [Arc::from("answered"), Arc::from("bare"), Arc::from("cut")];
    let [answered, bare, cut] = ids.clone();
    for id in &ids {
        ledger.opened(id);
        ledger.initialized(id, None, Some(InitializeRequestParams::default()));
    }
    // A stream that ran to its end handed on every event it carried.
    let mut stream = ledger.busy(&answered);
    stream.used();
    stream.ended();
    drop(stream);
    // One cut short left events that rmcp keeps for a client that resumes the stream.
    let mut stream = ledger.busy(&cut);
    stream.used();
    drop(stream);
    // One that carried nothing left nothing.
    drop(ledger.busy(&bare));
    let due_at = |at: Instant| {
        let mut due = ledger.due(at);
        due.sort_by(|one, other| one.0.cmp(&other.0));
        due
    };
    assert!(ledger.due(Instant::now()).is_empty(), "just used");
    let soon = Instant::now() + QUIET + Duration::from_millis(100);
    assert_eq!(
        due_at(soon),
        [(answered.clone(), Due::Sleep), (bare.clone(), Due::Sleep)]
    );
    let later = Instant::now() + KEEP_AWAKE + Duration::from_millis(100);
    assert_eq!(
        due_at(later),
        [
            (answered, Due::Sleep),
            (bare, Due::Sleep),
            (cut, Due::Sleep)
        ]
    );
}

/// What `listening`'s inbox holds now.
fn mail(listening: &Listening) -> Mail {
    listening
        .inbox()
        .look(&std::task::Context::from_waker(std::task::Waker::noop()))
}

#[test]
fn get_streams_hear_of_changes_and_of_their_sessions_waking_and_ending() {
    let ledger = Ledger::new(limits(10, 10), None);
    let id: SessionId = Arc::from("listened");
    assert!(ledger.listen(&id).is_none(), "unknown");
    ledger.opened(&id);
    ledger.initialized(&id, None, Some(InitializeRequestParams::default()));
    let (listening, service) = ledger.listen(&id).unwrap();
    assert_eq!(ledger.service(&id, Some(service)), Service::Same);
    assert!(matches!(mail(&listening), Mail::Nothing { woke: false }));

    // A `GET` stream does not keep its session awake, nor does telling it of a change.
    let later = Instant::now() + QUIET + Duration::from_millis(100);
    assert_eq!(ledger.due(later), [(id.clone(), Due::Sleep)]);
    assert!(ledger.carry_out(&id, Due::Sleep, later));
    assert!(ledger.closed(&id));
    assert_eq!(ledger.service(&id, Some(service)), Service::Asleep);
    let notice = Notice::new(
        "tools",
        ServerJsonRpcMessage::notification(
            rmcp::model::ServerNotification::ToolListChangedNotification(
                rmcp::model::ToolListChangedNotification::default(),
            ),
        ),
    );
    ledger.tell_listeners(&notice, |_| true);
    ledger.tell_listeners(&notice, |_| true);
    assert!(matches!(mail(&listening), Mail::Notice(_)));
    assert!(
        matches!(mail(&listening), Mail::Nothing { woke: false }),
        "the same notice waiting is not put in twice"
    );
    ledger.tell_listeners(&notice, |_| false);
    assert!(
        matches!(mail(&listening), Mail::Nothing { .. }),
        "not wanted"
    );
    assert_eq!(ledger.count(), SessionCount { held: 1, awake: 0 });

    // Waking: joined only once the handshake is given.
    ledger.woke(&id);
    assert_eq!(
        ledger.service(&id, None),
        Service::Asleep,
        "not waking: stays asleep"
    );
    assert!(ledger.waking(&id));
    assert_eq!(ledger.service(&id, None), Service::Asleep);
    assert!(matches!(mail(&listening), Mail::Nothing { woke: false }));
    ledger.woke(&id);
    assert!(matches!(mail(&listening), Mail::Nothing { woke: true }));
    assert_eq!(
        ledger.service(&id, Some(service)),
        Service::Woken(service + 1)
    );
    assert_eq!(ledger.service(&id, Some(service + 1)), Service::Same);

    // The session does not end while a `GET` stream is open; ended, it ends the stream.
    let much_later = Instant::now() + Duration::from_secs(11);
    assert_eq!(
        ledger.due(much_later),
        [(id.clone(), Due::Sleep)],
        "past the idle timeout, it sleeps but does not end"
    );
    ledger.forget(&id);
    assert!(matches!(mail(&listening), Mail::Ended));
    assert!(!ledger.waking(&id), "a session ended is not woken");
    assert_eq!(ledger.service(&id, None), Service::Gone);
}

#[test]
fn a_session_holds_a_few_get_streams_and_ends_the_oldest_past_them() {
    let ledger = Ledger::new(limits(10, 10), None);
    let id: SessionId = Arc::from("many");
    ledger.opened(&id);
    let streams: Vec<_> = (0..5).map(|_| ledger.listen(&id).unwrap().0).collect();
    ledger.cap_listening(&id);
    assert!(matches!(mail(&streams[0]), Mail::Ended));
    for stream in &streams[1..] {
        assert!(matches!(mail(stream), Mail::Nothing { .. }));
    }
    drop(streams);
    let later = Instant::now() + Duration::from_secs(11);
    assert_eq!(ledger.due(later), [(id, Due::End)], "no stream left open");
}

#[tokio::test]
async fn requests_wait_for_a_waking_session() {
    let ledger = Ledger::new(limits(10, 10), None);
    let id: SessionId = Arc::from("waking");
    ledger.opened(&id);
    ledger.initialized(&id, None, Some(InitializeRequestParams::default()));
    assert!(!ledger.touch(&id));
    let later = Instant::now() + QUIET + Duration::from_millis(100);
    assert!(ledger.carry_out(&id, Due::Sleep, later));
    ledger.closed(&id);
    assert!(ledger.waking(&id));
    assert!(ledger.touch(&id), "waking");
    assert!(ledger.busy(&id).waking());
    let waiting = tokio::spawn({
        let ledger = Arc::clone(&ledger);
        let id = id.clone();
        async move { ledger.until_woken(&id).await }
    });
    tokio::task::yield_now().await;
    assert!(!waiting.is_finished(), "the handshake is not given yet");
    ledger.woke(&id);
    tokio::time::timeout(Duration::from_secs(10), waiting)
        .await
        .expect("woken, the request goes on")
        .unwrap();
    assert!(!ledger.touch(&id));
}
